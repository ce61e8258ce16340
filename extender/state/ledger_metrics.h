// Cluster GPU gauges from the extender's ledger, for the dashboard's allocation and
// fragmentation panels and the fragmentation alert (docs/operations.md "Metrics"):
//
//   phalanx_extender_gpus{pool,state}            whole GPUs by state, a partition of every
//       non-MIG GPU the ledger knows: allocated (held by pods, wholly or by shares) >
//       reserved (by an admitted gang plan) > unhealthy > cordoned (idle on an
//       unschedulable node) > free. MIG GPUs are accounted as MIG devices, not here.
//   phalanx_extender_fragmentation_ratio{pool}   FGD fragmentation / free capacity
//       (core/placement/fragmentation.h, the simulator's definition) over the pool's nodes,
//       for the task mix of the GPU pods the ledger knows (see LedgerTaskMix).
//   phalanx_extender_pending_gangs               gangs without a plan that still have an
//       unbound member (waiting for members or for capacity).
//
// pool = the capacity pool (node label phalanx.io/gpu.product); nodes without it are
// pool="unlabelled". Computed on scrape: one pass over nodes and pods under the ledger's
// read lock (3.4 ms at 5,000 nodes and 19,500 pods; bench/RESULTS.md, Extender). A pool that
// vanishes keeps its series at 0 (metric children are never removed).
//
// SummarizeLedger is pure; LedgerMetrics is thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/metrics/registry.h"
#include "core/placement/fragmentation.h"
#include "extender/state/ledger.h"

namespace phalanx::extender {

class Extender;

inline constexpr std::string_view kUnlabelledPool = "unlabelled";

struct PoolGpuSummary {
  int free = 0;
  int allocated = 0;
  int reserved = 0;
  int unhealthy = 0;
  int cordoned = 0;
  placement::FragmentationReport fragmentation;
};

struct LedgerGpuSummary {
  std::map<std::string, PoolGpuSummary> pools;  // by pool label value
  int pending_gangs = 0;
};

// The FGD task mix for `pool`: the GPU requests of the live GPU pods that can land there
// (nodeSelector on the pool, or none), weighted by pod count. When no such pod exists the
// mix is 1, 2, 4 and 8 whole GPUs, equally likely: what a training cluster typically asks.
std::vector<placement::TaskShape> LedgerTaskMix(const Ledger& ledger, std::string_view pool);

LedgerGpuSummary SummarizeLedger(const Ledger& ledger);

// The gauges above, registered on construction; Refresh() recomputes them from the
// extender's ledger (the daemon calls it before every /metrics exposition).
class LedgerMetrics {
 public:
  explicit LedgerMetrics(metrics::Registry& registry);

  void Update(const LedgerGpuSummary& summary);
  void Refresh(const Extender& extender);

 private:
  std::mutex mu_;  // one update at a time, so concurrent scrapes never interleave pools
  metrics::GaugeFamily* gpus_ = nullptr;
  metrics::GaugeFamily* fragmentation_ = nullptr;
  metrics::Gauge* pending_gangs_ = nullptr;
  std::set<std::string> seen_pools_;  // guarded by mu_: pools exported so far
};

}  // namespace phalanx::extender
