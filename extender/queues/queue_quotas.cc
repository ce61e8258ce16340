// Team-queue quota outside the engine (queue_quotas.h): the queue of a gang or pod, the team
// queues given to the engine, and the quota check for work the pass has not counted yet
// (gangs planned at filter; MIG pods are in mig/mig_queues.cc).
#include "extender/queues/queue_quotas.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

namespace phalanx::extender {

std::string QueueQuotas::QueueOf(const GangRecord& g) const {
  if (g.members.empty()) return "";
  const PodRecord* rec = ledger_.FindPod(*g.members.begin());
  return rec == nullptr ? "" : QueueOfPod(rec->info);
}

std::string QueueQuotas::QueueOfPod(const PodInfo& pod) const {
  if (auto it = pod.labels.find(kQueueLabel); it != pod.labels.end() && !it->second.empty()) return it->second;
  if (auto it = queues_.namespace_queue.find(pod.ns); it != queues_.namespace_queue.end()) return it->second;
  return "";
}

Status QueueQuotas::Set(QueueAssignment queues) {
  PHX_RETURN_IF_ERROR(engine_.SetQueues(queues.config));
  queues_ = std::move(queues);
  queues_on_.store(engine_.queues().enabled());
  mig_version_seen_ = ~uint64_t{0};  // MIG pods are booked again (their namespace's queue may have changed)
  return OkStatus();
}

// --- the quota check for work the pass has not counted yet (filter, bind) -----------------

bool QueueQuotas::HoldsGpus(const GangRecord& g) const {
  for (const PodUid& uid : g.members) {
    const PodRecord* rec = ledger_.FindPod(uid);
    if (rec != nullptr && rec->holding != Holding::kNone) return true;
  }
  return false;
}

void QueueQuotas::PruneUncounted() {
  const scheduling::QueueLedger& counted = engine_.queues();
  std::erase_if(uncounted_, [&](const auto& entry) {
    if (counted.Tracks(entry.first)) return true;
    if (!entry.second.mig_pod.empty()) return ledger_.mig().FindPod(entry.second.mig_pod) == nullptr;
    const GangRecord* other = ledger_.FindGang(entry.first);
    return other == nullptr || (!other->plan && !HoldsGpus(*other));
  });
}

void QueueQuotas::RecordUncounted(const GangRecord& g, const std::string& pool, int members) {
  // Reads engine_ under the ledger lock held exclusively (the locking rule, extender.h).
  if (!engine_.queues().enabled()) return;
  PruneUncounted();  // keeps it to the gangs of one pass interval, whatever path admits them
  uncounted_[g.key] = UncountedUse{QueueOf(g), pool,
                                   static_cast<scheduling::Milli>(members) *
                                       std::clamp(g.gpus_per_member, 1, placement::kMaxGpusPerNode) *
                                       scheduling::kMilliGpu,
                                   g.priority};
}

std::string QueueQuotas::QuotaRefusal(const GangRecord& g, const std::string& pool, int members) {
  // The ledger lock is held exclusively: nothing changes engine_ or queues_ meanwhile (extender.h).
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

std::string QueueQuotas::QuotaRefusalOf(const GangKey& asking, const std::string& named, const std::string& pool,
                                     scheduling::Milli amount) {
  const scheduling::QueueLedger& counted = engine_.queues();
  const std::string& queue = counted.Resolve(named);
  // Gangs planned since the last pass in this pool by this queue or one it shares capacity
  // with change the answer. Its own queue's alone only add to what it asks (the rules judge
  // the usage a gang would leave, monotone in it): checked as such, no copy. Otherwise, or
  // to explain a refusal, they are counted on a copy (the engine is never changed from
  // here): only within one pass interval of another ungated admission (a copy costs about
  // 1 ms with 100 queues and 10,000 running gangs). The copy's queues point at `counted`'s
  // specs, which stay put while the ledger lock is held.
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
