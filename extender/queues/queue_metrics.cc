#include "extender/queues/queue_metrics.h"

#include <map>

#include "extender/extender.h"

namespace phalanx::extender {
namespace {

metrics::GaugeFamily* Family(metrics::Registry& registry, const char* name, const char* help,
                             std::vector<std::string> labels) {
  auto f = registry.AddGauge(name, help, std::move(labels));
  return f.ok() ? *f : nullptr;
}

void Set(metrics::GaugeFamily* family, const std::vector<std::string>& labels, double value) {
  if (!family) return;
  if (auto g = family->WithLabels(labels); g.ok()) (*g)->Set(value);
}

double Gpus(scheduling::Milli m) { return static_cast<double>(m) / scheduling::kMilliGpu; }

}  // namespace

QueueMetrics::QueueMetrics(metrics::Registry& registry)
    : nominal_(Family(registry, "phalanx_queue_nominal_gpus", "Nominal GPU quota of a team queue (GpuQueue) in a pool.",
                      {"queue", "pool"})),
      usage_(Family(registry, "phalanx_queue_usage_gpus", "GPUs a team queue's running gangs hold or have planned, per pool.",
                    {"queue", "pool"})),
      borrowed_(Family(registry, "phalanx_queue_borrowed_gpus", "GPUs a team queue uses beyond its nominal quota, per pool.",
                       {"queue", "pool"})),
      lent_(Family(registry, "phalanx_queue_lent_gpus",
                   "GPUs of a team queue's unused nominal quota that other queues of its cohort use, per pool.",
                   {"queue", "pool"})),
      pending_gangs_(Family(registry, "phalanx_queue_pending_gangs", "Gangs of a team queue waiting for admission.",
                            {"queue"})),
      pending_gpus_(Family(registry, "phalanx_queue_pending_gpus", "GPUs the waiting gangs of a team queue ask for.",
                           {"queue"})),
      share_(Family(registry, "phalanx_queue_fair_share",
                    "Weighted dominant-resource share of a team queue (usage over capacity, divided by weight).",
                    {"queue"})) {}

void QueueMetrics::Update(const std::vector<QueueStatusInfo>& queues) {
  std::lock_guard lock(mu_);
  std::set<std::pair<std::string, std::string>> pools_now;
  std::set<std::string> queues_now;
  for (const QueueStatusInfo& q : queues) {
    queues_now.insert(q.name);
    Set(pending_gangs_, {q.name}, q.pending_gangs);
    Set(pending_gpus_, {q.name}, Gpus(q.pending));
    Set(share_, {q.name}, q.fair_share);
    for (const scheduling::QueuePoolUsage& p : q.pools) {
      pools_now.emplace(q.name, p.pool);
      Set(nominal_, {q.name, p.pool}, Gpus(p.nominal));
      Set(usage_, {q.name, p.pool}, Gpus(p.usage));
      Set(borrowed_, {q.name, p.pool}, Gpus(p.borrowed));
      Set(lent_, {q.name, p.pool}, Gpus(p.lent));
    }
  }
  for (const auto& key : seen_pools_) {
    if (pools_now.contains(key)) continue;
    for (metrics::GaugeFamily* f : {nominal_, usage_, borrowed_, lent_}) Set(f, {key.first, key.second}, 0);
  }
  for (const std::string& name : seen_queues_) {
    if (queues_now.contains(name)) continue;
    for (metrics::GaugeFamily* f : {pending_gangs_, pending_gpus_, share_}) Set(f, {name}, 0);
  }
  seen_pools_.insert(pools_now.begin(), pools_now.end());
  seen_queues_.insert(queues_now.begin(), queues_now.end());
}

void QueueMetrics::Refresh(const Extender& extender) { Update(extender.QueueStatuses()); }

}  // namespace phalanx::extender
