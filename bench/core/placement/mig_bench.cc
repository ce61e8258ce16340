// MIG best fit (core/placement/mig.h): one node's choice, and a whole extender
// prioritize pass (ChooseMigDevices on every candidate node) at 5,000 nodes.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "core/placement/mig_ledger.h"

namespace phalanx::placement {
namespace {

// 8 A100 80GB in MIG mode: 7 x 1g, 3g+2g+1g+1g, 2 x 3g, alternating; about a third held.
std::vector<MigSlice> EightGpuNode(int node) {
  std::vector<MigSlice> out;
  const std::vector<std::vector<std::string>> layouts = {
      {"1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"},
      {"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"},
      {"3g.40gb", "3g.40gb"}};
  for (int g = 0; g < 8; ++g)
    for (const std::string& p : layouts[static_cast<size_t>(g % 3)])
      out.push_back({g, p, MigComputeSlices(p).value(), "MIG-" + std::to_string(node) + "-" + std::to_string(out.size()), true});
  return out;
}

MigLedger Cluster(int nodes) {
  MigLedger ledger;
  for (int n = 0; n < nodes; ++n) {
    const NodeName name("node-" + std::to_string(n));
    auto slices = EightGpuNode(n);
    const int count = static_cast<int>(slices.size());
    ledger.SetNode(name, std::move(slices));
    std::vector<int> held;
    for (int d = n % 3; d < count; d += 3) held.push_back(d);
    (void)ledger.Allocate(PodUid("p-" + std::to_string(n)), name, held);
  }
  return ledger;
}

void BM_ChooseMigDevices(benchmark::State& state) {
  MigLedger ledger = Cluster(1);
  const MigNode& node = *ledger.Find(NodeName("node-0"));
  const MigRequest req{"1g.10gb", static_cast<int>(state.range(0))};
  for (auto _ : state) benchmark::DoNotOptimize(ChooseMigDevices(node, req));
}
BENCHMARK(BM_ChooseMigDevices)->Arg(1)->Arg(4);

void BM_MigPrioritize5000Nodes(benchmark::State& state) {
  MigLedger ledger = Cluster(5000);
  std::vector<const MigNode*> nodes;
  for (int n = 0; n < 5000; ++n) nodes.push_back(ledger.Find(NodeName("node-" + std::to_string(n))));
  const MigRequest req{"1g.10gb", 1};
  for (auto _ : state) {
    double sum = 0;
    for (const MigNode* node : nodes)
      if (auto c = ChooseMigDevices(*node, req)) sum += c->score;
    benchmark::DoNotOptimize(sum);
  }
}
BENCHMARK(BM_MigPrioritize5000Nodes)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace phalanx::placement

BENCHMARK_MAIN();
