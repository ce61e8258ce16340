#include "core/placement/gang_plan.h"

#include <tuple>

#include <fmt/format.h>

#include "core/placement/free_view.h"
#include "core/placement/gang_pack.h"

namespace phalanx::placement {
namespace {

// "topology.kubernetes.io/rack" -> "rack", for messages.
std::string_view ShortLevel(std::string_view key) {
  const size_t slash = key.rfind('/');
  return slash == std::string_view::npos ? key : key.substr(slash + 1);
}

std::string PoolLabel(std::string_view pool) { return pool.empty() ? "(unlabelled)" : std::string(pool); }

struct PoolAttempt {
  std::optional<GangPlan> plan;
  NoFit no_fit;
};

NoFit MakeNoFit(const GangSpec& spec, const std::string& pool, NoFitReason reason) {
  NoFit nf;
  nf.reason = reason;
  nf.members = spec.members;
  nf.gpus_per_member = spec.gpus_per_member;
  nf.pool = pool;
  return nf;
}

// Tries the levels of `spec` inside one pool.
PoolAttempt PlanInPool(const FreeView& view, const GangSpec& spec, int level, const PlanOptions& options,
                       PoolId pool) {
  const ClusterState& s = view.state();
  const int g = spec.gpus_per_member;
  const int m = spec.members;
  const std::string& pool_name = s.pool(pool).name;
  PoolAttempt out;
  const ScopeCapacity pool_cap = PoolCapacity(view, pool, g);
  if (pool_cap.free < m * g) {
    out.no_fit = MakeNoFit(spec, pool_name, NoFitReason::kTooFewGpusInPool);
    out.no_fit.best_members = pool_cap.members;
    out.no_fit.best_free_gpus = pool_cap.free;
    return out;
  }

  std::vector<int> levels;
  if (spec.mode == TopologyMode::kRequired) levels.push_back(level);
  if (spec.mode == TopologyMode::kPreferred) {
    for (int l = level; l < static_cast<int>(s.levels().size()); ++l) levels.push_back(l);
  }
  bool any_labelled = false;
  for (int l : levels) {
    const DomainCapacities caps = LevelCapacities(view, l, pool, g);
    DomainId best = kNoDomain, largest = kNoDomain;
    for (DomainId d = 0; d < static_cast<DomainId>(caps.by_domain.size()); ++d) {
      if (!caps.present[static_cast<size_t>(d)]) continue;
      if (options.only_domain && s.domain(l, d).value != *options.only_domain) continue;
      any_labelled = true;
      const ScopeCapacity& c = caps.by_domain[static_cast<size_t>(d)];
      const auto key = [&](DomainId x) {
        const ScopeCapacity& cx = caps.by_domain[static_cast<size_t>(x)];
        return std::make_tuple(cx.members, cx.free, std::string_view(s.domain(l, x).value));
      };
      if (largest == kNoDomain || std::make_tuple(c.members, c.free) >
                                      std::make_tuple(caps.by_domain[static_cast<size_t>(largest)].members,
                                                      caps.by_domain[static_cast<size_t>(largest)].free)) {
        largest = d;
      }
      // Best fit: the fitting domain with the least capacity left over.
      if (c.members >= m && (best == kNoDomain || key(d) < key(best))) best = d;
    }
    if (best != kNoDomain) {
      const DomainInfo& dom = s.domain(l, best);
      GangPlan plan;
      plan.key = spec.key;
      plan.pool = pool_name;
      plan.level = l;
      plan.level_key = s.levels()[static_cast<size_t>(l)];
      plan.domain = dom.value;
      PackMembers(view, pool, &dom.nodes, m, g, plan);
      plan.quality.free_gpus_left_in_domain = caps.by_domain[static_cast<size_t>(best)].free - m * g;
      plan.quality.free_gpus_left_in_pool = pool_cap.free - m * g;
      plan.quality.fell_back = l != level;
      out.plan = std::move(plan);
      return out;
    }
    if (spec.mode == TopologyMode::kRequired) {
      out.no_fit = MakeNoFit(spec, pool_name,
                             any_labelled ? NoFitReason::kNoDomainLargeEnough : NoFitReason::kNodesUnlabelled);
      out.no_fit.level_key = s.levels()[static_cast<size_t>(l)];
      if (largest != kNoDomain) {
        out.no_fit.best_domain = s.domain(l, largest).value;
        out.no_fit.best_members = caps.by_domain[static_cast<size_t>(largest)].members;
        out.no_fit.best_free_gpus = caps.by_domain[static_cast<size_t>(largest)].free;
      }
      return out;
    }
  }
  // No topology, or preferred levels exhausted: anywhere in the pool.
  if (pool_cap.members < m) {
    out.no_fit = MakeNoFit(spec, pool_name, NoFitReason::kTooFewMembersFit);
    out.no_fit.best_members = pool_cap.members;
    out.no_fit.best_free_gpus = pool_cap.free;
    return out;
  }
  GangPlan plan;
  plan.key = spec.key;
  plan.pool = pool_name;
  PackMembers(view, pool, nullptr, m, g, plan);
  plan.quality.free_gpus_left_in_domain = pool_cap.free - m * g;
  plan.quality.free_gpus_left_in_pool = pool_cap.free - m * g;
  plan.quality.fell_back = spec.mode == TopologyMode::kPreferred;
  out.plan = std::move(plan);
  return out;
}

// Orders no-fits: the one closest to fitting explains best.
auto NoFitRank(const NoFit& nf) { return std::make_tuple(nf.best_members, nf.best_free_gpus); }

}  // namespace

std::string NoFit::Message() const {
  const std::string need =
      fmt::format("needs {} members x {} GPUs ({} GPUs)", members, gpus_per_member, members * gpus_per_member);
  const std::string_view lvl = ShortLevel(level_key);
  switch (reason) {
    case NoFitReason::kNoPool:
      return fmt::format("{}; no schedulable node in pool {}", need, PoolLabel(pool));
    case NoFitReason::kTooFewGpusInPool:
      return fmt::format("{}; pool {} has {} free GPUs", need, PoolLabel(pool), best_free_gpus);
    case NoFitReason::kTooFewMembersFit:
      return fmt::format("{} with {} on one node each; pool {} has {} free GPUs but fits {} members", need,
                         gpus_per_member, PoolLabel(pool), best_free_gpus, best_members);
    case NoFitReason::kNoDomainLargeEnough:
      return fmt::format("{} in one {}; the best {} ({}) has {} free GPUs and fits {} members", need, level_key, lvl,
                         best_domain, best_free_gpus, best_members);
    case NoFitReason::kNodesUnlabelled:
      return fmt::format("{} in one {}; no node of pool {} has the label {}", need, level_key, PoolLabel(pool),
                         level_key);
  }
  return need;
}

Result<GangPlanResult> PlanGang(const ClusterState& state, const GangSpec& spec, const PlanOptions& options) {
  if (spec.members < 1) return InvalidArgumentError(fmt::format("gang {}: {} members", spec.key.str(), spec.members));
  if (spec.gpus_per_member < 1 || spec.gpus_per_member > kMaxGpusPerNode) {
    return InvalidArgumentError(fmt::format("gang {}: {} GPUs per member; supported: 1..{}", spec.key.str(),
                                            spec.gpus_per_member, kMaxGpusPerNode));
  }
  int level = -1;
  if (spec.mode != TopologyMode::kNone) {
    level = state.LevelIndex(spec.level);
    if (level < 0) {
      return InvalidArgumentError(
          fmt::format("gang {}: topology level {} is not configured", spec.key.str(), spec.level));
    }
  }
  std::vector<PoolId> pools;
  if (spec.pool) {
    const PoolId p = state.FindPool(*spec.pool);
    if (p == kNoPool || state.pool(p).nodes.empty()) {
      GangPlanResult r;
      r.no_fit = MakeNoFit(spec, *spec.pool, NoFitReason::kNoPool);
      return r;
    }
    pools.push_back(p);
  } else {
    for (PoolId p = 0; p < state.PoolCount(); ++p)
      if (!state.pool(p).nodes.empty()) pools.push_back(p);
  }
  GangPlanResult result;
  if (pools.empty()) {
    result.no_fit = MakeNoFit(spec, "", NoFitReason::kNoPool);
    return result;
  }
  const FreeView view(state, options.own_plan, options.assume_released);
  for (PoolId p : pools) {
    PoolAttempt a = PlanInPool(view, spec, level, options, p);
    if (a.plan) {
      // Across pools: honour the preferred level first, then the pool with the most GPUs
      // left free, then best fit. Under overload the fullest pool (best fit across pools)
      // is the contended one, whose free GPUs its pool-bound gangs could use at once
      // (bench/RESULTS.md "Issue 25, session 7": more targets met over load neighbourhoods).
      const auto rank = [](const GangPlan& x) {
        return std::make_tuple(x.quality.fell_back, -x.quality.free_gpus_left_in_pool,
                               x.quality.free_gpus_left_in_domain, std::string_view(x.pool));
      };
      if (!result.plan || rank(*a.plan) < rank(*result.plan)) result.plan = std::move(a.plan);
    } else if (!result.no_fit || NoFitRank(a.no_fit) > NoFitRank(*result.no_fit)) {
      result.no_fit = std::move(a.no_fit);
    }
  }
  if (result.plan) result.no_fit.reset();
  return result;
}

Status ReservePlan(ClusterState& state, const GangPlan& plan) { return state.Reserve(plan.key, plan.members); }

}  // namespace phalanx::placement
