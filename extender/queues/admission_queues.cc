// Team queues in the extender (docs/user-guide.md §7): the GpuQueue objects, assembled by
// queue_sync.h, become the engine's queues; each gang is given its queue when it enters
// the engine (EngineRequestOf); filter and bind hold what the pass has not counted yet
// (ungated gangs, MIG pods) to the quota (QuotaRefusal, uncounted_).
#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <shared_mutex>

#include <fmt/format.h>

#include "extender/extender.h"

namespace phalanx::extender {

std::string Extender::QueueOf(const GangRecord& g) const {
  if (g.members.empty()) return "";
  const PodRecord* rec = ledger_.FindPod(*g.members.begin());
  return rec == nullptr ? "" : QueueOfPod(rec->info);
}

std::string Extender::QueueOfPod(const PodInfo& pod) const {
  if (auto it = pod.labels.find(kQueueLabel); it != pod.labels.end() && !it->second.empty()) return it->second;
  if (auto it = queues_.namespace_queue.find(pod.ns); it != queues_.namespace_queue.end()) return it->second;
  return "";
}

Status Extender::SetQueues(QueueAssignment queues) {
  std::lock_guard admission(admission_mu_);
  if (queues == queues_) return OkStatus();
  // engine_ and queues_ change under mu_ too: filter reads them holding only mu_ (extender.h).
  // Exclusively, to note the gangs let go below in uncounted_ (a rare event).
  std::unique_lock lock(mu_);
  PHX_RETURN_IF_ERROR(engine_.SetQueues(queues.config));
  queues_ = std::move(queues);
  queues_on_.store(engine_.queues().enabled());
  mig_version_seen_ = ~uint64_t{0};  // MIG pods are booked again (their namespace's queue may have changed)
  // Waiting gangs re-enter the engine at the next pass with their queue resolved anew (their
  // place is kept: the engine orders by first submission). A running gang whose queue
  // changed is let go and adopted again by the next pass, counted in its new queue.
  for (const auto& [key, members] : engine_waiting_) {
    (void)engine_.Remove(key);
    engine_queue_of_.erase(key);
  }
  engine_waiting_.clear();
  for (auto it = engine_running_.begin(); it != engine_running_.end();) {
    const GangRecord* g = ledger_.FindGang(*it);
    auto given = engine_queue_of_.find(*it);
    if (g != nullptr && given != engine_queue_of_.end() && given->second == QueueOf(*g)) {
      ++it;
      continue;
    }
    engine_.OnFinished(*it);
    engine_queue_of_.erase(*it);
    // Until the next pass adopts it again, filter's quota check counts it from here.
    if (g != nullptr && (g->plan || HoldsGpus(*g))) {
      RecordUncounted(*g, PoolOf(*g), g->plan ? static_cast<int>(g->plan->members.size())
                                              : static_cast<int>(g->members.size()));
    }
    it = engine_running_.erase(it);
  }
  release_epoch_seen_ = ~uint64_t{0};  // the next pass is a full one
  return OkStatus();
}

std::vector<QueueStatusInfo> Extender::QueueStatusesLocked() const {
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
    const GangRecord* g = ledger_.FindGang(key);
    it->second.pending_gangs++;
    it->second.pending += static_cast<scheduling::Milli>(members) * (g ? std::max(g->gpus_per_member, 1) : 1) *
                          scheduling::kMilliGpu;
  }
  for (auto& [name, s] : by_name) out.push_back(std::move(s));
  return out;
}

std::vector<QueueStatusInfo> Extender::QueueStatuses() const {
  std::lock_guard admission(admission_mu_);
  std::shared_lock lock(mu_);
  return QueueStatusesLocked();
}

std::string Extender::DescribeQueue(const GangRecord& g) const {
  const scheduling::QueueLedger& ledger = engine_.queues();
  if (!ledger.enabled()) return "";
  const std::string named = QueueOf(g);
  const std::string& queue = ledger.Resolve(named);
  std::string how = !named.empty() && named == queue ? "" : named.empty() ? " (the default queue)" : " (default: no queue \"" + named + "\")";
  for (const QueueStatusInfo& s : QueueStatusesLocked()) {
    if (s.name == queue) return fmt::format("; queue {}{}: {}", queue, how, UsageSummary(s));
  }
  return fmt::format("; queue {}{}", queue, how);
}

// --- the quota check for work the pass has not counted yet (filter, bind) -----------------

