#include "core/placement/preemption.h"

#include <algorithm>
#include <array>
#include <bit>
#include <limits>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "core/placement/free_view.h"
#include "core/placement/gang_pack.h"

namespace phalanx::placement {
namespace {

struct Candidate {
  int index;  // into request.candidates
  const VictimGang* gang;
  // Its allocations, a view into one array for every candidate (the engine prices ~170
  // candidates per search: a vector each was an allocation each).
  std::span<const PodAllocation* const> pods;
  int gpus = 0;  // whole GPUs held (shares round down)
};

// Rank order: lower first (VictimRank). std::tie, not make_tuple: the comparator must not
// copy the keys.
bool RankedBefore(const Candidate& a, const Candidate& b, VictimRank rank) {
  if (rank == VictimRank::kCost) {
    return std::tie(a.gang->rank_class, a.gang->cost, a.gpus, a.gang->key) <
           std::tie(b.gang->rank_class, b.gang->cost, b.gpus, b.gang->key);
  }
  return std::tie(a.gang->priority, a.gang->gpu_seconds_at_risk, a.gpus, a.gang->key) <
         std::tie(b.gang->priority, b.gang->gpu_seconds_at_risk, b.gpus, b.gang->key);
}

// The first two terms of the rank, which the caller gives: the order up to ties that the
// GPUs held (found in the state) and the key break.
bool PriceBefore(const VictimGang& a, const VictimGang& b, VictimRank rank) {
  if (rank == VictimRank::kCost) return std::tie(a.rank_class, a.cost) < std::tie(b.rank_class, b.cost);
  return std::tie(a.priority, a.gpu_seconds_at_risk) < std::tie(b.priority, b.gpu_seconds_at_risk);
}

// The candidates that hold GPUs in the state, in rank order, sorted and looked up in the
// state only as far as the search reads them: a scope's greedy pass stops once the
// preemptor fits, usually after a few of ~170. Candidates come off a heap by their price
// a group of equal prices at a time; a group's allocations are found then (a hash lookup
// per pod) and the group ordered by the rest of the rank. The order is total (keys
// differ), so the prefix is exactly what finding every candidate's pods and a full sort
// give.
class RankedCandidates {
 public:
  RankedCandidates(const ClusterState& state, std::span<const VictimGang> gangs, int below_priority, VictimRank rank,
                   size_t limit)
      : state_(state), rank_(rank), limit_(limit) {
    rest_.reserve(gangs.size());
    size_t pods = 0;
    for (size_t i = 0; i < gangs.size(); ++i) {
      if (gangs[i].priority >= below_priority) continue;
      rest_.push_back(Pending{static_cast<int>(i), &gangs[i]});
      pods += gangs[i].pods.size();
    }
    // Never reallocated: candidates view their allocations here, the search keeps
    // pointers into sorted_. A group of equal prices is taken whole before it is cut to the
    // limit, so sorted_ can briefly hold every candidate, not only `limit`.
    held_.reserve(pods);
    sorted_.reserve(rest_.size());
    std::make_heap(rest_.begin(), rest_.end(), After());
  }
  // The i-th in rank order; nullptr past the last kept one.
  const Candidate* at(size_t i) {
    while (sorted_.size() <= i && sorted_.size() < limit_ && !rest_.empty()) TakeGroup();
    return i < sorted_.size() ? &sorted_[i] : nullptr;
  }

 private:
  struct Pending {
    int index;  // into request.candidates
    const VictimGang* gang;
  };
  // The heap's top has the least price.
  struct Later {
    VictimRank rank;
    bool operator()(const Pending& a, const Pending& b) const { return PriceBefore(*b.gang, *a.gang, rank); }
  };
  Later After() const { return Later{rank_}; }

  // Moves the candidates of the least price that hold GPUs to sorted_, in rank order.
  void TakeGroup() {
    const size_t first = sorted_.size();
    const VictimGang* price = rest_.front().gang;
    while (!rest_.empty() && !PriceBefore(*price, *rest_.front().gang, rank_)) {
      std::pop_heap(rest_.begin(), rest_.end(), After());
      const Pending p = rest_.back();
      rest_.pop_back();
      Candidate c{p.index, p.gang, {}, 0};
      const size_t from = held_.size();
      for (const PodUid& uid : p.gang->pods) {
        if (const PodAllocation* a = state_.FindPod(uid)) {
          held_.push_back(a);
          c.gpus += a->milli >= kMilliPerGpu ? std::popcount(a->gpus) : 0;
        }
      }
      if (held_.size() == from) continue;  // holds nothing: not a candidate
      c.pods = std::span<const PodAllocation* const>(held_).subspan(from, held_.size() - from);
      sorted_.push_back(c);
    }
    std::sort(sorted_.begin() + static_cast<std::ptrdiff_t>(first), sorted_.end(),
              [&](const Candidate& a, const Candidate& b) { return RankedBefore(a, b, rank_); });
    if (sorted_.size() > limit_) sorted_.resize(limit_);
  }

