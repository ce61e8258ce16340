#include "core/topology/topology_validation.h"

#include <gtest/gtest.h>

#include "core/topology/reference_machines.h"

namespace phalanx::topology {
namespace {

TEST(TopologyValidationTest, RecognisesMigProfileNames) {
  for (const char* ok : {"1g.5gb", "1g.10gb", "3g.40gb", "7g.80gb", "1c.3g.40gb", "2c.3g.20gb", "1g.10gb+me",
                         "1g.12gb", "7g.180gb", "1g.10gb+me+gfx"}) {
    EXPECT_TRUE(IsMigProfileName(ok)) << ok;
  }
  for (const char* bad : {"", "g.10gb", "0g.10gb", "01g.10gb", "9g.10gb", "1g.gb", "1g.10GB", "1g.10gb+",
                          "1g.10gb+ME", "4c.3g.40gb", "1g.10gb ", "mig-1g.10gb", "1g.0gb", "3g.40gb.1"}) {
    EXPECT_FALSE(IsMigProfileName(bad)) << bad;
  }
}

TEST(TopologyValidationTest, RecognisesPciBusIdsInNvmlAndSysfsSpelling) {
  for (const char* ok : {"00000000:18:00.0", "0000:18:00.0", "00000000:DB:00.0", "0000:db:1f.7"}) {
    EXPECT_TRUE(IsPciBusId(ok)) << ok;
  }
  for (const char* bad : {"", "18:00.0", "000:18:00.0", "00000000:18:00", "00000000:18:00.00",
                          "00000000-18:00.0", "0000000g:18:00.0", "00000000:18:0.0", "00000000:180:00.0"}) {
    EXPECT_FALSE(IsPciBusId(bad)) << bad;
  }
}

TEST(TopologyValidationTest, AcceptsTheReferenceMachines) {
  EXPECT_EQ(ValidateTopology(MakeDgxH100Node()), OkStatus());
  EXPECT_EQ(ValidateTopology(MakeA100MigNode()), OkStatus());
  EXPECT_EQ(ValidateTopology(MakePcie4GpuNode()), OkStatus());
}

TEST(TopologyValidationTest, RejectsModelOnlyViolations) {
  // States the JSON decoder can never produce, but a hand-built model can.
  NodeTopology t = MakeDgxH100Node();
  t.gpus[4].nvlink_gbps_per_link = -1;
  EXPECT_EQ(ValidateTopology(t).message(), "gpus[4].nvlinkGBpsPerLink: -1 is out of range 0..1000");
  t = MakeDgxH100Node();
  t.gpus[4].health_reason = std::string("bad \xc0\xaf overlong", 15);
  t.gpus[4].health = Health::kUnhealthy;
  EXPECT_EQ(ValidateTopology(t).message(),
            "gpus[4].healthReason: must be UTF-8 text without control characters");
  t.gpus[4].health_reason = "ok ✓ reason";
  EXPECT_EQ(ValidateTopology(t), OkStatus());
  t.gpus[4].health_reason = std::string(1025, 'r');
  EXPECT_EQ(ValidateTopology(t).message(), "gpus[4].healthReason: 1025 bytes exceed the limit of 1024");
  t = MakeDgxH100Node();
  t.gpus[2].index = 7;
  EXPECT_EQ(ValidateTopology(t).message(),
            "gpus[2].index: 7 is out of order: GPUs must be listed by index, expected 2");
  t = MakeDgxH100Node();
  t.gpus[0].uuid = GpuUuid("GPU-" + std::string(200, 'a'));
  EXPECT_EQ(ValidateTopology(t).message(),
            "gpus[0].uuid: must be GPU-<id> with at most 128 printable ASCII characters and no spaces");
  t = MakeDgxH100Node();
  t.cuda_version = "12.4\t";
  EXPECT_EQ(ValidateTopology(t).message(),
            "cudaVersion: must be at most 64 printable ASCII characters without spaces");
}

}  // namespace
}  // namespace phalanx::topology
