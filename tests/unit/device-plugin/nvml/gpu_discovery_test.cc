#include "device-plugin/nvml/gpu_discovery.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "device-plugin/nvml/nvml_session.h"
#include "tests/unit/device-plugin/nvml/fake_nvml_fixture.h"

namespace phalanx::nvml {
namespace {

using testing::FakeNvmlTest;

// The machine file itself, to compare UUIDs without copying them into the test.
nlohmann::json ReadMachine(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

class GpuDiscoveryTest : public FakeNvmlTest {
 protected:
  // Loads the fake, opens a session and discovers; fails the test on error.
  GpuInventory Discover(const std::string& machine, bool legacy = false,
                        const DiscoveryOptions& options = {}) {
    UseMachine(machine);
    nvml_ = LoadFake(legacy);
    if (nvml_ == nullptr) return {};
    auto session = NvmlSession::Open(*nvml_);
    EXPECT_TRUE(session.ok()) << session.status();
    if (!session.ok()) return {};
    session_ = std::move(session).value();
    auto inventory = DiscoverGpus(*nvml_, options);
    EXPECT_TRUE(inventory.ok()) << inventory.status();
    return inventory.ok() ? std::move(inventory).value() : GpuInventory{};
  }

  void TearDown() override {
    session_.reset();
    nvml_.reset();
    FakeNvmlTest::TearDown();
  }

  std::unique_ptr<DlNvml> nvml_;
  std::unique_ptr<NvmlSession> session_;
};

TEST_F(GpuDiscoveryTest, DgxH100HasEightNvSwitchConnectedGpus) {
  GpuInventory inv = Discover("dgx-h100.json");
  const nlohmann::json machine = ReadMachine(MachinePath("dgx-h100.json"));
  EXPECT_EQ(inv.driver_version, "535.129.03");
  EXPECT_EQ(inv.cuda_driver_version, 12020);
  ASSERT_EQ(inv.gpus.size(), 8u);
  for (size_t i = 0; i < inv.gpus.size(); ++i) {
    const GpuInfo& g = inv.gpus[i];
    SCOPED_TRACE(i);
    EXPECT_TRUE(g.status.ok()) << g.status;
    EXPECT_EQ(g.index, i);
    EXPECT_EQ(g.uuid.str(), machine["gpus"][i]["uuid"].get<std::string>());
    EXPECT_EQ(g.name, "NVIDIA H100 80GB HBM3");
    EXPECT_EQ(g.memory_mib, 81559u);
    EXPECT_EQ(g.numa_node, i < 4 ? 0 : 1);
    EXPECT_TRUE(g.mig_capable);
    EXPECT_FALSE(g.mig_enabled);
    EXPECT_TRUE(g.mig_devices.empty());
    EXPECT_EQ(g.nvlink_version, static_cast<unsigned int>(NVML_NVLINK_VERSION_4_0));
  }
  EXPECT_EQ(inv.gpus[0].pci_bus_id, "00000000:18:00.0");
  EXPECT_EQ(inv.gpus[7].pci_bus_id, "00000000:DB:00.0");

  // 18 links to 4 NVSwitches (5+4+4+5) per GPU: every pair is NV18 through the fabric.
  ASSERT_EQ(inv.links.size(), 8u);
  for (size_t i = 0; i < 8; ++i) {
    for (size_t j = 0; j < 8; ++j) {
      SCOPED_TRACE(::testing::Message() << i << "-" << j);
      if (i == j) {
        EXPECT_EQ(LinkLabel(inv.links[i][j]), "X");
        continue;
      }
      EXPECT_EQ(inv.links[i][j].nvlinks, 18);
      EXPECT_TRUE(inv.links[i][j].via_nvswitch);
      EXPECT_EQ(LinkLabel(inv.links[i][j]), "NV18");
      // Each GPU has its own host bridge: NODE within a socket, SYS across.
      EXPECT_EQ(inv.links[i][j].pcie, (i < 4) == (j < 4) ? PcieLevel::kNode : PcieLevel::kSystem);
    }
  }
}

TEST_F(GpuDiscoveryTest, A100MigListsMixedLayoutsWithProfilesAndPlacements) {
  GpuInventory inv = Discover("a100-mig.json");
  const nlohmann::json machine = ReadMachine(MachinePath("a100-mig.json"));
  ASSERT_EQ(inv.gpus.size(), 8u);
  for (const GpuInfo& g : inv.gpus) {
    EXPECT_EQ(g.name, "NVIDIA A100-SXM4-80GB");
    EXPECT_EQ(g.memory_mib, 81920u);
    EXPECT_TRUE(g.mig_capable);
    EXPECT_EQ(g.mig_enabled, g.index < 2) << g.index;
  }

  // GPU 0: seven 1g.10gb instances, one per slice.
  const GpuInfo& g0 = inv.gpus[0];
  ASSERT_EQ(g0.mig_devices.size(), 7u);
  for (unsigned int k = 0; k < 7; ++k) {
    const MigDeviceInfo& d = g0.mig_devices[k];
    SCOPED_TRACE(k);
    EXPECT_EQ(d.uuid.str(), machine["gpus"][0]["migDevices"][k]["uuid"].get<std::string>());
    EXPECT_EQ(d.profile, "1g.10gb");
    EXPECT_EQ(d.slices, 1u);
    EXPECT_EQ(d.gpu_instance_id, 7 + k);
    EXPECT_EQ(d.compute_instance_id, 0u);
    EXPECT_EQ(d.placement_start, k);
    EXPECT_EQ(d.placement_size, 1u);
    EXPECT_EQ(d.memory_mib, 9728u);
  }

  // GPU 1: 3g.40gb@4 + 2g.20gb@0 + 1g.10gb@2 + 1g.10gb@3, in NVML's order.
  const GpuInfo& g1 = inv.gpus[1];
  ASSERT_EQ(g1.mig_devices.size(), 4u);
  struct Want {
    const char* profile;
    unsigned int gi, start, size, slices;
    uint64_t mib;
  };
  const Want want[] = {{"3g.40gb", 2, 4, 4, 3, 40192},
                       {"2g.20gb", 3, 0, 2, 2, 19968},
                       {"1g.10gb", 9, 2, 1, 1, 9728},
                       {"1g.10gb", 10, 3, 1, 1, 9728}};
  for (size_t k = 0; k < 4; ++k) {
    const MigDeviceInfo& d = g1.mig_devices[k];
    SCOPED_TRACE(k);
    EXPECT_EQ(d.uuid.str(), machine["gpus"][1]["migDevices"][k]["uuid"].get<std::string>());
    EXPECT_EQ(d.profile, want[k].profile);
    EXPECT_EQ(d.gpu_instance_id, want[k].gi);
    EXPECT_EQ(d.placement_start, want[k].start);
    EXPECT_EQ(d.placement_size, want[k].size);
    EXPECT_EQ(d.slices, want[k].slices);
    EXPECT_EQ(d.memory_mib, want[k].mib);
  }

  // 6 NVSwitches x 2 links: NV12 everywhere. PCIe: pairs share a switch tree (PXB).
  EXPECT_EQ(LinkLabel(inv.links[0][5]), "NV12");
  EXPECT_EQ(inv.links[0][1].pcie, PcieLevel::kMultiple);
  EXPECT_EQ(inv.links[0][2].pcie, PcieLevel::kNode);
  EXPECT_EQ(inv.links[0][4].pcie, PcieLevel::kSystem);
  EXPECT_EQ(inv.links[6][7].pcie, PcieLevel::kMultiple);
}

TEST_F(GpuDiscoveryTest, PcieMachineHasNvLinkPairsAndNumaSplit) {
  GpuInventory inv = Discover("pcie-4gpu.json");
  ASSERT_EQ(inv.gpus.size(), 4u);
  const int numa[] = {0, 0, 1, 1};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(inv.gpus[i].name, "NVIDIA RTX A6000");
    EXPECT_EQ(inv.gpus[i].memory_mib, 49140u);
    EXPECT_EQ(inv.gpus[i].numa_node, numa[i]);
    EXPECT_FALSE(inv.gpus[i].mig_capable);
  }
  // Bridged pairs: 4 direct NVLinks, no switch; PHB within a socket.
  for (auto [a, b] : {std::pair{0, 1}, std::pair{2, 3}}) {
    SCOPED_TRACE(::testing::Message() << a << "-" << b);
    EXPECT_EQ(inv.links[a][b].nvlinks, 4);
    EXPECT_FALSE(inv.links[a][b].via_nvswitch);
    EXPECT_EQ(inv.links[a][b].pcie, PcieLevel::kHostBridge);
    EXPECT_EQ(LinkLabel(inv.links[b][a]), "NV4");
  }
  // Across sockets: no NVLink, SYS.
  for (auto [a, b] : {std::pair{0, 2}, std::pair{0, 3}, std::pair{1, 2}, std::pair{1, 3}}) {
    SCOPED_TRACE(::testing::Message() << a << "-" << b);
    EXPECT_EQ(inv.links[a][b].nvlinks, 0);
    EXPECT_EQ(LinkLabel(inv.links[a][b]), "SYS");
  }
}

TEST_F(GpuDiscoveryTest, LegacyDriverFallsBackToUnversionedCallsAndSysfsNuma) {
  // The legacy fake has no nvmlDeviceGetNumaNodeId: NUMA comes from sysfs numa_node.
  const std::string sysfs = TempDir() + "/pci";
  auto write_numa = [&](const std::string& bdf, const std::string& text) {
    std::filesystem::create_directories(sysfs + "/" + bdf);
    std::ofstream(sysfs + "/" + bdf + "/numa_node") << text << "\n";
  };
  write_numa("0000:18:00.0", "0");
  write_numa("0000:9a:00.0", "1");
  write_numa("0000:ab:00.0", "-1");  // platform without NUMA affinity for this device
  // 0000:ba:00.0 has no sysfs entry at all.
  DiscoveryOptions options;
  options.sysfs_pci_devices = sysfs;
  GpuInventory inv = Discover("dgx-h100.json", /*legacy=*/true, options);
  ASSERT_EQ(nvml_->ResolvedSymbol("DeviceGetPciInfo"), "nvmlDeviceGetPciInfo");
  ASSERT_EQ(inv.gpus.size(), 8u);
  EXPECT_EQ(inv.gpus[0].numa_node, 0);
  EXPECT_EQ(inv.gpus[4].numa_node, 1);
  EXPECT_EQ(inv.gpus[5].numa_node, std::nullopt);
  EXPECT_EQ(inv.gpus[6].numa_node, std::nullopt);
  // Bus IDs come from the numeric fields, so the legacy struct layout changes nothing.
  EXPECT_EQ(inv.gpus[4].pci_bus_id, "00000000:9A:00.0");
  // Without nvmlDeviceGetNvLinkRemoteDeviceType a far end that is no GPU is an NVSwitch.
  EXPECT_EQ(inv.links[0][7].nvlinks, 18);
  EXPECT_TRUE(inv.links[0][7].via_nvswitch);
}

TEST_F(GpuDiscoveryTest, LostGpuIsReportedWithoutHidingTheOthers) {
  SetEnv("FAKE_NVML_LOST_GPUS", "3");
  GpuInventory inv = Discover("dgx-h100.json");
  ASSERT_EQ(inv.gpus.size(), 8u);
  const GpuInfo& lost = inv.gpus[3];
  EXPECT_EQ(lost.index, 3u);
  EXPECT_TRUE(lost.uuid.empty());
  EXPECT_EQ(lost.status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(lost.status.message(),
            "GPU 3: nvmlDeviceGetHandleByIndex: GPU is lost (NVML_ERROR_GPU_IS_LOST)");
  for (size_t i = 0; i < 8; ++i) {
    if (i == 3) continue;
    EXPECT_TRUE(inv.gpus[i].status.ok()) << i << ": " << inv.gpus[i].status;
    EXPECT_EQ(inv.links[3][i].nvlinks, 0);
    EXPECT_EQ(inv.links[3][i].pcie, PcieLevel::kUnknown);
  }
  EXPECT_EQ(inv.links[0][1].nvlinks, 18);
}

TEST_F(GpuDiscoveryTest, GpuMarkedLostInMachineFileFailsItsQueries) {
  const std::string machine = TempDir() + "/one-lost.json";
  std::ofstream(machine) << R"({
    "driverVersion": "550.54.15", "cudaDriverVersion": 12040,
    "gpus": [
      {"uuid": "GPU-00000000-0000-0000-0000-000000000001", "name": "NVIDIA L4",
       "memoryMiB": 23034, "pciBusId": "00000000:01:00.0", "numaNode": 0},
      {"uuid": "GPU-00000000-0000-0000-0000-000000000002", "name": "NVIDIA L4",
       "memoryMiB": 23034, "pciBusId": "00000000:02:00.0", "numaNode": 0, "lost": true}
    ]})";
  SetEnv("FAKE_NVML_MACHINE", machine);
  nvml_ = LoadFake();
  ASSERT_NE(nvml_, nullptr);
  auto session = NvmlSession::Open(*nvml_);
  ASSERT_TRUE(session.ok()) << session.status();
  auto inv = DiscoverGpus(*nvml_);
  ASSERT_TRUE(inv.ok()) << inv.status();
  ASSERT_EQ(inv->gpus.size(), 2u);
  EXPECT_TRUE(inv->gpus[0].status.ok());
  EXPECT_EQ(inv->gpus[0].name, "NVIDIA L4");
  EXPECT_EQ(inv->gpus[1].status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(inv->driver_version, "550.54.15");
  EXPECT_EQ(inv->gpus[0].nvlink_version, 0u);  // no NVLink on this machine
  EXPECT_EQ(inv->links[0][1].pcie, PcieLevel::kUnknown);  // nothing is known about a lost GPU
  EXPECT_EQ(inv->links[0][0].pcie, PcieLevel::kInternal);
}

TEST_F(GpuDiscoveryTest, WithoutSessionFailsWithUninitialized) {
  UseMachine("pcie-4gpu.json");
  nvml_ = LoadFake();
  ASSERT_NE(nvml_, nullptr);
  auto inv = DiscoverGpus(*nvml_);
  ASSERT_FALSE(inv.ok());
  EXPECT_EQ(inv.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(inv.status().message(),
            "nvmlDeviceGetCount: Uninitialized (NVML_ERROR_UNINITIALIZED)");
}

}  // namespace
}  // namespace phalanx::nvml
