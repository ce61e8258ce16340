#include "extender/state/ledger_metrics.h"

#include <bit>

#include "core/metrics/gauge.h"
#include "extender/extender.h"

namespace phalanx::extender {
namespace {

using GpusByCount = std::map<int, double>;  // GPUs per pod -> pods

// GPU pods that still need (or hold) GPUs, grouped by the pool they ask for ("" = any).
std::map<std::string, GpusByCount, std::less<>> MixBySelector(const Ledger& ledger) {
  std::map<std::string, GpusByCount, std::less<>> out;
  for (const auto& [uid, rec] : ledger.pods()) {
    const PodInfo& p = rec.info;
    if (p.gpus <= 0 || p.Terminal() || p.deleting) continue;
    out[p.pool_selector][p.gpus] += 1;
  }
  return out;
}

std::vector<placement::TaskShape> MixFor(const std::map<std::string, GpusByCount, std::less<>>& by_selector,
                                         std::string_view pool) {
  GpusByCount counts;
  for (std::string_view selector : {std::string_view(), pool}) {
    auto it = by_selector.find(selector);
    if (it == by_selector.end()) continue;
    for (const auto& [gpus, n] : it->second) counts[gpus] += n;
    if (pool.empty()) break;  // "" is both: count it once
  }
  std::vector<placement::TaskShape> shapes;
  if (counts.empty()) {
    for (int gpus : {1, 2, 4, 8}) shapes.push_back({.gpus = gpus, .milli = placement::kMilliPerGpu, .popularity = 1});
    return shapes;
  }
  for (const auto& [gpus, n] : counts) {
    shapes.push_back({.gpus = gpus, .milli = placement::kMilliPerGpu, .popularity = n});
  }
  return shapes;
}

std::string PoolLabel(const std::string& pool) { return pool.empty() ? std::string(kUnlabelledPool) : pool; }

}  // namespace

std::vector<placement::TaskShape> LedgerTaskMix(const Ledger& ledger, std::string_view pool) {
  return MixFor(MixBySelector(ledger), pool);
}

LedgerGpuSummary SummarizeLedger(const Ledger& ledger) {
  LedgerGpuSummary out;
  const placement::ClusterState& state = ledger.state();
  const auto by_selector = MixBySelector(ledger);
  struct PoolWork {
    PoolGpuSummary* summary;
    std::vector<placement::TaskShape> shapes;
    double frag_milli = 0, free_milli = 0;
  };
  std::vector<PoolWork> pools(static_cast<size_t>(state.PoolCount()));
  for (placement::PoolId id = 0; id < state.PoolCount(); ++id) {
    const std::string& name = state.pool(id).name;
    pools[static_cast<size_t>(id)] = {&out.pools[PoolLabel(name)], MixFor(by_selector, name)};
  }
  std::vector<int> free;
  for (placement::NodeIndex i : state.Nodes()) {
    const placement::NodeState& n = state.node(i);
    if (n.pool == placement::kNoPool) continue;
    PoolWork& w = pools[static_cast<size_t>(n.pool)];
    PoolGpuSummary& s = *w.summary;
    const placement::GpuMask whole = placement::AllGpus(n.spec.gpu_count) & ~n.spec.mig;
    const placement::GpuMask allocated = (n.allocated | n.shared) & whole;
    const placement::GpuMask reserved = n.reserved & whole & ~allocated;
    const placement::GpuMask unhealthy = whole & ~n.spec.healthy & ~allocated & ~reserved;
    const placement::GpuMask idle = whole & ~allocated & ~reserved & ~unhealthy;
    s.allocated += std::popcount(allocated);
    s.reserved += std::popcount(reserved);
    s.unhealthy += std::popcount(unhealthy);
    if (n.spec.schedulable) {
      s.free += std::popcount(idle);
    } else {
      s.cordoned += std::popcount(idle);
    }
    // FGD over the same free milli-GPUs as placement::ClusterFragmentation(state, shapes).
    free.resize(static_cast<size_t>(n.spec.gpu_count));
    double node_free = 0;
    for (int g = 0; g < n.spec.gpu_count; ++g) node_free += free[static_cast<size_t>(g)] = state.FreeMilli(i, g);
    w.frag_milli += placement::NodeFragmentationMilli(free, w.shapes);
    w.free_milli += node_free;
  }
  for (const PoolWork& w : pools) {
    placement::FragmentationReport& f = w.summary->fragmentation;
    f.fragmented_gpus = w.frag_milli / placement::kMilliPerGpu;
    f.free_gpus = w.free_milli / placement::kMilliPerGpu;
    f.ratio = w.free_milli > 0 ? w.frag_milli / w.free_milli : 0;
  }
  for (const auto& [key, g] : ledger.gangs()) {
    if (g.plan) continue;
    for (const PodUid& uid : g.members) {
      const PodRecord* rec = ledger.FindPod(uid);
      if (rec && rec->info.node_name.empty() && !rec->info.Terminal()) {
        out.pending_gangs++;
        break;
      }
    }
  }
  return out;
}

LedgerMetrics::LedgerMetrics(metrics::Registry& registry) {
  if (auto f = registry.AddGauge("phalanx_extender_gpus",
                                 "Whole GPUs in the extender's ledger by capacity pool and state "
                                 "(free, allocated, reserved, unhealthy, cordoned).",
                                 {"pool", "state"});
      f.ok()) {
    gpus_ = *f;
  }
  if (auto f = registry.AddGauge("phalanx_extender_fragmentation_ratio",
                                 "FGD fragmentation of the pool's free GPUs for the current task mix "
                                 "(0 = every free GPU usable, 1 = none).",
                                 {"pool"});
      f.ok()) {
    fragmentation_ = *f;
  }
  if (auto f = registry.AddGauge("phalanx_extender_pending_gangs",
                                 "Gangs without an admitted plan that still have an unbound member.");
      f.ok()) {
    if (auto g = (*f)->WithLabels({}); g.ok()) pending_gangs_ = *g;
  }
}

void LedgerMetrics::Update(const LedgerGpuSummary& summary) {
  std::lock_guard lock(mu_);
  auto set = [](metrics::GaugeFamily* family, const std::vector<std::string>& labels, double value) {
    if (!family) return;
    if (auto g = family->WithLabels(labels); g.ok()) (*g)->Set(value);
  };
  for (const std::string& pool : seen_pools_) {
    if (summary.pools.contains(pool)) continue;
    for (const char* state : {"free", "allocated", "reserved", "unhealthy", "cordoned"}) set(gpus_, {pool, state}, 0);
    set(fragmentation_, {pool}, 0);
  }
  for (const auto& [pool, s] : summary.pools) {
    seen_pools_.insert(pool);
    set(gpus_, {pool, "free"}, s.free);
    set(gpus_, {pool, "allocated"}, s.allocated);
    set(gpus_, {pool, "reserved"}, s.reserved);
    set(gpus_, {pool, "unhealthy"}, s.unhealthy);
    set(gpus_, {pool, "cordoned"}, s.cordoned);
    set(fragmentation_, {pool}, s.fragmentation.ratio);
  }
  if (pending_gangs_) pending_gangs_->Set(summary.pending_gangs);
}

void LedgerMetrics::Refresh(const Extender& extender) {
  LedgerGpuSummary summary;
  extender.ReadLedger([&](const Ledger& ledger) { summary = SummarizeLedger(ledger); });
  Update(summary);
}

}  // namespace phalanx::extender
