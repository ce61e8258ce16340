// Malformed annotations: each must be refused with InvalidArgument and a message that
// names the offending field by JSON path, exactly as asserted here.
#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "core/topology/reference_machines.h"
#include "core/topology/topology_codec.h"

namespace phalanx::topology {
namespace {

using nlohmann::json;

enum class Base { kPcie4Gpu, kA100Mig, kDgxH100 };

json BaseDoc(Base base) {
  switch (base) {
    case Base::kPcie4Gpu:
      return json::parse(*EncodeTopology(MakePcie4GpuNode()));
    case Base::kA100Mig:
      return json::parse(*EncodeTopology(MakeA100MigNode()));
    case Base::kDgxH100:
      return json::parse(*EncodeTopology(MakeDgxH100Node()));
  }
  return {};
}

struct Case {
  std::string name;
  Base base;
  std::function<void(json&)> mutate;
  std::string want;
};

void ExpectRejected(const std::string& document, const std::string& want) {
  Result<NodeTopology> r = DecodeTopology(document);
  ASSERT_FALSE(r.ok()) << "accepted: " << document.substr(0, 200);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), want);
}

TEST(TopologyCodecErrorsTest, NamesTheOffendingFieldByJsonPath) {
  const std::vector<Case> cases = {
      // Document and version.
      {"UnknownVersion", Base::kPcie4Gpu, [](json& d) { d["version"] = 2; },
       "version: unsupported version 2 (this reader understands 1)"},
      {"MissingVersion", Base::kPcie4Gpu, [](json& d) { d.erase("version"); },
       "version: required field missing"},
      {"VersionAsString", Base::kPcie4Gpu, [](json& d) { d["version"] = "1"; },
       "version: expected unsigned integer, got string"},
      {"RootIsArray", Base::kPcie4Gpu, [](json& d) { d = json::array({d}); },
       "<root>: expected object, got array"},
      {"NodeFieldWrongType", Base::kPcie4Gpu, [](json& d) { d["nvlinkDomain"] = 7; },
       "nvlinkDomain: expected string, got unsigned integer"},
      {"NvlinkDomainNotALabelValue", Base::kPcie4Gpu, [](json& d) { d["nvlinkDomain"] = "-clique 3"; },
       "nvlinkDomain: \"-clique 3\" is not a label value (at most 63 of [A-Za-z0-9._-], alphanumeric at both "
       "ends)"},
      {"DriverVersionWithSpaces", Base::kPcie4Gpu, [](json& d) { d["driverVersion"] = "550 beta"; },
       "driverVersion: must be at most 64 printable ASCII characters without spaces"},
      // GPU list.
      {"GpusNotArray", Base::kPcie4Gpu, [](json& d) { d["gpus"] = json::object(); },
       "gpus: expected array, got object"},
      {"NoGpus", Base::kPcie4Gpu, [](json& d) { d["gpus"] = json::array(); },
       "gpus: must list at least one GPU"},
      {"MoreThan64Gpus", Base::kPcie4Gpu,
       [](json& d) {
         json gpus = json::array();
         for (int i = 0; i < 65; ++i) gpus.push_back(d["gpus"][0]);
         d["gpus"] = gpus;
       },
       "gpus: 65 GPUs exceed the limit of 64"},
      {"GpuNotObject", Base::kPcie4Gpu, [](json& d) { d["gpus"][1] = "GPU-1"; },
       "gpus[1]: expected object, got string"},
      {"MissingUuid", Base::kPcie4Gpu, [](json& d) { d["gpus"][2].erase("uuid"); },
       "gpus[2].uuid: required field missing"},
      {"UuidWithoutPrefix", Base::kPcie4Gpu, [](json& d) { d["gpus"][0]["uuid"] = "abc"; },
       "gpus[0].uuid: \"abc\" must start with \"GPU-\""},
      {"UuidWithSpace", Base::kPcie4Gpu, [](json& d) { d["gpus"][0]["uuid"] = "GPU-a b"; },
       "gpus[0].uuid: must be GPU-<id> with at most 128 printable ASCII characters and no spaces"},
      {"DuplicateGpuUuid", Base::kPcie4Gpu, [](json& d) { d["gpus"][3]["uuid"] = d["gpus"][1]["uuid"]; },
       "gpus[3].uuid: duplicate of gpus[1].uuid"},
      {"UnknownGpuIndex", Base::kPcie4Gpu, [](json& d) { d["gpus"][1]["index"] = 9; },
       "gpus[1].index: 9 is out of range for 4 GPUs"},
      {"NegativeIndex", Base::kPcie4Gpu, [](json& d) { d["gpus"][1]["index"] = -1; },
       "gpus[1].index: expected a non-negative integer, got -1"},
      {"DuplicateGpuIndex", Base::kPcie4Gpu, [](json& d) { d["gpus"][3]["index"] = 1; },
       "gpus[3].index: duplicate of gpus[1].index"},
      {"IndicesOutOfOrder", Base::kPcie4Gpu,
       [](json& d) {
         d["gpus"][1]["index"] = 2;
         d["gpus"][2]["index"] = 1;
       },
       "gpus[1].index: 2 is out of order: GPUs must be listed by index, expected 1"},
      {"EmptyProduct", Base::kPcie4Gpu, [](json& d) { d["gpus"][0]["product"] = ""; },
       "gpus[0].product: must not be empty"},
      {"NegativeMemory", Base::kPcie4Gpu, [](json& d) { d["gpus"][1]["memoryMiB"] = -5; },
       "gpus[1].memoryMiB: expected a non-negative integer, got -5"},
      {"MemoryAsString", Base::kPcie4Gpu, [](json& d) { d["gpus"][1]["memoryMiB"] = "48GB"; },
       "gpus[1].memoryMiB: expected unsigned integer, got string"},
      {"MemoryAsFraction", Base::kPcie4Gpu, [](json& d) { d["gpus"][1]["memoryMiB"] = 1.5; },
       "gpus[1].memoryMiB: expected unsigned integer, got number"},
      {"ZeroMemory", Base::kPcie4Gpu, [](json& d) { d["gpus"][1]["memoryMiB"] = 0; },
       "gpus[1].memoryMiB: 0 is out of range 1..16777216"},
      {"NegativeNumaNode", Base::kPcie4Gpu, [](json& d) { d["gpus"][0]["numaNode"] = -1; },
       "gpus[0].numaNode: -1 is out of range 0..1023"},
      {"BadPciBusId", Base::kPcie4Gpu, [](json& d) { d["gpus"][0]["pciBusId"] = "17:00.0"; },
       "gpus[0].pciBusId: \"17:00.0\" is not a PCI bus id like 00000000:18:00.0"},
      {"DuplicatePciBusIdInOtherSpelling", Base::kPcie4Gpu,
       [](json& d) { d["gpus"][1]["pciBusId"] = "0000:17:00.0"; },
       "gpus[1].pciBusId: duplicate of gpus[0].pciBusId"},
      {"UnknownHealth", Base::kPcie4Gpu, [](json& d) { d["gpus"][2]["health"] = "Sick"; },
       "gpus[2].health: unknown value \"Sick\" (expected \"Healthy\" or \"Unhealthy\")"},
      {"ReasonOnHealthyGpu", Base::kPcie4Gpu, [](json& d) { d["gpus"][0]["healthReason"] = "XID 79"; },
       "gpus[0].healthReason: only allowed when health is Unhealthy"},
      {"MissingMigEnabled", Base::kPcie4Gpu, [](json& d) { d["gpus"][0].erase("migEnabled"); },
       "gpus[0].migEnabled: required field missing"},
      {"NvlinkWithoutRate", Base::kPcie4Gpu, [](json& d) { d["gpus"][0].erase("nvlinkGBpsPerLink"); },
       "gpus[0].nvlinkGBpsPerLink: required because links[0][1] is NV4"},
      {"RateAsString", Base::kPcie4Gpu, [](json& d) { d["gpus"][0]["nvlinkGBpsPerLink"] = "25"; },
       "gpus[0].nvlinkGBpsPerLink: expected number, got string"},
      {"RateOutOfRange", Base::kPcie4Gpu, [](json& d) { d["gpus"][0]["nvlinkGBpsPerLink"] = 5000; },
       "gpus[0].nvlinkGBpsPerLink: 5000 is out of range 0..1000"},
      // MIG devices.
      {"MigOnGpuWithMigDisabled", Base::kA100Mig, [](json& d) { d["gpus"][0]["migEnabled"] = false; },
       "gpus[0].migDevices: 7 MIG devices listed but migEnabled is false"},
      {"MoreThan7MigDevices", Base::kA100Mig,
       [](json& d) { d["gpus"][0]["migDevices"].push_back(d["gpus"][0]["migDevices"][0]); },
       "gpus[0].migDevices: 8 MIG devices exceed the limit of 7 per GPU"},
      {"MigDeviceNotObject", Base::kA100Mig, [](json& d) { d["gpus"][1]["migDevices"][2] = 3; },
       "gpus[1].migDevices[2]: expected object, got unsigned integer"},
      {"MigUuidWithoutPrefix", Base::kA100Mig,
       [](json& d) { d["gpus"][0]["migDevices"][1]["uuid"] = "GPU-x"; },
       "gpus[0].migDevices[1].uuid: \"GPU-x\" must start with \"MIG-\""},
      {"DuplicateMigUuidAcrossGpus", Base::kA100Mig,
       [](json& d) { d["gpus"][1]["migDevices"][2]["uuid"] = d["gpus"][0]["migDevices"][4]["uuid"]; },
       "gpus[1].migDevices[2].uuid: duplicate of gpus[0].migDevices[4].uuid"},
      {"BadMigProfile", Base::kA100Mig, [](json& d) { d["gpus"][0]["migDevices"][0]["profile"] = "big"; },
       "gpus[0].migDevices[0].profile: \"big\" is not a MIG profile like 1g.10gb or 3g.40gb"},
      {"MigMemoryLargerThanGpu", Base::kA100Mig,
       [](json& d) { d["gpus"][0]["migDevices"][0]["memoryMiB"] = 90000; },
       "gpus[0].migDevices[0].memoryMiB: 90000 exceeds the GPU's memoryMiB 81920"},
      {"MissingPlacement", Base::kA100Mig, [](json& d) { d["gpus"][0]["migDevices"][6].erase("placement"); },
       "gpus[0].migDevices[6].placement: required field missing"},
      {"PlacementStartOutOfRange", Base::kA100Mig,
       [](json& d) { d["gpus"][0]["migDevices"][6]["placement"]["start"] = 8; },
       "gpus[0].migDevices[6].placement.start: 8 is out of range 0..7"},
      {"PlacementPastLastSlice", Base::kA100Mig,
       [](json& d) { d["gpus"][1]["migDevices"][0]["placement"]["start"] = 6; },
       "gpus[1].migDevices[0].placement: start 6 + size 4 exceeds the GPU's 8 memory slices"},
      {"OverlappingPlacements", Base::kA100Mig,
       [](json& d) { d["gpus"][1]["migDevices"][3]["placement"]["start"] = 2; },
       "gpus[1].migDevices[3].placement: slices 2..2 overlap gpus[1].migDevices[2].placement (slices 2..2)"},
      {"OverlapWithLargerInstance", Base::kA100Mig,
       [](json& d) { d["gpus"][1]["migDevices"][1]["placement"]["start"] = 4; },
       "gpus[1].migDevices[1].placement: slices 4..5 overlap gpus[1].migDevices[0].placement (slices 4..7)"},
      {"DuplicateComputeInstance", Base::kA100Mig,
       [](json& d) { d["gpus"][1]["migDevices"][3]["gpuInstanceId"] = 3; },
       "gpus[1].migDevices[3]: duplicate of gpus[1].migDevices[2] (gpuInstanceId 3, computeInstanceId 0)"},
      {"SharedGpuInstanceWithOtherPlacement", Base::kA100Mig,
       [](json& d) {
         d["gpus"][1]["migDevices"][3]["gpuInstanceId"] = 3;
         d["gpus"][1]["migDevices"][3]["computeInstanceId"] = 1;
       },
       "gpus[1].migDevices[3].placement: differs from gpus[1].migDevices[2].placement of the same GPU "
       "instance 3"},
      {"InstanceIdOutOfRange", Base::kA100Mig,
       [](json& d) { d["gpus"][0]["migDevices"][0]["computeInstanceId"] = 300; },
       "gpus[0].migDevices[0].computeInstanceId: 300 is out of range 0..255"},
      // Link matrix.
      {"MissingLinks", Base::kPcie4Gpu, [](json& d) { d.erase("links"); }, "links: required field missing"},
      {"TooFewRows", Base::kPcie4Gpu, [](json& d) { d["links"].erase(3); },
       "links: expected 4 rows (one per GPU), got 3"},
      {"RowNotArray", Base::kPcie4Gpu, [](json& d) { d["links"][1] = "X"; },
       "links[1]: expected array, got string"},
      {"RowTooLong", Base::kPcie4Gpu, [](json& d) { d["links"][2].push_back("SYS"); },
       "links[2]: expected 4 entries, got 5"},
      {"CellNotString", Base::kPcie4Gpu, [](json& d) { d["links"][0][3] = 4; },
       "links[0][3]: expected string, got unsigned integer"},
      {"UnknownToken", Base::kPcie4Gpu, [](json& d) { d["links"][0][2] = "NV0"; },
       "links[0][2]: unknown link token \"NV0\" (expected X, NV<1..64>, PIX, PXB, PHB, NODE or SYS)"},
      {"DiagonalNotX", Base::kPcie4Gpu, [](json& d) { d["links"][1][1] = "NV4"; },
       "links[1][1]: diagonal must be \"X\", got \"NV4\""},
      {"SelfOffDiagonal", Base::kPcie4Gpu,
       [](json& d) {
         d["links"][0][2] = "X";
         d["links"][2][0] = "X";
       },
       "links[0][2]: \"X\" is only allowed on the diagonal"},
      {"AsymmetricMatrix", Base::kDgxH100,
       [](json& d) {
         d["links"][2][5] = "NV4";
         d["links"][5][2] = "PIX";
       },
       "links[2][5]: asymmetric: links[2][5]=\"NV4\" but links[5][2]=\"PIX\""},
      {"AsymmetricNvlinkCount", Base::kPcie4Gpu, [](json& d) { d["links"][3][2] = "NV2"; },
       "links[2][3]: asymmetric: links[2][3]=\"NV4\" but links[3][2]=\"NV2\""},
  };
  ASSERT_GE(cases.size(), 20u);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    json doc = BaseDoc(c.base);
    c.mutate(doc);
    ExpectRejected(doc.dump(), c.want);
  }
}

