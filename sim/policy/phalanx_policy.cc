// The `phalanx` policy: the extender's admission loop replayed on the simulator's
// ledger, calling the same core code (core/admission, core/placement).
//
// Per capacity pool, gangs are walked in AdmissionQueue order (priority, then FIFO;
// gangs behind a holding head wait, single pods may pass). Each is planned with
// PlanGang (multi-member gangs prefer one rack, then wider levels); one-GPU shares go
// through PickBestNode. A gang that does not fit and outranks something running asks
// ChoosePreemption for whole lower-tier victim gangs ranked by lost work
// (GpuSecondsAtRisk: time since the victim's last checkpoint x its GPUs).
#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "core/admission/admission_queue.h"
#include "core/placement/gang_plan.h"
#include "core/placement/node_score.h"
#include "core/placement/preemption.h"
#include "sim/cluster/cluster_spec.h"
#include "sim/policy/baseline_placement.h"
#include "sim/policy/baseline_policies.h"
#include "sim/policy/phalanx_policy.h"

namespace phalanx::sim {
namespace {

MonotonicTime Mono(double seconds) {
  return MonotonicTime(std::chrono::duration_cast<Duration>(std::chrono::duration<double>(seconds)));
}

class PhalanxPolicy final : public Policy {
 public:
  explicit PhalanxPolicy(const PolicyOptions& options)
      : options_(options),
        queue_(admission::AdmissionConfig{
            std::chrono::duration_cast<Duration>(std::chrono::duration<double>(options.head_of_line_s))}) {}

  std::string name() const override { return "phalanx"; }

  void OnQueued(Simulator& sim, JobId id) override {
    const Job& j = sim.job(id);
    GangKey key(fmt::format("j{}-a{}", id, sim.run(id).attempt));
    const std::string pool = j.pool.value_or("*");
    (void)queue_.Enqueue(admission::WaitingGang{key, pool, j.priority, j.replicas > 1}, Mono(sim.now()));
    by_key_.emplace(key, id);
    pools_.insert(pool);
    arrivals_[pool].push_back(std::move(key));
  }

  void Schedule(Simulator& sim) override {
    if (sim.release_epoch() != seen_epoch_) {
      seen_epoch_ = sim.release_epoch();
      for (const std::string& pool : pools_) Pass(sim, pool);
    } else {
      // Nothing was released since the last pass, so everything that failed then still
      // fails: only the new arrivals need a try.
      for (auto& [pool, keys] : arrivals_) ArrivalsPass(sim, pool, keys);
    }
    arrivals_.clear();
    // Wake up when a head-of-line hold runs out, so the gangs behind it get a turn.
    for (const std::string& pool : pools_) {
      if (auto head = queue_.HoldingHead(pool, Mono(sim.now()))) {
        const admission::QueuedGang* e = queue_.Find(*head);
        if (e && e->hold_since) {
          const double since = std::chrono::duration<double>(e->hold_since->time_since_epoch()).count();
          sim.WakeAt(since + options_.head_of_line_s);
        }
      }
    }
  }

 private:
  struct ShapeKey {
    int gpus, milli;
    auto operator<=>(const ShapeKey&) const = default;
  };

  placement::GangSpec SpecOf(const Simulator& sim, JobId id) const {
    const Job& j = sim.job(id);
    placement::GangSpec spec;
    spec.key = GangKey(fmt::format("j{}-a{}", id, sim.run(id).attempt));
    spec.members = j.replicas;
    spec.gpus_per_member = j.gpus_per_replica;
    spec.pool = j.pool;
    if (j.replicas > 1) {
      spec.level = SimLevels()[kLevelRack];
      spec.mode = placement::TopologyMode::kPreferred;
    }
    return spec;
  }

  bool TryPlace(Simulator& sim, JobId id) {
    const Job& j = sim.job(id);
    if (j.IsShare()) {
      placement::PodRequest req{.gpus = 1, .milli = j.milli, .pool = j.pool, .priority = j.priority};
      auto choice = placement::PickBestNode(sim.state(), req);
      if (!choice) return false;
      return sim.StartShare(id, sim.state().node(choice->node).spec.name, std::countr_zero(choice->score.gpus)).ok();
    }
    if (PoolFreeGpus(sim.state(), j.pool) < j.TotalGpus()) return false;
    auto planned = placement::PlanGang(sim.state(), SpecOf(sim, id));
    if (!planned.ok() || !planned->fits()) return false;
    return sim.StartJob(id, planned->plan->members).ok();
  }

