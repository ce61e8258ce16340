// Team queues in the admission pass (docs/user-guide.md §7): the GpuQueue objects, assembled
// by queue_sync.h, become the engine's queues (QueueQuotas::Set); each gang is given its queue
// when it enters the engine (EngineRequestOf); a change re-queues the waiting gangs and lets go
// the running ones whose queue changed; each queue's status as the engine counts it.
#include <algorithm>
#include <map>
#include <mutex>
#include <shared_mutex>

#include <fmt/format.h>

#include "extender/admission/admission_pass.h"
#include "extender/extender.h"

namespace phalanx::extender {

Status Extender::SetQueues(QueueAssignment queues) {
  std::lock_guard admission(admission_mu_);
  if (queues == quotas_.assignment()) return OkStatus();
  // engine_ and the queues change under mu_ too: filter reads them holding only mu_ (extender.h).
  // Exclusively, to note the gangs let go as uncounted (a rare event).
  std::unique_lock lock(mu_);
  PHX_RETURN_IF_ERROR(quotas_.Set(std::move(queues)));
  admission_.OnQueuesChanged();
  return OkStatus();
}

std::vector<QueueStatusInfo> Extender::QueueStatuses() const {
  std::lock_guard admission(admission_mu_);
  std::shared_lock lock(mu_);
  return admission_.QueueStatuses();
}

void AdmissionPass::OnQueuesChanged() {
  for (const auto& [key, members] : engine_waiting_) {
    (void)engine_.Remove(key);
    engine_queue_of_.erase(key);
  }
  engine_waiting_.clear();
  for (auto it = engine_running_.begin(); it != engine_running_.end();) {
    const GangRecord* g = h_.ledger.FindGang(*it);
    auto given = engine_queue_of_.find(*it);
    if (g != nullptr && given != engine_queue_of_.end() && given->second == quotas_.QueueOf(*g)) {
      ++it;
      continue;
    }
    engine_.OnFinished(*it);  // not an end: re-adopted under its new queue
    engine_queue_of_.erase(*it);
    engine_ran_.erase(*it);
    // Until the next pass adopts it again, filter's quota check counts it from here.
    if (g != nullptr && (g->plan || quotas_.HoldsGpus(*g))) {
      quotas_.RecordUncounted(*g, PoolOf(*g), g->plan ? static_cast<int>(g->plan->members.size())
                                                      : static_cast<int>(g->members.size()));
    }
    it = engine_running_.erase(it);
  }
  release_epoch_seen_ = ~uint64_t{0};  // the next pass is a full one
}

std::vector<QueueStatusInfo> AdmissionPass::QueueStatuses() const {
  std::vector<QueueStatusInfo> out;
  const scheduling::QueueLedger& ledger = engine_.queues();
  if (!ledger.enabled()) return out;
  std::map<std::string, QueueStatusInfo> by_name;
  for (const scheduling::QueueSpec& q : ledger.config().queues) {
    QueueStatusInfo& s = by_name[q.name];
    s.name = q.name;
    for (const scheduling::PoolQuota& pq : q.quotas) s.pools.push_back(ledger.UsageOf(q.name, pq.pool));
    for (const std::string& pool : ledger.Pools()) {  // pools it uses without a quota there
      if (q.QuotaOf(pool) == nullptr && ledger.Usage(q.name, pool) > 0) s.pools.push_back(ledger.UsageOf(q.name, pool));
    }
    s.fair_share = ledger.Share(q.name);
  }
  for (const auto& [key, members] : engine_waiting_) {
    auto given = engine_queue_of_.find(key);
    const std::string& queue = ledger.Resolve(given == engine_queue_of_.end() ? "" : given->second);
    auto it = by_name.find(queue);
    if (it == by_name.end()) continue;
    const GangRecord* g = h_.ledger.FindGang(key);
    it->second.pending_gangs++;
    it->second.pending += static_cast<scheduling::Milli>(members) * (g ? std::max(g->gpus_per_member, 1) : 1) *
                          scheduling::kMilliGpu;
  }
  for (auto& [name, s] : by_name) out.push_back(std::move(s));
  return out;
}

std::string AdmissionPass::DescribeQueue(const GangRecord& g) const {
  const scheduling::QueueLedger& ledger = engine_.queues();
  if (!ledger.enabled()) return "";
  const std::string named = quotas_.QueueOf(g);
  const std::string& queue = ledger.Resolve(named);
  std::string how = !named.empty() && named == queue ? "" : named.empty() ? " (the default queue)" : " (default: no queue \"" + named + "\")";
  for (const QueueStatusInfo& s : QueueStatuses()) {
    if (s.name == queue) return fmt::format("; queue {}{}: {}", queue, how, UsageSummary(s));
  }
  return fmt::format("; queue {}{}", queue, how);
}

}  // namespace phalanx::extender
