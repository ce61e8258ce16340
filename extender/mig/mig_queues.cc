// Pods on MIG devices in team queues (docs/user-guide.md §7): they run outside the engine's
// placement (mig_filter.h judges them), yet count in their queue's quota of the node's pool
// at count x MigProfileMilli(profile) milli-GPUs. Filter refuses a pod its queue has no room
// for (every node unresolvable: preempting would not help); bind re-checks (the commit
// point) and counts the pod as uncounted until the pass books it in the engine
// (Engine::BookOutside), which then counts it in shares, borrowing and GpuQueue status.
#include <chrono>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "extender/mig/mig_requests.h"
#include "extender/queues/queue_quotas.h"

namespace phalanx::extender {
namespace {

// The engine's key for a MIG pod: ':' is in no namespace name, so it is no gang's key.
GangKey MigBookingKey(const PodUid& uid) { return GangKey("mig:" + uid.str()); }

// Milli-GPUs a pod's MIG request counts for; 0 = not counted (no request, several profiles,
// a profile MigProfileMilli does not know).
scheduling::Milli MigRequestMilli(const PodInfo& pod) {
  auto request = SingleMigRequest(pod.mig);
  if (!request.ok() || !*request) return 0;
  return static_cast<scheduling::Milli>((*request)->count) * scheduling::MigProfileMilli((*request)->profile);
}

}  // namespace

std::optional<std::pair<GangKey, scheduling::Milli>> QueueQuotas::MigQuotaSubject(const PodInfo& pod) {
  const scheduling::QueueLedger& counted = engine_.queues();
  if (!counted.enabled()) return std::nullopt;
  const scheduling::Milli amount = MigRequestMilli(pod);
  if (amount <= 0) return std::nullopt;
  PruneUncounted();
  GangKey key = MigBookingKey(pod.uid);
  if ((counted.Tracks(key) || uncounted_.contains(key)) && ledger_.mig().FindPod(pod.uid)) return std::nullopt;
  return std::make_pair(std::move(key), amount);
}

PoolRefusals QueueQuotas::MigQuotaRefusals(const PodInfo& pod) {
  PoolRefusals out;
  const auto subject = MigQuotaSubject(pod);
  if (!subject) return out;
  const auto& [key, amount] = *subject;
  const scheduling::QueueLedger& counted = engine_.queues();
  const std::string named = QueueOfPod(pod);
  // The pools some queue has a quota in (a handful), not the candidate nodes: nodes of other
  // pools are not limited by queues.
  for (const std::string& pool : counted.Pools()) {
    if (!counted.Manages(pool) || (!pod.pool_selector.empty() && pod.pool_selector != pool)) continue;
    if (std::string why = QuotaRefusalOf(key, named, pool, amount); !why.empty()) out.emplace(pool, std::move(why));
  }
  return out;
}

std::string QueueQuotas::MigQuotaRefusalAt(const PodInfo& pod, const NodeName& node) {
  const auto subject = MigQuotaSubject(pod);
  if (!subject) return "";
  const placement::ClusterState& state = ledger_.state();
  auto idx = state.FindNode(node);
  if (!idx) return "";  // AssumeMigForBind refuses it
  const std::string& pool = state.node(*idx).spec.pool;
  if (!engine_.queues().Manages(pool)) return "";
  return QuotaRefusalOf(subject->first, QueueOfPod(pod), pool, subject->second);
}

void QueueQuotas::RecordUncountedMig(const PodInfo& pod, const NodeName& node) {
  if (!engine_.queues().enabled()) return;
  const scheduling::Milli amount = MigRequestMilli(pod);
  const placement::ClusterState& state = ledger_.state();
  auto idx = state.FindNode(node);
  if (amount <= 0 || !idx) return;
  PruneUncounted();
  const GangKey key = MigBookingKey(pod.uid);
  if (engine_.queues().Tracks(key)) return;  // booked already
  uncounted_[key] = UncountedUse{QueueOfPod(pod), state.node(*idx).spec.pool, amount, pod.priority, pod.uid};
}

bool QueueQuotas::BookMigHolders(MonotonicTime now) {
  if (!engine_.queues().enabled()) {  // nothing to count in: drop what was booked
    for (const auto& [uid, started] : mig_booked_) engine_.UnbookOutside(MigBookingKey(uid));
    mig_booked_.clear();
    return false;
  }
  if (ledger_.mig_version() == mig_version_seen_) return false;
  const placement::ClusterState& state = ledger_.state();
  const double seconds = std::chrono::duration<double>(now.time_since_epoch()).count();  // as EngineSeconds
  // Books `uid` as it holds now; false if it holds nothing (or its node is unknown).
  auto book = [&](const PodUid& uid) {
    const placement::MigHolding* held = ledger_.mig().FindPod(uid);
    const PodRecord* rec = ledger_.FindPod(uid);
    const placement::MigNode* mig = held ? ledger_.mig().Find(held->node) : nullptr;
    auto idx = held ? state.FindNode(held->node) : std::nullopt;
    if (mig == nullptr || rec == nullptr || !idx) return false;
    // What it holds (its devices' profiles), which is what its request asked for.
    scheduling::Milli amount = 0;
    for (int d : held->devices) amount += scheduling::MigProfileMilli(mig->slices()[static_cast<size_t>(d)].profile);
    auto [it, added] = mig_booked_.try_emplace(uid, seconds);
    if (engine_.BookOutside(MigBookingKey(uid), QueueOfPod(rec->info), state.node(*idx).spec.pool, amount,
                            held->priority, it->second).ok()) {
      return true;
    }
    if (added) mig_booked_.erase(it);
    return false;
  };
  bool freed = false;
  auto unbook = [&](const PodUid& uid) {
    if (mig_booked_.erase(uid) == 0) return;
    engine_.UnbookOutside(MigBookingKey(uid));
    freed = true;
  };
  // Only the pods that changed since the last booking; all of them after SetQueues (a
  // namespace's queue may have changed) or when the ledger's change log does not reach back.
  std::optional<std::vector<PodUid>> changed;
  if (mig_version_seen_ != ~uint64_t{0}) changed = ledger_.MigChangedSince(mig_version_seen_);
  mig_version_seen_ = ledger_.mig_version();
  if (changed) {
    for (const PodUid& uid : *changed) {
      if (!book(uid)) unbook(uid);
    }
    return freed;
  }
  std::set<PodUid> holding;
  for (const PodUid& uid : ledger_.mig_holders()) {
    if (book(uid)) holding.insert(uid);
  }
  std::vector<PodUid> gone;
  for (const auto& [uid, started] : mig_booked_) {
    if (!holding.contains(uid)) gone.push_back(uid);
  }
  for (const PodUid& uid : gone) unbook(uid);
  return freed;
}

}  // namespace phalanx::extender