bool Extender::HoldsGpus(const GangRecord& g) const {
  for (const PodUid& uid : g.members) {
    const PodRecord* rec = ledger_.FindPod(uid);
    if (rec != nullptr && rec->holding != Holding::kNone) return true;
  }
  return false;
}

void Extender::PruneUncounted() {
  const scheduling::QueueLedger& counted = engine_.queues();
  std::erase_if(uncounted_, [&](const auto& entry) {
    if (counted.Tracks(entry.first)) return true;
    if (!entry.second.mig_pod.empty()) return ledger_.mig().FindPod(entry.second.mig_pod) == nullptr;
    const GangRecord* other = ledger_.FindGang(entry.first);
    return other == nullptr || (!other->plan && !HoldsGpus(*other));
  });
}

void Extender::RecordUncounted(const GangRecord& g, const std::string& pool, int members) {
  // Reads engine_ under mu_ held exclusively (the locking rule, extender.h).
  if (!engine_.queues().enabled()) return;
  PruneUncounted();  // keeps it to the gangs of one pass interval, whatever path admits them
  uncounted_[g.key] = UncountedUse{QueueOf(g), pool,
                                   static_cast<scheduling::Milli>(members) *
                                       std::clamp(g.gpus_per_member, 1, placement::kMaxGpusPerNode) *
                                       scheduling::kMilliGpu,
                                   g.priority};
}

std::string Extender::QuotaRefusal(const GangRecord& g, const std::string& pool, int members) {
  // mu_ is held exclusively: nothing changes engine_ or queues_ meanwhile (extender.h).
  const scheduling::QueueLedger& counted = engine_.queues();
  if (!counted.enabled()) {
    uncounted_.clear();
    return "";
  }
  PruneUncounted();
  if (!counted.Manages(pool)) return "";  // no queue has a quota there
  // Already counted (a running gang re-planning members it lost): not a second time.
  if ((counted.Tracks(g.key) || uncounted_.contains(g.key)) && HoldsGpus(g)) return "";
  return QuotaRefusalOf(g.key, QueueOf(g), pool,
                        static_cast<scheduling::Milli>(members) *
                            std::clamp(g.gpus_per_member, 1, placement::kMaxGpusPerNode) * scheduling::kMilliGpu);
}

std::string Extender::QuotaRefusalOf(const GangKey& asking, const std::string& named, const std::string& pool,
                                     scheduling::Milli amount) {
  const scheduling::QueueLedger& counted = engine_.queues();
  const std::string& queue = counted.Resolve(named);
  // Gangs planned since the last pass in this pool by this queue or one it shares capacity
  // with change the answer. Its own queue's alone only add to what it asks (the rules judge
  // the usage a gang would leave, monotone in it): checked as such, no copy. Otherwise, or
  // to explain a refusal, they are counted on a copy (the engine is never changed from
  // here): only within one pass interval of another ungated admission (a copy costs about
  // 1 ms with 100 queues and 10,000 running gangs). The copy's queues point at `counted`'s
  // specs, which stay put while mu_ is held.
  scheduling::Milli own_uncounted = 0;
  bool others_uncounted = false;
  for (const auto& [key, use] : uncounted_) {
    if (use.pool != pool || key == asking) continue;
    const std::string& theirs = counted.Resolve(use.queue);
    if (theirs == queue) own_uncounted += use.amount;
    else others_uncounted = others_uncounted || counted.SameGroup(theirs, queue);
  }
  if (!others_uncounted &&
      counted.Check(queue, pool, amount + own_uncounted) != scheduling::QueueLedger::Fit::kNoRoom) {
    return "";
  }
  std::optional<scheduling::QueueLedger> with_uncounted;
  for (const auto& [key, use] : uncounted_) {
    if (use.pool != pool || key == asking) continue;
    const std::string& theirs = counted.Resolve(use.queue);
    if (theirs != queue && !counted.SameGroup(theirs, queue)) continue;
    if (!with_uncounted) with_uncounted.emplace(counted);
    with_uncounted->Add(key, theirs, use.pool, use.amount, use.priority, 0);
  }
  const scheduling::QueueLedger& ledger = with_uncounted ? *with_uncounted : counted;
  if (ledger.Check(queue, pool, amount) != scheduling::QueueLedger::Fit::kNoRoom) return "";
  return ledger.Explain(queue, pool, amount);
}

}  // namespace phalanx::extender
