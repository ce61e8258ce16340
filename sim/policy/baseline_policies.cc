// The three baseline policies (policies.h). Their placement is in baseline_placement.h.
#include <algorithm>
#include <deque>
#include <iterator>
#include <queue>
#include <unordered_map>
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

// Jobs waiting, in (priority desc, arrival) order, bucketed by shape. Two shortcuts
// keep passes cheap on long queues (k8s-default starving big pods) without changing
// any decision:
//   - a full pass merges the per-shape queues in global order and drops a shape from
//     the pass as soon as one of its jobs fails: free GPUs only shrink during a pass
//     and each baseline's fit test depends only on the shape, so the rest of that
//     shape would fail too;
//   - when nothing was released since the last pass (no finish, preemption or timer),
//     only the arrivals since then are tried: whatever failed before still fails.
class OrderedQueue {
 public:
  using Key = std::tuple<int, uint64_t, JobId>;
  // (pool, GPUs per member, milli, members); per-pod policies pass members = 1.
  using Shape = std::tuple<std::string, int, int, int>;

  void Push(const Job& j, bool per_pod) {
    Key k{-j.priority, seq_++, j.id};
    Shape shape{j.pool.value_or("*"), j.gpus_per_replica, j.milli, per_pod ? 1 : j.replicas};
    by_shape_[shape].insert(k);
    shape_of_.emplace(j.id, std::move(shape));
    arrivals_.push_back(k);
    has_shares_ = has_shares_ || j.IsShare();
  }

  // fn(id) -> true if the job started (it leaves the queue), false if it failed.
  template <typename Fn>
  void Pass(const Simulator& sim, Fn&& fn) {
    const bool full = sim.release_epoch() != seen_epoch_;
    seen_epoch_ = sim.release_epoch();
    if (full) {
      FullPass(sim, fn);
    } else {
      std::sort(arrivals_.begin(), arrivals_.end());
      for (const Key& k : arrivals_) {
        if (Exhausted(sim)) break;
        const JobId id = std::get<2>(k);
        auto shape = shape_of_.find(id);
        if (shape == shape_of_.end()) continue;  // already started
        if (fn(id)) Erase(shape, k);
      }
    }
    arrivals_.clear();
  }

 private:
  using ShapeMap = std::map<Shape, std::set<Key>>;

  template <typename Fn>
  void FullPass(const Simulator& sim, Fn&& fn) {
    using Head = std::pair<Key, ShapeMap::iterator>;
    auto later = [](const Head& a, const Head& b) { return a.first > b.first; };
    std::priority_queue<Head, std::vector<Head>, decltype(later)> heads(later);
    for (auto it = by_shape_.begin(); it != by_shape_.end(); ++it)
      if (!it->second.empty()) heads.emplace(*it->second.begin(), it);
    while (!heads.empty() && !Exhausted(sim)) {
      auto [k, shape_it] = heads.top();
      heads.pop();
      const JobId id = std::get<2>(k);
      if (!fn(id)) continue;  // this shape is done for the pass
      auto next = shape_it->second.upper_bound(k);
      if (next != shape_it->second.end()) heads.emplace(*next, shape_it);
      Erase(shape_of_.find(id), k);
    }
  }

  void Erase(std::unordered_map<JobId, Shape>::iterator shape, const Key& k) {
    auto bucket = by_shape_.find(shape->second);
    bucket->second.erase(k);
    if (bucket->second.empty()) by_shape_.erase(bucket);
    shape_of_.erase(shape);
  }

  // No free whole GPU anywhere and no shares in play: nothing else can start.
  bool Exhausted(const Simulator& sim) const { return !has_shares_ && sim.state().FreeGpus() == 0; }

  ShapeMap by_shape_;
  std::unordered_map<JobId, Shape> shape_of_;
  std::vector<Key> arrivals_;
  uint64_t seq_ = 0;
  uint64_t seen_epoch_ = ~uint64_t{0};
  bool has_shares_ = false;
};

// Within one pass, a failed shape stays failed: free GPUs only shrink as the pass
// places work, and each baseline's fit test is monotone in the free GPUs.
class FailedShapes {
 public:
  bool Known(const Job& j, int replicas) const {
    auto it = min_members_.find(Key(j));
    return it != min_members_.end() && replicas >= it->second;
  }
  bool Known(const Job& j) const { return Known(j, j.replicas); }
  void Add(const Job& j, int replicas) {
    auto [it, inserted] = min_members_.emplace(Key(j), replicas);
    if (!inserted) it->second = std::min(it->second, replicas);
  }
  void Add(const Job& j) { Add(j, j.replicas); }

 private:
  static std::tuple<std::string, int, int> Key(const Job& j) {
    return {j.pool.value_or("*"), j.gpus_per_replica, j.milli};
  }
  std::map<std::tuple<std::string, int, int>, int> min_members_;
};

class GangFifoPolicy final : public Policy {
 public:
  std::string name() const override { return "gang-fifo"; }
  std::optional<MigPlacement> PlaceMig(const Simulator& sim, JobId id) override {
    return PlaceMigDevices(sim, sim.job(id), NodeOrder::kFirstFit);
  }
  void OnQueued(Simulator&, JobId id) override { queue_.push_back(id); }
  void Schedule(Simulator& sim) override {
    while (!queue_.empty() && TryStartWhole(sim, queue_.front(), NodeOrder::kFirstFit)) queue_.pop_front();
  }

 private:
  std::deque<JobId> queue_;
};

class GangBinpackPolicy final : public Policy {
 public:
  static constexpr bool kPerPod = false;
  std::string name() const override { return "gang-binpack"; }
  std::optional<MigPlacement> PlaceMig(const Simulator& sim, JobId id) override {
    return PlaceMigDevices(sim, sim.job(id), NodeOrder::kBestFit);
  }
  void OnQueued(Simulator& sim, JobId id) override { queue_.Push(sim.job(id), kPerPod); }
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
  static constexpr bool kPerPod = true;
  std::string name() const override { return "k8s-default"; }
  std::optional<MigPlacement> PlaceMig(const Simulator& sim, JobId id) override {
    return PlaceMigDevices(sim, sim.job(id), NodeOrder::kSpread);
  }
  void OnQueued(Simulator& sim, JobId id) override { queue_.Push(sim.job(id), kPerPod); }
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
      if (failed.Known(j, 1)) return false;
      const JobRun& run = sim.run(id);
      for (int m = 0; m < j.replicas; ++m) {
        if (!run.pods[static_cast<size_t>(m)].empty()) continue;
        auto placed = PlaceMembers(sim.state(), j.pool, 1, j.gpus_per_replica, NodeOrder::kSpread);
        if (!placed || !sim.BindMember(id, m, placed->front()).ok()) {
          failed.Add(j, 1);
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
