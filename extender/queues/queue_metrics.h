// Team queue gauges (docs/user-guide.md §7; the dashboard's queue panels and the
// QueueBelowNominalWithPendingWork alert), computed from the engine's queue ledger on scrape:
//
//   phalanx_queue_nominal_gpus{queue,pool}   nominal quota
//   phalanx_queue_usage_gpus{queue,pool}     GPUs its running gangs hold (or have planned)
//   phalanx_queue_borrowed_gpus{queue,pool}  usage beyond nominal
//   phalanx_queue_lent_gpus{queue,pool}      unused nominal others of its group use
//   phalanx_queue_pending_gangs{queue}       gangs waiting in the engine
//   phalanx_queue_pending_gpus{queue}        GPUs they ask for
//   phalanx_queue_fair_share{queue}          weighted dominant-resource share
//
// A queue or pool that vanishes keeps its series at 0 (metric children are never removed).
// Thread-safe.
#pragma once

#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/metrics/registry.h"
#include "extender/queues/queue_sync.h"

namespace phalanx::extender {

class Extender;

class QueueMetrics {
 public:
  explicit QueueMetrics(metrics::Registry& registry);
  void Update(const std::vector<QueueStatusInfo>& queues);
  void Refresh(const Extender& extender);

 private:
  std::mutex mu_;
  metrics::GaugeFamily *nominal_ = nullptr, *usage_ = nullptr, *borrowed_ = nullptr, *lent_ = nullptr;
  metrics::GaugeFamily *pending_gangs_ = nullptr, *pending_gpus_ = nullptr, *share_ = nullptr;
  std::set<std::pair<std::string, std::string>> seen_pools_;  // (queue, pool), guarded by mu_
  std::set<std::string> seen_queues_;                         // guarded by mu_
};

}  // namespace phalanx::extender