  const ClusterState& state_;
  VictimRank rank_;
  size_t limit_;
  std::vector<Pending> rest_;
  std::vector<const PodAllocation*> held_;  // every taken candidate's allocations
  std::vector<Candidate> sorted_;
};

// Where the preemptor must fit: a pool, or one domain of a level within a pool.
struct Scope {
  PoolId pool;
  int level = -1;  // -1: the whole pool
  DomainId domain = kNoDomain;
  int base_members = 0;  // capacity before any eviction
};

// Member capacity gained in a scope by releasing a set of victims, tracked per node: the
// extra free GPUs of the nodes it touched, found through `slots` (one entry per node slot,
// -1 = untouched, shared by the gains of one search and reset by Clear: the search builds
// one gain per scope and one per minimisation step).
class ScopeGain {
 public:
  ScopeGain(const FreeView& view, const Scope& scope, int g, std::vector<int>& slots)
      : view_(view), scope_(scope), g_(g), slots_(slots) {}
  ~ScopeGain() { Clear(); }
  ScopeGain(const ScopeGain&) = delete;
  ScopeGain& operator=(const ScopeGain&) = delete;
  void Clear() {
    for (const auto& e : extra_) slots_[static_cast<size_t>(e.first)] = -1;
    extra_.clear();
    released_milli_.clear();
    members_ = 0;
  }

  bool InScope(NodeIndex i) const {
    const NodeState& n = view_.state().node(i);
    if (n.pool != scope_.pool) return false;
    return scope_.level < 0 || n.domains[static_cast<size_t>(scope_.level)] == scope_.domain;
  }
  bool Touches(const Candidate& c) const {
    return std::any_of(c.pods.begin(), c.pods.end(), [&](const PodAllocation* p) { return InScope(p->node); });
  }
  void Add(const Candidate& c) {
    for (const PodAllocation* p : c.pods) {
      if (!InScope(p->node)) continue;
      int milli = 0;
      if (p->milli < kMilliPerGpu) {
        const auto key = (static_cast<uint64_t>(p->node) << 8) | static_cast<uint64_t>(std::countr_zero(p->gpus));
        milli = (released_milli_[key] += p->milli);
      }
      const GpuMask freed = FreedBy(view_.state(), *p, milli);
      if (!freed) continue;
      int& slot = slots_[static_cast<size_t>(p->node)];
      if (slot < 0) {
        slot = static_cast<int>(extra_.size());
        extra_.emplace_back(p->node, GpuMask{0});
      }
      GpuMask& extra = extra_[static_cast<size_t>(slot)].second;
      const GpuMask base = view_.Free(p->node);
      const int before = std::popcount(base | extra) / g_;
      extra |= freed;
      members_ += std::popcount(base | extra) / g_ - before;
    }
  }
  int members() const { return members_; }

 private:
  const FreeView& view_;
  const Scope& scope_;
  int g_;
  int members_ = 0;
  std::vector<int>& slots_;
  std::vector<std::pair<NodeIndex, GpuMask>> extra_;  // in first-touched order
  std::unordered_map<uint64_t, int> released_milli_;  // shares only
};

// Minimisation's capacity test for a set of whole-GPU victims: what ScopeGain counts for
// the set, kept per node as how many of the set's victims free each GPU, so that leaving
// one out touches only its own nodes (O(|set| x pods) for the whole minimisation instead of
// rebuilding a ScopeGain per step, O(|set|^2 x pods)). Shares are left to ScopeGain: a
// shared GPU comes free only once every share on it goes.
class SetGain {
 public:
  SetGain(const FreeView& view, const ScopeGain& scope, int g, std::vector<int>& slots)
      : view_(view), scope_(scope), g_(g), slots_(slots) {}
  ~SetGain() {
    for (const Node& n : nodes_) slots_[static_cast<size_t>(n.node)] = -1;
  }
  SetGain(const SetGain&) = delete;
  SetGain& operator=(const SetGain&) = delete;

  static bool Whole(const Candidate& c) {
    return std::all_of(c.pods.begin(), c.pods.end(), [](const PodAllocation* p) { return p->milli >= kMilliPerGpu; });
  }
  void Add(const Candidate& c) { members_ += Change(c, 1); }
  // Leaves `c` out when the rest still gain `needed` members; whether it did.
  bool DropIfEnough(const Candidate& c, int needed) {
    const int lost = Change(c, -1);
    if (members_ + lost >= needed) {
      members_ += lost;
      return true;
    }
    Change(c, 1);
    return false;
  }

