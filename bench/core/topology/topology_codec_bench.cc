// Decoding cost of the phalanx.io/gpu-topology annotation: the extender decodes it once per
// node at startup (5,000 nodes) and on every node update.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "core/topology/mig_layout.h"
#include "core/topology/reference_machines.h"
#include "core/topology/topology_codec.h"

namespace phalanx::topology {
namespace {

NodeTopology FullyPartitioned64() {
  NodeTopology t = MakeNvSwitchNode(kMaxGpus, "NVIDIA H100 80GB HBM3", 81559, 18);
  for (Gpu& gpu : t.gpus) {
    if (!ApplyMigLayout(gpu, std::vector<std::string>(7, "1g.10gb")).ok()) std::abort();
  }
  return t;
}

void BM_DecodeTopology(benchmark::State& state, NodeTopology topology) {
  const std::string doc = *EncodeTopology(topology);
  for (auto _ : state) {
    Result<NodeTopology> r = DecodeTopology(doc);
    if (!r.ok()) state.SkipWithError(r.status().ToString().c_str());
    benchmark::DoNotOptimize(r);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * doc.size()));
  state.counters["docBytes"] = static_cast<double>(doc.size());
}

void BM_EncodeTopology(benchmark::State& state, NodeTopology topology) {
  for (auto _ : state) {
    Result<std::string> r = EncodeTopology(topology);
    benchmark::DoNotOptimize(r);
  }
}

BENCHMARK_CAPTURE(BM_DecodeTopology, 8gpus, MakeDgxH100Node());
BENCHMARK_CAPTURE(BM_DecodeTopology, 8gpus_mig, MakeA100MigNode());
BENCHMARK_CAPTURE(BM_DecodeTopology, 4gpus_pcie, MakePcie4GpuNode());
BENCHMARK_CAPTURE(BM_DecodeTopology, 64gpus_all_mig, FullyPartitioned64());
BENCHMARK_CAPTURE(BM_EncodeTopology, 8gpus, MakeDgxH100Node());

}  // namespace
}  // namespace phalanx::topology

BENCHMARK_MAIN();
