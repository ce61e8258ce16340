#include <nlohmann/json.hpp>

#include "sim/report/writers.h"

namespace phalanx::sim {
namespace {

nlohmann::json Dist(const Distribution& d) {
  return {{"count", d.count}, {"mean", d.mean}, {"p50", d.p50}, {"p95", d.p95}, {"p99", d.p99}, {"max", d.max}};
}

}  // namespace

std::string RenderJson(const SimulationReport& r, bool include_timing) {
  nlohmann::json j;
  j["cluster"] = {{"name", r.cluster}, {"nodes", r.cluster_nodes}, {"gpus", r.cluster_gpus}};
  j["trace"] = {{"file", r.trace}, {"format", r.trace_format}, {"jobs", r.jobs}, {"notes", r.notes}};
  j["seed"] = r.seed;
  if (r.prices) j["prices"] = cost::EncodePriceTable(*r.prices);
  j["policies"] = nlohmann::json::array();
  for (const PolicyReport& p : r.policies) {
    nlohmann::json pj = {{"policy", p.policy},
                         {"jobs", p.jobs},
                         {"completed", p.completed},
                         {"neverFit", p.never_fit},
                         {"unfinished", p.unfinished},
                         {"makespanSeconds", p.makespan_s},
                         {"gpuUtilisation", p.gpu_utilisation},
                         {"gpuAllocation", p.gpu_allocation},
                         {"meanFragmentationRatio", p.mean_fragmentation_ratio},
                         {"meanFragmentedGpus", p.mean_fragmented_gpus},
                         {"partialGangs", p.partial_gangs},
                         {"idleHeldGpuHours", p.idle_held_gpu_hours},
                         {"deadlockedGangs", p.deadlocked_gangs},
                         {"preemptions", p.preemptions},
                         {"preemptionsPerJob", p.preemptions_per_job},
                         {"lostGpuHours", p.lost_gpu_hours},
                         {"idleWhileWaitingGpuHours", p.idle_while_waiting_gpu_hours},
                         {"backfilledGpuHours", p.backfilled_gpu_hours},
                         {"hintOverruns", p.hint_overruns},
                         {"gpuWeightedQueueingDelaySeconds", p.gpu_weighted_queueing_delay_s},
                         {"meanTopologyRatio", p.mean_topology_ratio},
                         {"multiNodeGangsStarted", p.multi_node_gangs_started},
                         {"multiNodeGangsInOneRack", p.multi_node_gangs_in_one_rack},
                         {"events", p.events},
                         {"mig",
                          {{"jobs", p.mig_jobs},
                           {"completed", p.mig_completed},
                           {"computeSlices", p.mig_compute_slices},
                           {"peakUsedSlices", p.mig_peak_used_slices},
                           {"allocation", p.mig_allocation}}}};
    if (include_timing) {
      pj["wallSeconds"] = p.wall_seconds;
      pj["eventsPerSecond"] = p.events_per_second;
    }
    if (p.priced) pj["cost"] = {{"currency", p.currency}, {"total", p.cost}, {"lost", p.lost_cost}};
    nlohmann::json tiers = nlohmann::json::array();
    for (const TierReport& t : p.tiers) {
      nlohmann::json tj = {{"tier", t.tier},
                           {"priority", t.priority},
                           {"jobs", t.jobs},
                           {"completed", t.completed},
                           {"queueingDelaySeconds", Dist(t.queueing_delay_s)},
                           {"jctSeconds", Dist(t.jct_s)},
                           {"preemptions", t.preemptions},
                           {"lostGpuHours", t.lost_gpu_hours},
                           {"gpuHours", t.gpu_hours},
                           {"gpuHoursByModel", t.gpu_hours_by_model},
                           {"lostGpuHoursByModel", t.lost_gpu_hours_by_model}};
      if (p.priced) {
        tj["cost"] = t.cost;
        tj["lostCost"] = t.lost_cost;
      }
      tiers.push_back(std::move(tj));
    }
    pj["tiers"] = tiers;
    if (!p.queues.empty()) {
      nlohmann::json queues = nlohmann::json::array();
      for (const QueueReport& q : p.queues) {
        queues.push_back({{"queue", q.name},
                          {"nominalGpus", q.nominal_gpus},
                          {"weight", q.weight},
                          {"jobs", q.jobs},
                          {"gpuHours", q.gpu_hours},
                          {"meanShare", q.mean_share},
                          {"hoursBelowMinDemandNominal", q.hours_below_entitlement},
                          {"gpuHoursBelowMinDemandNominal", q.gpu_hours_below_entitlement},
                          {"preemptions", q.preemptions},
                          {"reclaimPreemptions", q.reclaimed},
                          {"worstWindowDeviation", q.worst_window_deviation},
                          {"heldGpuHours", q.held_gpu_hours},
                          {"lostGpuHours", q.lost_gpu_hours}});
        if (p.priced) {
          queues.back()["cost"] = q.cost;
          queues.back()["lostCost"] = q.lost_cost;
        }
      }
      pj["queues"] = queues;
      const FairnessReport& f = p.fairness;
      pj["fairness"] = {{"jainIndex", f.jain_index},
                        {"contendedHours", f.contended_hours},
                        {"windows6h", f.windows},
                        {"windowsWithin10Percent", f.windows_within_10pct},
                        {"worstWindowDeviation", f.worst_window_deviation},
                        {"reclaimPreemptions", f.reclaim_preemptions},
                        {"reclaimsPerJob", f.reclaims_per_job}};
      nlohmann::json windows = nlohmann::json::array();
      for (const WindowReport& w : f.contended_windows) {
        nlohmann::json qs = nlohmann::json::array();
        for (const WindowReport::Queue& q : w.queues)
          qs.push_back({{"queue", q.name}, {"gpus", q.gpus}, {"fairShare", q.fair_share}, {"deviation", q.deviation}});
        windows.push_back({{"startHours", w.start_hours}, {"queues", qs}});
      }
      pj["fairness"]["contendedWindows"] = windows;
      nlohmann::json usage = nlohmann::json::array();
      for (const Sample& s : p.timeline) usage.push_back({s.time, s.queue_gpus, s.queue_demand});
      pj["queueTimeline"] = {{"columns", {"time", "gpusByQueue", "demandByQueue"}}, {"rows", usage}};
    }
    nlohmann::json tl = nlohmann::json::array();
    for (const Sample& s : p.timeline)
      tl.push_back({s.time, s.allocated_gpus, s.busy_gpus, s.queued_jobs, s.fragmented_gpus, s.fragmentation_ratio,
                    s.mig_used_slices});
    pj["timeline"] = {{"columns", {"time", "allocatedGpus", "busyGpus", "queuedJobs", "fragmentedGpus", "fragmentationRatio",
                                   "migUsedSlices"}},
                      {"rows", tl}};
    nlohmann::json nf = nlohmann::json::array();
    for (const NeverFit& n : p.never_fit_jobs) nf.push_back({{"job", n.job}, {"line", n.line}, {"reason", n.reason}});
    pj["neverFitJobs"] = nf;
    j["policies"].push_back(pj);
  }
  return j.dump(2);
}

}  // namespace phalanx::sim
