// Disruptions (disruptions.h): budgets, GPU-seconds at risk, notice requests, evictions' Events.
#include "extender/eviction/disruptions.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <set>

#include <fmt/format.h>

#include "core/json/json.h"

namespace phalanx::extender {

double Disruptions::GpuSecondsAtRisk(const PodRecord& pod, SystemTime now, double* notice, std::string* job) const {
  if (!pod.info.training_job.empty()) {
    const std::string key = pod.info.ns + "/" + pod.info.training_job;
    if (const TrainingJobInfo* tj = ledger_.FindTrainingJob(key)) {
      *notice = std::max(*notice, tj->notice_seconds_needed);
      *job = key;
      return tj->gpu_seconds_at_risk;
    }
  }
  auto start = pod.info.start_time ? pod.info.start_time : pod.info.creation_time;
  if (!start) return 0;
  const double elapsed = std::max(0.0, std::chrono::duration<double>(now - *start).count());
  return elapsed * std::popcount(pod.gpus);
}

void Disruptions::RequestNotice(const std::map<std::string, std::string>& jobs, const PodInfo& preemptor,
                                std::string_view reason) {
  const SystemTime now = clock_.WallNow();
  for (const auto& [key, request_id] : jobs) {
    const TrainingJobInfo* tj = ledger_.FindTrainingJob(key);
    if (!tj || !tj->preempt_request.empty()) continue;  // already asked
    json::Json req = {{"requestId", request_id},
                      {"deadline", FormatRfc3339(now + std::chrono::seconds(static_cast<int64_t>(tj->notice_seconds_needed) + 60))},
                      {"reason", reason.empty() ? fmt::format("preempted by {} (priority {})", preemptor.Key(), preemptor.priority)
                                                : std::string(reason)},
                      {"preemptor", preemptor.Key()}};
    TrainingJobInfo updated = *tj;
    updated.preempt_request = json::Dump(req);
    ledger_.UpsertTrainingJob(updated);
    w_.io.Submit([this, ns = tj->ns, name = tj->name, body = updated.preempt_request] {
      if (!w_.writer.RequestGracefulPreemption(ns, name, body).ok()) stats_.write_errors++;
    });
  }
}

std::string Disruptions::BudgetRefusal(const std::vector<const PodRecord*>& victims) const {
  if (!budgets_ || victims.empty()) return "";
  std::set<std::string> namespaces;
  for (const PodRecord* v : victims) namespaces.insert(v->info.ns);
  std::vector<PdbInfo> budgets;
  bool estimate = false;  // some budget has no status: count the pods we know
  for (const std::string& ns : namespaces) {
    for (PdbInfo& b : budgets_->BudgetsIn(ns)) {
      estimate = estimate || !b.has_status;
      budgets.push_back(std::move(b));
    }
  }
  if (budgets.empty()) return "";
  std::vector<const PodInfo*> victim_pods, namespace_pods;
  for (const PodRecord* v : victims) victim_pods.push_back(&v->info);
  if (estimate) {
    for (const auto& [uid, rec] : ledger_.pods()) {
      if (namespaces.contains(rec.info.ns)) namespace_pods.push_back(&rec.info);
    }
  }
  return CheckEvictions(budgets, victim_pods, namespace_pods);
}

void Disruptions::Event(const PodInfo& pod, std::string_view type, std::string_view reason, std::string_view note) {
  if (events_) events_->Record({.ns = pod.ns, .name = pod.name, .uid = pod.uid.str()}, type, reason, "Preempting", note);
}

void Disruptions::OnEvictionReport(const EvictionReport& report) {
  stats_.evictions += report.done.size();
  stats_.write_errors += static_cast<uint64_t>(report.write_errors);
  if (!events_) return;
  using Outcome = EvictionReport::Outcome;
  const bool ok = report.outcome == Outcome::kEvicted;
  const char* reason = report.outcome == Outcome::kEvicted  ? "Preempted"
                       : report.outcome == Outcome::kRefused ? "PreemptionRefused"
                                                             : "PreemptionForced";
  for (const PodRef& ref : report.outcome == Outcome::kRefused ? report.job.pods : report.done) {
    events_->Record({.ns = ref.ns, .name = ref.name, .uid = ref.uid}, ok ? "Normal" : "Warning", reason, "Preempting",
                    report.message);
  }
}

}  // namespace phalanx::extender
