// The three baseline policies (policies.h). Their placement is in baseline_placement.h.
#include <algorithm>
#include <deque>
#include <iterator>
#include <map>
#include <set>
#include <tuple>

#include "sim/policy/baseline_placement.h"
#include "sim/policy/baseline_policies.h"

namespace phalanx::sim {
namespace {

// Tries to start a whole job (all members or none, or its share).
bool TryStartWhole(Simulator& sim, JobId id, NodeOrder order) {
  const Job& j = sim.job(id);
  if (j.IsShare()) {
    auto share = PlaceShare(sim.state(), j.pool, j.milli, order);
    return share && sim.StartShare(id, share->node, share->gpu).ok();
  }
  if (PoolFreeGpus(sim.state(), j.pool) < j.TotalGpus()) return false;
  auto placed = PlaceMembers(sim.state(), j.pool, j.replicas, j.gpus_per_replica, order);
  return placed && sim.StartJob(id, *placed).ok();
}

// Jobs waiting, in (priority desc, arrival) order. A pass walks the whole queue only
// after GPUs were released (or a timer fired); otherwise only the arrivals since the
// last pass can fit (whatever failed before still fails), so only they are tried. This
// keeps long queues (k8s-default starving big pods) from making every pass O(queue).
class OrderedQueue {
 public:
  using Key = std::tuple<int, uint64_t, JobId>;
  void Push(int priority, JobId id) {
    Key k{-priority, seq_++, id};
    set_.insert(k);
    arrivals_.push_back(k);
  }
  template <typename Fn>  // fn(id) -> true to remove the job; stops early if stop() is true
  void Pass(const Simulator& sim, Fn&& fn) {
    const bool full = sim.release_epoch() != seen_epoch_;
    seen_epoch_ = sim.release_epoch();
    if (full) {
      for (auto it = set_.begin(); it != set_.end() && !Exhausted(sim);) {
        it = fn(std::get<2>(*it)) ? set_.erase(it) : std::next(it);
      }
    } else {
      std::sort(arrivals_.begin(), arrivals_.end());
      for (const Key& k : arrivals_) {
        if (Exhausted(sim)) break;
        auto it = set_.find(k);
        if (it != set_.end() && fn(std::get<2>(k))) set_.erase(it);
      }
    }
    arrivals_.clear();
  }
  void NoteShare(bool share) { has_shares_ = has_shares_ || share; }

 private:
  // No free whole GPU anywhere and no shares in play: nothing else can start.
  bool Exhausted(const Simulator& sim) const { return !has_shares_ && sim.state().FreeGpus() == 0; }

  std::set<Key> set_;
  std::vector<Key> arrivals_;
  uint64_t seq_ = 0;
  uint64_t seen_epoch_ = ~uint64_t{0};
  bool has_shares_ = false;
};

// Within one pass, a failed shape stays failed: free GPUs only shrink as the pass
// places work, and each baseline's fit test is monotone in the free GPUs.
class FailedShapes {
 public:
  bool Known(const Job& j) const {
    auto it = min_members_.find(Key(j));
    return it != min_members_.end() && j.replicas >= it->second;
  }
  void Add(const Job& j) {
    auto [it, inserted] = min_members_.emplace(Key(j), j.replicas);
    if (!inserted) it->second = std::min(it->second, j.replicas);
  }

 private:
  static std::tuple<std::string, int, int> Key(const Job& j) {
    return {j.pool.value_or("*"), j.gpus_per_replica, j.milli};
  }
  std::map<std::tuple<std::string, int, int>, int> min_members_;
};

class GangFifoPolicy final : public Policy {
 public:
  std::string name() const override { return "gang-fifo"; }
  void OnQueued(Simulator&, JobId id) override { queue_.push_back(id); }
  void Schedule(Simulator& sim) override {
    while (!queue_.empty() && TryStartWhole(sim, queue_.front(), NodeOrder::kFirstFit)) queue_.pop_front();
  }

 private:
  std::deque<JobId> queue_;
};

class GangBinpackPolicy final : public Policy {
 public:
  std::string name() const override { return "gang-binpack"; }
  void OnQueued(Simulator& sim, JobId id) override {
    queue_.NoteShare(sim.job(id).IsShare());
    queue_.Push(sim.job(id).priority, id);
  }
  void Schedule(Simulator& sim) override {
    FailedShapes failed;
    queue_.Pass(sim, [&](JobId id) {
      const Job& j = sim.job(id);
      if (failed.Known(j)) return false;
      if (TryStartWhole(sim, id, NodeOrder::kBestFit)) return true;
      failed.Add(j);
      return false;
    });
  }

 private:
  OrderedQueue queue_;
};

class K8sDefaultPolicy final : public Policy {
 public:
  std::string name() const override { return "k8s-default"; }
  void OnQueued(Simulator& sim, JobId id) override {
    queue_.NoteShare(sim.job(id).IsShare());
    queue_.Push(sim.job(id).priority, id);
  }
  void Schedule(Simulator& sim) override {
    FailedShapes failed;
    queue_.Pass(sim, [&](JobId id) {
      const Job& j = sim.job(id);
      if (j.IsShare()) {
        if (failed.Known(j)) return false;
        if (TryStartWhole(sim, id, NodeOrder::kSpread)) return true;
        failed.Add(j);
        return false;
      }
      // Pods bind one at a time; a pod that does not fit leaves its bound siblings
      // holding their GPUs (no gang semantics).
      Job one = j;
      one.replicas = 1;
      if (failed.Known(one)) return false;
      const JobRun& run = sim.run(id);
      for (int m = 0; m < j.replicas; ++m) {
        if (!run.pods[static_cast<size_t>(m)].empty()) continue;
        auto placed = PlaceMembers(sim.state(), j.pool, 1, j.gpus_per_replica, NodeOrder::kSpread);
        if (!placed || !sim.BindMember(id, m, placed->front()).ok()) {
          failed.Add(one);
          return false;
        }
        if (sim.run(id).phase == JobPhase::kRunning) return true;
      }
      return sim.run(id).phase == JobPhase::kRunning;
    });
  }

 private:
  OrderedQueue queue_;
};

}  // namespace

std::unique_ptr<Policy> MakeGangFifoPolicy() { return std::make_unique<GangFifoPolicy>(); }
std::unique_ptr<Policy> MakeGangBinpackPolicy() { return std::make_unique<GangBinpackPolicy>(); }
std::unique_ptr<Policy> MakeK8sDefaultPolicy() { return std::make_unique<K8sDefaultPolicy>(); }

}  // namespace phalanx::sim