TEST(TopologyCodecErrorsTest, RejectsTextThatIsNotJson) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "<root>: malformed JSON: "},
      {"{", "<root>: malformed JSON: "},
      {"{\"version\":1,}", "<root>: malformed JSON: "},
      {std::string("{\"version\":1,\"x\":\"\xff\"}"), "<root>: malformed JSON: "},
      {"null", "<root>: expected object, got null"},
      {"42", "<root>: expected object, got unsigned integer"},
  };
  for (const auto& [doc, prefix] : cases) {
    SCOPED_TRACE(doc);
    Result<NodeTopology> r = DecodeTopology(doc);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message().substr(0, prefix.size()), prefix) << r.status();
  }
}

// A valid document padded through an unknown field to exactly `size` bytes.
std::string PaddedDgx(size_t size) {
  json doc = BaseDoc(Base::kDgxH100);
  doc["padding"] = "";
  size_t base = doc.dump().size();
  doc["padding"] = std::string(size - base, 'a');
  std::string text = doc.dump();
  EXPECT_EQ(text.size(), size);
  return text;
}

TEST(TopologyCodecErrorsTest, RejectsAOneMegabyteDocumentBeforeParsingIt) {
  ExpectRejected(PaddedDgx(1 << 20), "<root>: document of 1048576 bytes exceeds the limit of 262144 bytes");
  ExpectRejected(PaddedDgx(kMaxTopologyDocumentBytes + 1),
                 "<root>: document of 262145 bytes exceeds the limit of 262144 bytes");
  // At the limit the document is still read (the padding field is unknown, so ignored).
  Result<NodeTopology> at_limit = DecodeTopology(PaddedDgx(kMaxTopologyDocumentBytes));
  ASSERT_TRUE(at_limit.ok()) << at_limit.status();
  EXPECT_EQ(*at_limit, MakeDgxH100Node());
}