 private:
  struct Node {
    NodeIndex node;
    GpuMask base;
    GpuMask extra = 0;
    std::array<uint16_t, kMaxGpusPerNode> freeing{};  // per GPU: victims of the set that free it
  };
  // Adds (+1) or removes (-1) c's GPUs; the members gained (lost: negative).
  int Change(const Candidate& c, int sign) {
    int delta = 0;
    for (const PodAllocation* p : c.pods) {
      if (!scope_.InScope(p->node)) continue;
      const GpuMask freed = FreedBy(view_.state(), *p, 0);
      if (!freed) continue;
      int& slot = slots_[static_cast<size_t>(p->node)];
      if (slot < 0) {
        slot = static_cast<int>(nodes_.size());
        nodes_.push_back(Node{p->node, view_.Free(p->node)});
      }
      Node& n = nodes_[static_cast<size_t>(slot)];
      const int before = std::popcount(n.base | n.extra) / g_;
      for (GpuMask m = freed; m != 0; m &= m - 1) {
        const int gpu = std::countr_zero(m);
        uint16_t& count = n.freeing[static_cast<size_t>(gpu)];
        count = static_cast<uint16_t>(count + sign);
        if (count == 0) {
          n.extra &= ~(GpuMask{1} << gpu);
        } else {
          n.extra |= GpuMask{1} << gpu;
        }
      }
      delta += std::popcount(n.base | n.extra) / g_ - before;
    }
    return delta;
  }

