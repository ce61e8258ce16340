// Cost accounting of a replay (docs/simulator.md "Cost"): GPU-hours held per tier, per GPU
// model and per queue, and, with a price table, what they and the lost (preempted) work cost.
#include <algorithm>

#include "sim/engine/simulator.h"

namespace phalanx::sim {

void Simulator::AccountHeld(JobId id, double until, std::map<std::string, double>& into) const {
  const JobRun& r = runs_[static_cast<size_t>(id)];
  const Job& j = job(id);
  for (size_t m = 0; m < r.pods.size(); ++m) {
    const PodUid& pod = r.pods[m];
    if (pod.empty() || until <= r.bound_at[m]) continue;
    double gpus = 0;
    std::string model;
    if (const placement::MigHolding* h = mig_.FindPod(pod)) {
      const placement::MigNode* node = mig_.Find(h->node);
      int slices = 0;
      for (int d : h->devices) slices += node->slices()[static_cast<size_t>(d)].compute_slices;
      gpus = slices / 7.0;  // its share of the parent GPU, as core/cost GpuEquivalents prices it
      if (auto idx = state_.FindNode(h->node)) model = state_.node(*idx).spec.pool;
    } else if (const placement::PodAllocation* a = state_.FindPod(pod)) {
      gpus = j.IsShare() ? j.milli / 1000.0 : j.gpus_per_replica;
      model = state_.node(a->node).spec.pool;
    }
    if (gpus > 0) into[model] += (until - r.bound_at[m]) * gpus;
  }
}

std::string Simulator::ModelOf(JobId id) const {
  for (const PodUid& pod : runs_[static_cast<size_t>(id)].pods) {
    if (pod.empty()) continue;
    if (const placement::MigHolding* h = mig_.FindPod(pod)) {
      if (auto idx = state_.FindNode(h->node)) return state_.node(*idx).spec.pool;
    } else if (const placement::PodAllocation* a = state_.FindPod(pod)) {
      return state_.node(a->node).spec.pool;
    }
  }
  return "";
}

void Simulator::FillCost(PolicyReport& rep, double end) const {
  const cost::PriceTable* prices = config_.prices ? &*config_.prices : nullptr;
  if (prices) {
    rep.priced = true;
    rep.currency = prices->currency;
  }
  for (size_t i = 0; i < runs_.size(); ++i) {
    const Job& j = workload_.jobs[i];
    const JobRun& r = runs_[i];
    if (r.phase == JobPhase::kNeverFits) continue;
    std::map<std::string, double> held = r.held_by_model;
    // Still bound at the end (running, or members waiting for siblings): held until then.
    if (r.phase == JobPhase::kRunning || r.phase == JobPhase::kQueued) AccountHeld(static_cast<JobId>(i), end, held);
    auto tier = std::find_if(rep.tiers.begin(), rep.tiers.end(), [&](const TierReport& t) { return t.priority == j.priority; });
    if (tier == rep.tiers.end()) continue;
    double job_cost = 0, job_lost_cost = 0, job_hours = 0;
    for (const auto& [model, seconds] : held) {
      tier->gpu_hours_by_model[model] += seconds / 3600;
      job_hours += seconds / 3600;
      if (prices) job_cost += seconds / 3600 * prices->Hourly(model, j.tier);
    }
    for (const auto& [model, seconds] : r.lost_by_model) {
      tier->lost_gpu_hours_by_model[model] += seconds / 3600;
      if (prices) job_lost_cost += seconds / 3600 * prices->Hourly(model, j.tier);
    }
    tier->gpu_hours += job_hours;
    tier->cost += job_cost;
    tier->lost_cost += job_lost_cost;
    rep.cost += job_cost;
    rep.lost_cost += job_lost_cost;
    const int q = QueueOf(static_cast<JobId>(i));
    if (q >= 0 && static_cast<size_t>(q) < rep.queues.size()) {
      QueueReport& qr = rep.queues[static_cast<size_t>(q)];
      qr.held_gpu_hours += job_hours;
      qr.cost += job_cost;
      qr.lost_gpu_hours += r.lost_gpu_seconds / 3600;
      qr.lost_cost += job_lost_cost;
    }
  }
}

}  // namespace phalanx::sim