TEST(TopologyCodecErrorsTest, RejectsDeeplyNestedGarbageWithoutRecursing) {
  // 200,000 levels would overflow the stack of any recursive reader.
  ExpectRejected(std::string(200000, '['), "<root>: nesting deeper than 32 levels");
  ExpectRejected(std::string(100000, '{') + std::string(100000, '}'),
                 "<root>: nesting deeper than 32 levels");
  // Also when hidden in a field the reader would otherwise ignore.
  std::string doc = *EncodeTopology(MakePcie4GpuNode());
  std::string nested =
      doc.substr(0, doc.size() - 1) + ",\"future\":" + std::string(40, '[') + std::string(40, ']') + "}";
  ExpectRejected(nested, "<root>: nesting deeper than 32 levels");
  // Brackets inside strings do not count.
  json with_brackets = BaseDoc(Base::kPcie4Gpu);
  with_brackets["gpus"][0]["product"] = std::string(100, '[') + "\\\"" + std::string(100, '{');
  Result<NodeTopology> ok = DecodeTopology(with_brackets.dump());
  ASSERT_TRUE(ok.ok()) << ok.status();
  // Ten levels of an unknown field are fine.
  std::string shallow =
      doc.substr(0, doc.size() - 1) + ",\"future\":" + std::string(10, '[') + std::string(10, ']') + "}";
  EXPECT_TRUE(DecodeTopology(shallow).ok());
}

}  // namespace
}  // namespace phalanx::topology
