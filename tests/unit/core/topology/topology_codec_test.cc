#include "core/topology/topology_codec.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/topology/mig_layout.h"
#include "core/topology/reference_machines.h"
#include "tests/unit/core/topology/topology_test_data.h"

namespace phalanx::topology {
namespace {

using testing::ReadDataFile;

struct Reference {
  const char* file;
  NodeTopology (*build)();
};

const Reference kReferences[] = {
    {"dgx-h100.json", &MakeDgxH100Node},
    {"a100-mig.json", &MakeA100MigNode},
    {"pcie-4gpu.json", &MakePcie4GpuNode},
};

TEST(TopologyCodecTest, ReferenceMachinesRoundTrip) {
  for (const Reference& ref : kReferences) {
    SCOPED_TRACE(ref.file);
    NodeTopology built = ref.build();
    Result<std::string> encoded = EncodeTopology(built);
    ASSERT_TRUE(encoded.ok()) << encoded.status();
    Result<NodeTopology> decoded = DecodeTopology(*encoded);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(*decoded, built);
    EXPECT_EQ(*EncodeTopology(*decoded), *encoded);
  }
}

// The checked-in files are the encoder's output plus a final newline. Regenerate them
// with PHALANX_UPDATE_GOLDEN=1 when the format changes on purpose (and bump the version
// if old readers would break).
TEST(TopologyCodecTest, CheckedInReferenceFilesMatchTheBuildersByteForByte) {
  for (const Reference& ref : kReferences) {
    SCOPED_TRACE(ref.file);
    std::string expected = *EncodeTopology(ref.build()) + "\n";
    if (testing::UpdateGolden()) testing::WriteDataFile(ref.file, expected);
    std::string file = ReadDataFile(ref.file);
    EXPECT_EQ(file, expected);
    Result<NodeTopology> decoded = DecodeTopology(file);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(*decoded, ref.build());
    EXPECT_EQ(*EncodeTopology(*decoded) + "\n", file);
  }
}

TEST(TopologyCodecTest, EncodingIsCompactAndStartsWithTheVersion) {
  std::string dgx = *EncodeTopology(MakeDgxH100Node());
  // An 8-GPU node must stay far below the 256 KiB shared by all annotations of a node.
  EXPECT_LT(dgx.size(), 3000u);
  EXPECT_EQ(dgx.substr(0, 12), "{\"version\":1");
  EXPECT_EQ(dgx.find(' ', dgx.find("\"links\"")), std::string::npos) << "no whitespace in the matrix";
  EXPECT_LT(EncodeTopology(MakeA100MigNode())->size(), 5000u);
  // The largest node allowed, every GPU fully MIG-partitioned, still fits comfortably.
  NodeTopology big = MakeNvSwitchNode(kMaxGpus, "NVIDIA H100 80GB HBM3", 81559, 18);
  for (Gpu& gpu : big.gpus) {
    ASSERT_TRUE(ApplyMigLayout(gpu, std::vector<std::string>(7, "1g.10gb")).ok());
  }
  Result<std::string> encoded = EncodeTopology(big);
  ASSERT_TRUE(encoded.ok()) << encoded.status();
  EXPECT_LT(encoded->size(), 128u * 1024);
  EXPECT_EQ(*DecodeTopology(*encoded), big);
}

TEST(TopologyCodecTest, OptionalFieldsAreOmittedWhenEmptyAndRoundTrip) {
  NodeTopology t = MakePcieNode(2, "NVIDIA L4", 23034, LinkKind::kPix, {.numa_nodes = 0});
  t.gpus[0].pci_bus_id.clear();
  t.gpus[1].health = Health::kUnhealthy;
  t.gpus[1].health_reason = "XID 79: GPU has fallen off the bus";
  t.gpus[1].product = "Quoted \"GPU\" \\ ünïcode";
  t.nvlink_domain = "6f8e8f6b-clique.3";
  std::string encoded = *EncodeTopology(t);
  EXPECT_EQ(encoded.find("numaNode"), std::string::npos);
  EXPECT_EQ(encoded.find("driverVersion"), std::string::npos);
  EXPECT_EQ(encoded.find("nvlinkGBpsPerLink"), std::string::npos);
  EXPECT_EQ(encoded.find("migDevices"), std::string::npos);
  // Only GPU 1 has a bus id.
  size_t bus = encoded.find("\"pciBusId\"");
  EXPECT_GT(bus, encoded.find("\"index\":1"));
  EXPECT_EQ(encoded.find("\"pciBusId\"", bus + 1), std::string::npos);
  EXPECT_NE(encoded.find(R"("health":"Unhealthy","healthReason":"XID 79: GPU has fallen off the bus")"),
            std::string::npos);
  EXPECT_NE(encoded.find(R"("product":"Quoted \"GPU\" \\ ünïcode")"), std::string::npos);
  Result<NodeTopology> decoded = DecodeTopology(encoded);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, t);
}

// Pins the byte layout documented in docs/contracts/gpu-topology.md §Encoding.
TEST(TopologyCodecTest, EncodesFieldsInTheDocumentedOrder) {
  NodeTopology t = MakeNvlinkPairsNode(2, "NVIDIA A100 80GB PCIe", 81920, 12,
                                       {.numa_nodes = 1, .uuid_seed = "doc", .driver_version = "550.54.15"});
  ASSERT_TRUE(ApplyMigLayout(t.gpus[1], {"3g.40gb"}).ok());
  EXPECT_EQ(
      *EncodeTopology(t),
      R"({"version":1,"driverVersion":"550.54.15","gpus":[)"
      R"({"index":0,"uuid":")" +
          t.gpus[0].uuid.str() +
          R"(","product":"NVIDIA A100 80GB PCIe","memoryMiB":81920,"numaNode":0,"pciBusId":"00000000:10:00.0",)"
          R"("health":"Healthy","nvlinkGBpsPerLink":25,"migEnabled":false},)"
          R"({"index":1,"uuid":")" +
          t.gpus[1].uuid.str() +
          R"(","product":"NVIDIA A100 80GB PCIe","memoryMiB":81920,"numaNode":0,"pciBusId":"00000000:13:00.0",)"
          R"("health":"Healthy","nvlinkGBpsPerLink":25,"migEnabled":true,"migDevices":[{"uuid":")" +
          t.gpus[1].mig_devices[0].uuid.str() +
          R"(","profile":"3g.40gb","memoryMiB":40192,"gpuInstanceId":1,"computeInstanceId":0,)"
          R"("placement":{"start":0,"size":4}}]}],"links":[["X","NV12"],["NV12","X"]]})");
}

