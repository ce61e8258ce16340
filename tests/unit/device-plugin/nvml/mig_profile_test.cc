#include "device-plugin/nvml/mig_profile.h"

#include <gtest/gtest.h>

namespace phalanx::nvml {
namespace {

TEST(MigProfileTest, NamesMatchNvidiaSmiProfiles) {
  struct Case {
    const char* name;
    uint64_t gpu_mib;
    MigProfileSpec spec;
    const char* want;
  };
  // Instance sizes as `nvidia-smi mig -lgip` lists them (GiB x 1024).
  const Case cases[] = {
      // A100-SXM4-80GB, 81920 MiB = 80 GB. 9728/81920 = 0.119 -> 1/8 -> 10 GB.
      {"a100-80 1g", 81920, {1, 9728, false}, "1g.10gb"},
      {"a100-80 1g+me", 81920, {1, 9728, true}, "1g.10gb+me"},
      {"a100-80 1g.20gb", 81920, {1, 19968, false}, "1g.20gb"},  // 0.244 -> 2/8 -> 20
      {"a100-80 2g", 81920, {2, 19968, false}, "2g.20gb"},
      {"a100-80 3g", 81920, {3, 40192, false}, "3g.40gb"},       // 0.491 -> 4/8 -> 40
      {"a100-80 4g", 81920, {4, 40192, false}, "4g.40gb"},
      {"a100-80 7g", 81920, {7, 80896, false}, "7g.80gb"},       // 0.988 -> 8/8 -> 80
      // A100-SXM4-40GB, 40960 MiB = 40 GB. 4864/40960 = 0.119 -> 1/8 -> 5 GB.
      {"a100-40 1g", 40960, {1, 4864, false}, "1g.5gb"},
      {"a100-40 3g", 40960, {3, 20096, false}, "3g.20gb"},
      // H100 80GB HBM3 reports 81559 MiB, which still rounds up to 80 GB.
      {"h100 1g", 81559, {1, 9984, false}, "1g.10gb"},
      {"h100 3g", 81559, {3, 40448, false}, "3g.40gb"},
      {"h100 7g", 81559, {7, 81152, false}, "7g.80gb"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(MigProfileName(c.spec, c.gpu_mib), c.want);
  }
}

TEST(MigProfileTest, ZeroGpuMemoryGivesZeroGb) { EXPECT_EQ(MigMemoryGb(9728, 0), 0u); }

}  // namespace
}  // namespace phalanx::nvml
