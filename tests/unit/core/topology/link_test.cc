#include "core/topology/link.h"

#include <gtest/gtest.h>

#include "core/topology/link_matrix.h"

namespace phalanx::topology {
namespace {

TEST(LinkTest, ParsesEveryTokenAndPrintsItBack) {
  for (const char* token : {"X", "NV1", "NV4", "NV12", "NV18", "NV64", "PIX", "PXB", "PHB", "NODE", "SYS"}) {
    SCOPED_TRACE(token);
    Result<Link> link = ParseLinkToken(token);
    ASSERT_TRUE(link.ok()) << link.status();
    EXPECT_EQ(link->Token(), token);
  }
  EXPECT_EQ(ParseLinkToken("NV18")->nvlinks(), 18);
  EXPECT_EQ(ParseLinkToken("NV18")->kind(), LinkKind::kNvlink);
  EXPECT_EQ(ParseLinkToken("NODE")->kind(), LinkKind::kNode);
  EXPECT_TRUE(ParseLinkToken("X")->is_self());
}

TEST(LinkTest, RejectsNonCanonicalTokens) {
  // Lower case, leading zeros, signs, out-of-range counts, nvidia-smi's legacy SOC and
  // padding would not re-encode to the same bytes, so they are refused.
  for (const char* token : {"", "x", "nv4", "NV", "NV0", "NV04", "NV65", "NV100", "NV+4", "NV-4", "NV4 ",
                            " PIX", "SOC", "PCIE", "NVX", "NV1.5"}) {
    SCOPED_TRACE(token);
    Result<Link> link = ParseLinkToken(token);
    ASSERT_FALSE(link.ok());
    EXPECT_EQ(link.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(link.status().message(), std::string("unknown link token \"") + token +
                                           "\" (expected X, NV<1..64>, PIX, PXB, PHB, NODE or SYS)");
  }
}

TEST(LinkTest, NominalPcieBandwidthFallsWithDistance) {
  EXPECT_EQ(PcieBandwidth(LinkKind::kPix), 25.0);
  EXPECT_EQ(PcieBandwidth(LinkKind::kPxb), 22.0);
  EXPECT_EQ(PcieBandwidth(LinkKind::kPhb), 20.0);
  EXPECT_EQ(PcieBandwidth(LinkKind::kNode), 16.0);
  EXPECT_EQ(PcieBandwidth(LinkKind::kSys), 10.0);
  EXPECT_EQ(PcieBandwidth(LinkKind::kNvlink), 0.0);
  EXPECT_EQ(PcieBandwidth(LinkKind::kSelf), 0.0);
}

TEST(LinkTest, MapsNvlinkVersionsToPerLinkRates) {
  EXPECT_EQ(NvlinkGbpsPerLinkForVersion(1), 20.0);
  EXPECT_EQ(NvlinkGbpsPerLinkForVersion(2), 25.0);
  EXPECT_EQ(NvlinkGbpsPerLinkForVersion(3), 25.0);
  EXPECT_EQ(NvlinkGbpsPerLinkForVersion(4), 25.0);
  EXPECT_EQ(NvlinkGbpsPerLinkForVersion(5), 50.0);
  EXPECT_EQ(NvlinkGbpsPerLinkForVersion(0), 0.0);
  EXPECT_EQ(NvlinkGbpsPerLinkForVersion(9), 0.0);
}

TEST(LinkMatrixTest, StartsAsSysWithSelfDiagonalAndSetsBothDirections) {
  LinkMatrix m(3);
  EXPECT_EQ(m.size(), 3);
  EXPECT_TRUE(m.at(1, 1).is_self());
  EXPECT_EQ(m.at(0, 2), Link::Pcie(LinkKind::kSys));
  m.Set(2, 0, Link::Nvlink(4));
  EXPECT_EQ(m.at(0, 2), Link::Nvlink(4));
  EXPECT_EQ(m.at(2, 0), Link::Nvlink(4));
  EXPECT_EQ(m.at(0, 1), Link::Pcie(LinkKind::kSys));
}

TEST(LinkMatrixTest, AllToAllOnlyWhenEveryPairHasTheSameNvlinkBond) {
  LinkMatrix m(4);
  EXPECT_FALSE(m.IsNvlinkAllToAll());
  for (int i = 0; i < 4; ++i) {
    for (int j = i + 1; j < 4; ++j) m.Set(i, j, Link::Nvlink(18));
  }
  EXPECT_TRUE(m.IsNvlinkAllToAll());
  m.Set(1, 3, Link::Nvlink(12));
  EXPECT_FALSE(m.IsNvlinkAllToAll());
  m.Set(1, 3, Link::Pcie(LinkKind::kPix));
  EXPECT_FALSE(m.IsNvlinkAllToAll());
  EXPECT_FALSE(LinkMatrix(1).IsNvlinkAllToAll());
  EXPECT_FALSE(LinkMatrix().IsNvlinkAllToAll());
}

}  // namespace
}  // namespace phalanx::topology