  const FreeView& view_;
  const ScopeGain& scope_;
  int g_;
  int members_ = 0;
  std::vector<int>& slots_;
  std::vector<Node> nodes_;
};

// Lower is better: highest tier evicted, lost work (or total cost), GPUs, victims.
auto SetRank(const std::vector<const Candidate*>& set, VictimRank rank) {
  int top = std::numeric_limits<int>::min(), gpus = 0;
  double risk = 0;
  for (const Candidate* c : set) {
    top = std::max(top, rank == VictimRank::kCost ? c->gang->rank_class : c->gang->priority);
    risk += rank == VictimRank::kCost ? c->gang->cost : c->gang->gpu_seconds_at_risk;
    gpus += c->gpus;
  }
  return std::make_tuple(top, risk, gpus, set.size());
}

}  // namespace

std::string NoVictimSet::Message() const {
  switch (reason) {
    case NoVictimReason::kNoLowerPriorityVictims:
      return "no lower-priority gang holds GPUs the preemptor could use";
    case NoVictimReason::kEvenAllVictimsTooFew:
      return even_with_all ? "even evicting every lower-priority gang: " + even_with_all->Message()
                           : "even evicting every lower-priority gang the preemptor does not fit";
  }
  return "no victim set helps";
}

Result<PreemptionResult> ChoosePreemption(const ClusterState& state, const PreemptionRequest& req) {
  const GangSpec& spec = req.preemptor;
  PlanOptions base_opts;
  base_opts.own_plan = req.own_plan;
  PHX_ASSIGN_OR_RETURN(GangPlanResult base, PlanGang(state, spec, base_opts));
  PreemptionResult result;
  // With `domains` only those count: fitting elsewhere (where the caller cannot place it) is
  // no answer; fitting in one of them shows up as a scope that needs no victim.
  if (base.fits() && !req.domains) {
    result.decision = PreemptionDecision{};
    result.decision->plan = std::move(*base.plan);
    return result;
  }

  // Strictly lower tiers that hold something, ranked (tier, lost work, size); at most
  // max_candidates, the lowest-ranked.
  RankedCandidates cands(state, req.candidates, req.priority, req.rank,
                         static_cast<size_t>(std::max(req.limits.max_candidates, 0)));
  if (cands.at(0) == nullptr) {
    result.none = NoVictimSet{NoVictimReason::kNoLowerPriorityVictims, std::nullopt};
    return result;
  }

  const FreeView view(state, req.own_plan, {});
  const int g = spec.gpus_per_member;
  const int level = spec.mode == TopologyMode::kRequired ? state.LevelIndex(spec.level) : -1;
  std::vector<Scope> scopes;
  for (PoolId p = 0; p < state.PoolCount(); ++p) {
    if (state.pool(p).nodes.empty() || (spec.pool && state.pool(p).name != *spec.pool)) continue;
    if (level < 0) {
      scopes.push_back(Scope{p, -1, kNoDomain, PoolCapacity(view, p, g).members});
      continue;
    }
    const DomainCapacities caps = LevelCapacities(view, level, p, g);
    for (DomainId d = 0; d < static_cast<DomainId>(caps.present.size()); ++d) {
      if (req.domains && !req.domains->contains(state.domain(level, d).value)) continue;
      if (caps.present[static_cast<size_t>(d)]) {
        scopes.push_back(Scope{p, level, d, caps.by_domain[static_cast<size_t>(d)].members});
      }
    }
  }
  // Closest to fitting first, so the bound cuts the least promising scopes.
  std::stable_sort(scopes.begin(), scopes.end(),
                   [](const Scope& a, const Scope& b) { return a.base_members > b.base_members; });
  if (static_cast<int>(scopes.size()) > req.limits.max_scopes) {
    scopes.resize(static_cast<size_t>(std::max(req.limits.max_scopes, 0)));
  }

  std::optional<std::vector<const Candidate*>> best_set;
  const Scope* best_scope = nullptr;
  std::vector<int> slots(static_cast<size_t>(state.NodeSlots()), -1);  // ScopeGain's
  std::vector<const Candidate*> without;
  for (const Scope& scope : scopes) {
    ScopeGain gain(view, scope, g, slots);
    std::vector<const Candidate*> set;
    for (size_t k = 0; const Candidate* c = cands.at(k); ++k) {
      if (scope.base_members + gain.members() >= spec.members) break;
      if (!gain.Touches(*c)) continue;
      gain.Add(*c);
      set.push_back(c);
    }
    if (scope.base_members + gain.members() < spec.members) continue;
    gain.Clear();
    // Minimise: drop the most expensive victims first while the rest still suffice.
    if (std::all_of(set.begin(), set.end(), [](const Candidate* c) { return SetGain::Whole(*c); })) {
      SetGain cover(view, gain, g, slots);
      for (const Candidate* c : set) cover.Add(*c);
      for (size_t i = set.size(); i-- > 0;) {
        if (cover.DropIfEnough(*set[i], spec.members - scope.base_members)) {
          set.erase(set.begin() + static_cast<std::ptrdiff_t>(i));
        }
      }
    } else {
      for (size_t i = set.size(); i-- > 0;) {
        without.assign(set.begin(), set.end());
        without.erase(without.begin() + static_cast<std::ptrdiff_t>(i));
        gain.Clear();
        for (const Candidate* c : without) gain.Add(*c);
        if (scope.base_members + gain.members() >= spec.members) set.swap(without);
      }
    }
    if (!best_set || SetRank(set, req.rank) < SetRank(*best_set, req.rank)) {
      best_set = std::move(set);
      best_scope = &scope;
    }
  }

  if (!best_set) {
    std::vector<PodUid> every;
    for (size_t k = 0; const Candidate* c = cands.at(k); ++k)
      for (const PodAllocation* p : c->pods) every.push_back(p->pod);
    PlanOptions opts = base_opts;
    opts.assume_released = every;
    PHX_ASSIGN_OR_RETURN(GangPlanResult with_all, PlanGang(state, spec, opts));
    NoVictimSet none{NoVictimReason::kEvenAllVictimsTooFew, with_all.no_fit};
    result.none = std::move(none);
    return result;
  }

  std::vector<PodUid> released;
  PreemptionDecision decision;
  std::vector<const Candidate*> ordered = *best_set;
  std::sort(ordered.begin(), ordered.end(), [&](const Candidate* a, const Candidate* b) { return a < b; });
  for (const Candidate* c : ordered) {
    decision.victims.push_back(c->index);
    decision.gpu_seconds_lost += c->gang->gpu_seconds_at_risk;
    decision.cost += c->gang->cost;
    decision.gpus_freed += c->gpus;
    decision.victims_needing_notice += c->gang->notice_seconds_needed > 0 ? 1 : 0;
    for (const PodAllocation* p : c->pods) released.push_back(p->pod);
  }
  if (!ordered.empty()) {
    int top = std::numeric_limits<int>::min();
    for (const Candidate* c : ordered) top = std::max(top, c->gang->priority);
    decision.highest_victim_priority = top;
  }
  GangSpec scoped = spec;
  scoped.pool = state.pool(best_scope->pool).name;
  PlanOptions opts = base_opts;
  opts.assume_released = released;
  if (best_scope->level >= 0) opts.only_domain = state.domain(best_scope->level, best_scope->domain).value;
  PHX_ASSIGN_OR_RETURN(GangPlanResult plan, PlanGang(state, scoped, opts));
  if (!plan.fits()) {
    return InternalError(fmt::format("preemption for {}: capacity check passed but the plan does not fit: {}",
                                     spec.key.str(), plan.no_fit->Message()));
  }
  decision.plan = std::move(*plan.plan);
  result.decision = std::move(decision);
  return result;
}

}  // namespace phalanx::placement
