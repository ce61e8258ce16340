// The MIG filter tells devices held by lower tiers (Failed: preemption may help) from the
// rest (unresolvable) with the holder priorities MigLedger keeps per device, instead of
// looking each holder pod up in the ledger. Randomized equivalence with that old walk over
// random clusters, holdings, priority changes, node republishes and copies.
#include <algorithm>
#include <random>

#include <gtest/gtest.h>

#include "core/topology/reference_machines.h"
#include "extender/mig/mig_filter.h"
#include "tests/unit/extender/test_cluster.h"

namespace phalanx::extender::testing {
namespace {

PodInfo MigPod(const std::string& name, const std::string& profile, int count, int priority, const std::string& node) {
  PodInfo p = GpuPod(name, 0, priority, node);
  p.mig[profile] = count;
  p.mig_container = "infer";
  return p;
}

enum class Verdict { kPassed, kFailed, kUnresolvable };

// The filter's verdict as it was computed before holder priorities were kept: each holder
// of a device of the profile looked up in the ledger.
Verdict OldWalk(const Ledger& ledger, const std::string& node, const PodInfo& pod, const placement::MigRequest& req) {
  const placement::MigNode* mig = ledger.mig().Find(node);
  if (mig == nullptr) return Verdict::kUnresolvable;
  const placement::MigFeasibility f = placement::CheckMigFit(*mig, req);
  if (f.fits()) return Verdict::kPassed;
  if (f.unresolvable()) return Verdict::kUnresolvable;
  int lower = 0;
  for (int d : mig->DevicesOf(req.profile)) {
    const auto i = static_cast<size_t>(d);
    if (!mig->slices()[i].healthy || mig->holder(i).empty()) continue;
    const PodRecord* holder = ledger.FindPod(mig->holder(i));
    if (holder && holder->info.priority < pod.priority) ++lower;
  }
  return f.free + lower >= req.count ? Verdict::kFailed : Verdict::kUnresolvable;
}

std::map<std::string, Verdict> NewFilter(const Ledger& ledger, const FilterArgs& args) {
  const FilterResult r = FilterMig(ledger, args);
  std::map<std::string, Verdict> out;
  for (std::string_view n : r.passed) out[std::string(n)] = Verdict::kPassed;
  for (const auto& [n, why] : r.failed) out[std::string(n)] = Verdict::kFailed;
  for (const auto& [n, why] : r.unresolvable) out[std::string(n)] = Verdict::kUnresolvable;
  return out;
}

TEST(MigHolderPriorityTest, FilterMatchesTheHolderWalkOnRandomClusters) {
  const std::vector<std::string> profiles = {"1g.10gb", "2g.20gb", "3g.40gb"};
  const std::vector<int> priorities = {0, 10, 100, 1000, 100000};
  int compared = 0, failed_seen = 0, unresolvable_in_use_seen = 0;
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
    Ledger ledger(DefaultConfig().topology_levels);
    const MonotonicTime now{};
    std::vector<std::string> nodes;
    for (int i = 0; i < 6; ++i) {
      nodes.push_back("mig-" + std::to_string(i));
      ASSERT_TRUE(ledger.UpsertNode(A100MigNode(nodes.back())).ok());
    }
    std::vector<PodInfo> pods;
    for (int step = 0; step < 300; ++step) {
      const int op = pick(10);
      if (op < 5 || pods.empty()) {  // a pod bound by the scheduler (charged by the ledger)
        PodInfo p = MigPod("p" + std::to_string(step), profiles[static_cast<size_t>(pick(3))], 1 + pick(2),
                           priorities[static_cast<size_t>(pick(5))], nodes[static_cast<size_t>(pick(6))]);
        ledger.UpsertPod(p, now);
        pods.push_back(p);
      } else if (op == 5) {  // the extender's own bind: devices chosen and assumed
        PodInfo p = MigPod("b" + std::to_string(step), profiles[static_cast<size_t>(pick(3))], 1,
                           priorities[static_cast<size_t>(pick(5))], "");
        ledger.UpsertPod(p, now);
        if (AssumeMigForBind(ledger, p, NodeName(nodes[static_cast<size_t>(pick(6))])).ok()) pods.push_back(p);
      } else if (op == 6) {  // gone
        const size_t i = static_cast<size_t>(pick(static_cast<int>(pods.size())));
        ledger.RemovePod(pods[i].uid);
        pods.erase(pods.begin() + static_cast<std::ptrdiff_t>(i));
      } else if (op == 7) {  // its priority changed (its PriorityClass appeared late)
        PodInfo& p = pods[static_cast<size_t>(pick(static_cast<int>(pods.size())))];
        p.priority = priorities[static_cast<size_t>(pick(5))];
        ledger.UpsertPod(p, now);
      } else if (op == 8) {  // the device plugin republished a node, some devices unhealthy
        const std::string& name = nodes[static_cast<size_t>(pick(6))];
        NodeInfo node = A100MigNode(name);
        for (int k = pick(3); k > 0; --k) {
          const int gpu = pick(2), device = pick(gpu == 0 ? 7 : 4);
          node.devices["MIG-" + name + "-" + std::to_string(gpu) + "-" + std::to_string(device)].healthy = false;
        }
        ASSERT_TRUE(ledger.UpsertNode(node).ok());
      } else {  // compare, on the ledger and on a copy of its MIG ledger
        const placement::MigLedger copy = ledger.mig();
        for (const std::string& n : nodes) {
          const auto a = ledger.mig().View(n), b = copy.View(n);
          ASSERT_NE(a.node, nullptr);
          ASSERT_EQ(std::vector<int32_t>(a.held_priority.begin(), a.held_priority.end()),
                    std::vector<int32_t>(b.held_priority.begin(), b.held_priority.end()));
          ASSERT_EQ(a.lowest_held, b.lowest_held);
          ASSERT_EQ(a.lowest_held, *std::min_element(a.held_priority.begin(), a.held_priority.end()));
        }
      }
      // Every few steps: a random request against every node.
      if (step % 5 != 0) continue;
      const PodInfo pod = MigPod("q", profiles[static_cast<size_t>(pick(3))], 1 + pick(3),
                                 priorities[static_cast<size_t>(pick(5))], "");
      const placement::MigRequest req{pod.mig.begin()->first, pod.mig.begin()->second};
      FilterArgs args = Args(pod, nodes);
      const auto verdicts = NewFilter(ledger, args);
      for (const std::string& n : nodes) {
        const Verdict old = OldWalk(ledger, n, pod, req);
        ASSERT_EQ(verdicts.at(n), old) << "seed " << seed << " step " << step << " node " << n << " profile "
                                       << req.profile << " x" << req.count << " priority " << pod.priority;
        ++compared;
        failed_seen += old == Verdict::kFailed;
        const placement::MigFeasibility f = placement::CheckMigFit(*ledger.mig().Find(n), req);
        unresolvable_in_use_seen += old == Verdict::kUnresolvable && !f.fits() && !f.unresolvable();
      }
    }
  }
  // The cases that need the priorities were all exercised.
  EXPECT_GT(compared, 1000);
  EXPECT_GT(failed_seen, 50);
  EXPECT_GT(unresolvable_in_use_seen, 50);
}

}  // namespace
}  // namespace phalanx::extender::testing