  // MIG: the core best fit (core/placement/mig.h), as the extender scores nodes: the
  // node whose chosen devices leave its GPUs and its MIG capacity fullest; ties to the
  // first node in name order.
  std::optional<MigPlacement> PlaceMig(const Simulator& sim, JobId id) override {
    const Job& j = sim.job(id);
    const placement::MigRequest req{j.mig_profile, j.gpus_per_replica};
    std::optional<MigPlacement> best;
    double best_score = -1;
    for (const NodeName& name : MigNodesInPool(sim, j.pool)) {
      auto choice = placement::ChooseMigDevices(*sim.mig().Find(name), req);
      if (!choice || choice->score <= best_score) continue;
      best_score = choice->score;
      best = MigPlacement{name, std::move(choice->devices)};
    }
    return best;
  }

  bool TryPreempt(Simulator& sim, JobId id) {
    const Job& j = sim.job(id);
    if (j.IsShare()) return false;  // shares are never worth evicting a gang for here
    std::vector<placement::VictimGang> victims;
    std::vector<JobId> victim_ids;
    for (JobId r : sim.running()) {
      const Job& v = sim.job(r);
      if (v.IsMig()) continue;  // MIG devices are not whole GPUs: evicting them frees nothing here
      if (v.priority >= j.priority) continue;
      if (j.pool && v.pool && *v.pool != *j.pool) continue;
      placement::VictimGang g;
      g.key = GangKey(fmt::format("j{}-a{}", r, sim.run(r).attempt));
      g.priority = v.priority;
      g.gpu_seconds_at_risk = sim.GpuSecondsAtRisk(r);
      for (const PodUid& pod : sim.run(r).pods)
        if (!pod.empty()) g.pods.push_back(pod);
      victims.push_back(std::move(g));
      victim_ids.push_back(r);
    }
    if (victims.empty()) return false;
    placement::PreemptionRequest req{.preemptor = SpecOf(sim, id), .priority = j.priority, .candidates = victims};
    auto result = placement::ChoosePreemption(sim.state(), req);
    if (!result.ok() || !result->helps() || result->decision->victims.empty()) return false;
    for (int v : result->decision->victims) (void)sim.Preempt(victim_ids[static_cast<size_t>(v)]);
    if (sim.StartJob(id, result->decision->plan.members).ok()) return true;
    return TryPlace(sim, id);  // the plan is always feasible after eviction; belt and braces
  }

  int MinRunningPriority(const Simulator& sim) const {
    int lowest = INT32_MAX;
    for (JobId r : sim.running()) lowest = std::min(lowest, sim.job(r).priority);
    return lowest;
  }

  void Pass(Simulator& sim, const std::string& pool) {
    const MonotonicTime now = Mono(sim.now());
    // One ordered walk with NextToTry's semantics: a holding gang blocks the gangs
    // after it, single pods still pass. (NextToTry itself restarts its walk from the
    // front on every call, O(queue^2) per pass on long queues; see the TODO in
    // docs/simulator.md.)
    std::vector<const admission::QueuedGang*> order = queue_.Ordered(pool);
    std::map<ShapeKey, int> failed_min_members;  // within a pass free GPUs only shrink
    int preemption_attempts = 0;
    // Lowest running priority, computed lazily (a plain pair, not std::optional: g++ 12
    // reports a false maybe-uninitialized on the optional once PlaceMig is inlined nearby).
    int min_running = 0;
    bool min_running_known = false;
    bool blocked = false;
    bool head_seen = false;  // the first gang in order whose hold is not spent is the head
    for (const admission::QueuedGang* entry : order) {
      if (blocked && entry->gang.gang) continue;
      const GangKey key = entry->gang.key;
      const JobId id = by_key_.at(key);
      const Job& j = sim.job(id);
      const ShapeKey shape{j.gpus_per_replica, j.milli};
      auto failed = failed_min_members.find(shape);
      bool fitted = (failed == failed_min_members.end() || j.replicas < failed->second) && TryPlace(sim, id);
      if (!fitted && preemption_attempts < options_.preemption_attempts_per_pass) {
        if (!min_running_known) {
          min_running = MinRunningPriority(sim);
          min_running_known = true;
        }
        if (j.priority > min_running) {
          ++preemption_attempts;
          fitted = TryPreempt(sim, id);
          if (fitted) min_running_known = false;
        }
      }
      if (!fitted) {
        auto [it, inserted] = failed_min_members.emplace(shape, j.replicas);
        if (!inserted) it->second = std::min(it->second, j.replicas);
      }
      if (fitted) {
        (void)queue_.RecordAttempt(key, true, now);
        by_key_.erase(key);
        continue;
      }
      // A failed attempt only changes state for the pool's head (its hold starts) and
      // for entries that already hold (their hold may be spent); for everyone else it
      // would just bump a counter. Skipping those keeps a pass O(queue): RecordAttempt
      // looks the head up by walking the order from the front.
      // (A spent entry's RecordAttempt only re-marks it spent, which StateOf already
      // derives from the clock.)
      const bool live_gang = entry->gang.gang && queue_.StateOf(*entry, now) != admission::EntryState::kSpent;
      if (live_gang && !head_seen) (void)queue_.RecordAttempt(key, false, now);
      if (live_gang) head_seen = true;
      const admission::QueuedGang* still = queue_.Find(key);
      if (still && still->gang.gang && queue_.StateOf(*still, now) == admission::EntryState::kHolding) blocked = true;
    }
  }

