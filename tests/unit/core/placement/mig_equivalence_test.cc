// MigNode keeps per-profile, per-device and per-GPU counts so the extender's prioritize
// reads no MigSlice; CheckMigFit and ChooseMigDevices must answer exactly as the scans
// did (mig_reference.h) after any sequence of allocations, releases and republishes.
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/placement/mig_ledger.h"
#include "tests/unit/core/placement/mig_reference.h"

namespace phalanx::placement {
namespace {

const char* const kProfiles[] = {"1g.10gb", "2g.20gb", "3g.40gb", "7g.80gb", "1c.3g.40gb"};

// A node of up to 8 GPUs, each cut into random devices; some GPUs unhealthy. Device IDs
// are stable per (GPU, position), so a republish carries holdings over.
std::vector<MigSlice> RandomSlices(std::mt19937& rng) {
  std::vector<MigSlice> out;
  const int gpus = 1 + static_cast<int>(rng() % 8);
  for (int g = 0; g < gpus; ++g) {
    if (rng() % 5 == 0) continue;  // a GPU not in MIG mode
    const bool healthy = rng() % 6 != 0;
    const int devices = 1 + static_cast<int>(rng() % 7);
    for (int d = 0; d < devices; ++d) {
      const std::string profile = kProfiles[rng() % 4];
      out.push_back({g, profile, MigComputeSlices(profile).value(),
                     "MIG-" + std::to_string(g) + "-" + std::to_string(d), healthy});
    }
  }
  return out;
}

void ExpectSameAnswers(const MigNode& node, const std::string& where) {
  int free_compute = 0, total_compute = 0;
  for (size_t i = 0; i < node.slices().size(); ++i) {
    total_compute += node.slices()[i].compute_slices;
    free_compute += reference::ReferenceIsFree(node, i) ? node.slices()[i].compute_slices : 0;
    ASSERT_EQ(node.IsFree(i), reference::ReferenceIsFree(node, i)) << where;
  }
  ASSERT_EQ(node.TotalCompute(), total_compute) << where;
  ASSERT_EQ(node.FreeCompute(), free_compute) << where;
  for (int g = 0; g < 9; ++g) {
    int free = 0, total = 0;
    for (size_t i = 0; i < node.slices().size(); ++i) {
      if (node.slices()[i].gpu != g) continue;
      total += node.slices()[i].compute_slices;
      free += reference::ReferenceIsFree(node, i) ? node.slices()[i].compute_slices : 0;
    }
    ASSERT_EQ(node.FreeComputeOnGpu(g), free) << where << " gpu " << g;
    ASSERT_EQ(node.TotalComputeOnGpu(g), total) << where << " gpu " << g;
  }
  for (const char* profile : kProfiles) {
    for (int count = 0; count <= 5; ++count) {
      const MigRequest r{profile, count};
      const MigFeasibility want = reference::ReferenceCheckMigFit(node, r);
      const MigFeasibility got = CheckMigFit(node, r);
      ASSERT_EQ(got.reason, want.reason) << where << " " << profile << " x" << count;
      ASSERT_EQ(got.free, want.free) << where << " " << profile;
      ASSERT_EQ(got.total, want.total) << where << " " << profile;
      ASSERT_EQ(got.Message(), want.Message()) << where;
      const auto want_choice = reference::ReferenceChooseMigDevices(node, r);
      const auto got_choice = ChooseMigDevices(node, r);
      ASSERT_EQ(got_choice.has_value(), want_choice.has_value()) << where << " " << profile << " x" << count;
      if (!want_choice) continue;
      ASSERT_EQ(got_choice->devices, want_choice->devices) << where << " " << profile << " x" << count;
      ASSERT_DOUBLE_EQ(got_choice->score, want_choice->score) << where << " " << profile << " x" << count;
    }
  }
}

TEST(MigEquivalenceTest, IndexedFitAndBestFitMatchTheScans) {
  int choices = 0, in_use = 0;
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    std::mt19937 rng(seed);
    MigLedger ledger;
    const NodeName node("n");
    ledger.SetNode(node, RandomSlices(rng));
    std::vector<PodUid> pods;
    for (int step = 0; step < 80; ++step) {
      const MigNode* mig = ledger.Find(node);
      if (!mig) {
        ledger.SetNode(node, RandomSlices(rng));
        continue;
      }
      const int r = static_cast<int>(rng() % 10);
      if (r < 5) {  // a pod takes the best fit of a random request, as the extender's bind does
        const MigRequest req{kProfiles[rng() % 5], 1 + static_cast<int>(rng() % 3)};
        if (auto c = ChooseMigDevices(*mig, req)) {
          const PodUid pod("p" + std::to_string(step));
          ASSERT_TRUE(ledger.Allocate(pod, node, c->devices).ok());
          pods.push_back(pod);
        }
      } else if (r < 8 && !pods.empty()) {
        const size_t k = rng() % pods.size();
        (void)ledger.Release(pods[k]);
        pods.erase(pods.begin() + static_cast<std::ptrdiff_t>(k));
      } else {  // the device plugin republishes: health and layout may change, holdings carry over
        ledger.SetNode(node, RandomSlices(rng));
        std::erase_if(pods, [&](const PodUid& p) { return ledger.FindPod(p) == nullptr; });
      }
      if (const MigNode* now = ledger.Find(node)) {
        ExpectSameAnswers(*now, "seed " + std::to_string(seed) + " step " + std::to_string(step));
        if (HasFatalFailure()) return;
        for (const char* profile : kProfiles) {
          choices += reference::ReferenceChooseMigDevices(*now, {profile, 1}).has_value();
          in_use += reference::ReferenceCheckMigFit(*now, {profile, 1}).reason == MigUnfitReason::kInUse;
        }
      }
    }
  }
  // The random nodes must reach both fits and full profiles, or the check proves little.
  EXPECT_GT(choices, 2000);
  EXPECT_GT(in_use, 200);
}

}  // namespace
}  // namespace phalanx::placement
