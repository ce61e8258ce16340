#include "core/topology/render_matrix.h"

#include <gtest/gtest.h>

#include "core/topology/reference_machines.h"
#include "tests/unit/core/topology/topology_test_data.h"

namespace phalanx::topology {
namespace {

// Golden: tests/data/topology/pcie-4gpu.txt (regenerate with PHALANX_UPDATE_GOLDEN=1 and
// review the diff).
TEST(RenderMatrixTest, MatchesGoldenForPcie4Gpu) {
  std::string rendered = RenderMatrix(MakePcie4GpuNode());
  if (testing::UpdateGolden()) testing::WriteDataFile("pcie-4gpu.txt", rendered);
  EXPECT_EQ(rendered, testing::ReadDataFile("pcie-4gpu.txt"));
}

TEST(RenderMatrixTest, ShowsLinksNumaAndBandwidthRows) {
  std::string rendered = RenderMatrix(MakePcie4GpuNode());
  EXPECT_NE(rendered.find("        GPU0  GPU1  GPU2  GPU3  NUMA Affinity\n"), std::string::npos) << rendered;
  EXPECT_NE(rendered.find("  GPU0  X     NV4   SYS   SYS   0\n"), std::string::npos) << rendered;
  EXPECT_NE(rendered.find("  GPU3  SYS   SYS   NV4   X     1\n"), std::string::npos) << rendered;
  EXPECT_NE(rendered.find("  GPU0  -      56.25  10     10\n"), std::string::npos) << rendered;
  EXPECT_NE(rendered.find("NVLink all-to-all: no"), std::string::npos);
  EXPECT_NE(rendered.find("MIG devices: none\n"), std::string::npos);
  for (size_t pos = rendered.find(" \n"); pos != std::string::npos;) {
    ADD_FAILURE() << "trailing space at byte " << pos;
    break;
  }
}

TEST(RenderMatrixTest, ListsMigDevicesWithTheirSlices) {
  NodeTopology t = MakeA100MigNode();
  t.gpus[5].health = Health::kUnhealthy;
  t.gpus[5].health_reason = "XID 79";
  std::string rendered = RenderMatrix(t);
  EXPECT_NE(rendered.find("NVLink all-to-all: yes"), std::string::npos);
  EXPECT_NE(rendered.find("Unhealthy (XID 79)"), std::string::npos);
  const std::string& gi1 = t.gpus[1].mig_devices[0].uuid.str();
  EXPECT_NE(rendered.find("  1    3g.40gb  1   0   4-7     40192 MiB  " + gi1 + "\n"), std::string::npos)
      << rendered;
  EXPECT_NE(rendered.find("  0    1g.10gb  7   0   6-6     9728 MiB   "), std::string::npos) << rendered;
}

TEST(RenderMatrixTest, SurvivesAModelWhoseMatrixDoesNotMatchItsGpus) {
  NodeTopology t = MakePcie4GpuNode();
  t.links = LinkMatrix(2);
  EXPECT_NE(RenderMatrix(t).find("Links: matrix is 2x2 for 4 GPUs"), std::string::npos);
}

}  // namespace
}  // namespace phalanx::topology