  // Tries only the gangs that arrived since the last pass, in admission order; a gang
  // behind the pool's holding head waits (as in Pass).
  void ArrivalsPass(Simulator& sim, const std::string& pool, std::vector<GangKey>& keys) {
    const MonotonicTime now = Mono(sim.now());
    std::sort(keys.begin(), keys.end(), [&](const GangKey& a, const GangKey& b) {
      const auto* ea = queue_.Find(a);
      const auto* eb = queue_.Find(b);
      return ea->gang.priority != eb->gang.priority ? ea->gang.priority > eb->gang.priority : ea->sequence < eb->sequence;
    });
    int preemption_attempts = 0;
    const std::optional<GangKey> holding = queue_.HoldingHead(pool, now);
    const admission::QueuedGang* h = holding ? queue_.Find(*holding) : nullptr;  // stays queued this pass
    for (const GangKey& key : keys) {
      const admission::QueuedGang* entry = queue_.Find(key);
      if (!entry) continue;
      if (entry->gang.gang && h && entry->gang.priority <= h->gang.priority) continue;  // behind the holding head
      const JobId id = by_key_.at(key);
      bool fitted = TryPlace(sim, id);
      if (!fitted && preemption_attempts < options_.preemption_attempts_per_pass &&
          sim.job(id).priority > MinRunningPriority(sim)) {
        ++preemption_attempts;
        fitted = TryPreempt(sim, id);
      }
      if (fitted) by_key_.erase(key);
      // A failed arrival matters only if it is now the pool's head (nothing holds); if
      // its hold starts, it blocks the later arrivals of this pass too.
      if (fitted) {
        (void)queue_.RecordAttempt(key, true, now);
      } else if (entry->gang.gang && !h) {
        (void)queue_.RecordAttempt(key, false, now);
        if (auto head = queue_.HoldingHead(pool, now)) h = queue_.Find(*head);
      }
    }
  }

  PolicyOptions options_;
  uint64_t seen_epoch_ = ~uint64_t{0};
  std::map<std::string, std::vector<GangKey>> arrivals_;
  admission::AdmissionQueue queue_;
  std::unordered_map<GangKey, JobId> by_key_;
  std::set<std::string> pools_;
};

}  // namespace

std::unique_ptr<Policy> MakePhalanxPolicy(const PolicyOptions& options) {
  return std::make_unique<PhalanxPolicy>(options);
}

const std::vector<std::string>& PolicyNames() {
  static const std::vector<std::string> kNames = {"phalanx", "k8s-default", "gang-fifo", "gang-binpack"};
  return kNames;
}

Result<std::unique_ptr<Policy>> MakePolicy(std::string_view name, const PolicyOptions& options) {
  if (name == "phalanx") return MakePhalanxPolicy(options);
  if (name == "k8s-default") return MakeK8sDefaultPolicy();
  if (name == "gang-fifo") return MakeGangFifoPolicy();
  if (name == "gang-binpack") return MakeGangBinpackPolicy();
  return InvalidArgumentError(fmt::format("unknown policy \"{}\" (phalanx | k8s-default | gang-fifo | gang-binpack | all)", name));
}

}  // namespace phalanx::sim