TEST(TopologyCodecTest, IgnoresUnknownFieldsForForwardCompatibility) {
  nlohmann::json doc = nlohmann::json::parse(ReadDataFile("a100-mig.json"));
  doc["futureNodeField"] = {{"nested", {1, 2, {{"deep", true}}}}};
  doc["gpus"][0]["futureGpuField"] = "x";
  doc["gpus"][0]["migDevices"][3]["futureMigField"] = 7;
  doc["gpus"][0]["migDevices"][3]["placement"]["futurePlacementField"] = nullptr;
  Result<NodeTopology> decoded = DecodeTopology(doc.dump(2));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, MakeA100MigNode());
}

TEST(TopologyCodecTest, AcceptsNullAsAbsentForOptionalFields) {
  nlohmann::json doc = nlohmann::json::parse(ReadDataFile("pcie-4gpu.json"));
  doc["gpus"][2]["numaNode"] = nullptr;
  doc["gpus"][2]["pciBusId"] = nullptr;
  doc["driverVersion"] = nullptr;
  Result<NodeTopology> decoded = DecodeTopology(doc.dump());
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_FALSE(decoded->gpus[2].numa_node.has_value());
  EXPECT_TRUE(decoded->gpus[2].pci_bus_id.empty());
  EXPECT_TRUE(decoded->driver_version.empty());
}

TEST(TopologyCodecTest, AcceptsComputeInstancesSharingAGpuInstance) {
  // Three 1c.3g.40gb compute instances of one 3g.40gb GPU instance share its placement.
  NodeTopology t = MakeDgxH100Node();
  t.gpus[0].mig_enabled = true;
  for (int ci = 0; ci < 3; ++ci) {
    t.gpus[0].mig_devices.push_back({.uuid = GpuUuid("MIG-ci-" + std::to_string(ci)),
                                     .profile = "1c.3g.40gb",
                                     .memory_mib = 40448,
                                     .gpu_instance_id = 2,
                                     .compute_instance_id = ci,
                                     .placement_start = 4,
                                     .placement_size = 4});
  }
  Result<std::string> encoded = EncodeTopology(t);
  ASSERT_TRUE(encoded.ok()) << encoded.status();
  EXPECT_EQ(*DecodeTopology(*encoded), t);
}

TEST(TopologyCodecTest, EncodeRefusesModelsReadersWouldReject) {
  NodeTopology t = MakeDgxH100Node();
  t.gpus[3].uuid = t.gpus[1].uuid;
  Result<std::string> encoded = EncodeTopology(t);
  ASSERT_FALSE(encoded.ok());
  EXPECT_EQ(encoded.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(encoded.status().message(), "gpus[3].uuid: duplicate of gpus[1].uuid");

  NodeTopology bad_text = MakeDgxH100Node();
  bad_text.gpus[2].product = std::string("H100\xff", 5);
  EXPECT_EQ(EncodeTopology(bad_text).status().message(),
            "gpus[2].product: must be UTF-8 text without control characters");
  bad_text.gpus[2].product = "line\nbreak";
  EXPECT_EQ(EncodeTopology(bad_text).status().message(),
            "gpus[2].product: must be UTF-8 text without control characters");

  NodeTopology mismatched = MakeDgxH100Node();
  mismatched.links = LinkMatrix(7);
  EXPECT_EQ(EncodeTopology(mismatched).status().message(), "links: expected 8 rows (one per GPU), got 7");

  EXPECT_EQ(EncodeTopology(NodeTopology{}).status().message(), "gpus: must list at least one GPU");
}

}  // namespace
}  // namespace phalanx::topology
