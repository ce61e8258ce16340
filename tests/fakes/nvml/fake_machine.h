// FakeMachine: the GPU machine the fake NVML driver pretends to be, loaded from the JSON
// file named by FAKE_NVML_MACHINE (format: tests/fakes/nvml/README.md).
//
// LoadMachine() validates everything the fake will later answer from, so the exported
// NVML functions never meet an inconsistent machine: unique UUIDs and PCI addresses,
// MIG devices only on MIG-enabled GPUs with known profiles and non-overlapping valid
// placements, at most NVML_NVLINK_MAX_LINKS links per GPU, bridges between distinct
// existing GPUs.
// Value types; thread-compatible.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/base/result.h"

namespace phalanx::fake_nvml {

struct PciAddress {
  unsigned int domain = 0;
  unsigned int bus = 0;
  unsigned int device = 0;
  friend bool operator==(const PciAddress&, const PciAddress&) = default;
  friend auto operator<=>(const PciAddress&, const PciAddress&) = default;
};

// Parses NVML ("00000000:18:00.0") or sysfs ("0000:18:00.0") bus IDs.
Result<PciAddress> ParsePciBusId(const std::string& text);

struct MigProfile {
  unsigned int index = 0;        // NVML_GPU_INSTANCE_PROFILE_* index
  unsigned int id = 0;           // profile ID
  std::string name;              // "1g.10gb" (only used for MIG device names)
  unsigned int slices = 0;
  unsigned int instances = 0;    // max instances of this profile
  unsigned int multiprocessors = 0;
  uint64_t memory_mib = 0;
  unsigned int placement_size = 0;
  std::vector<unsigned int> placements;  // allowed start slices
};

struct MigDevice {
  std::string uuid;              // "MIG-..."
  uint64_t memory_used_mib = 0;  // what nvmlDeviceGetMemoryInfo reports as used
  double gpm_sm = 0;             // GPM SM activity of this GPU instance (constant), percent
  unsigned int profile_id = 0;
  unsigned int gpu_instance_id = 0;
  unsigned int compute_instance_id = 0;
  unsigned int placement_start = 0;
  size_t profile = 0;            // index into FakeMachine::mig_profiles
};

enum class RemoteType { kGpu, kSwitch };

// How busy a GPU pretends to be over time (README "Utilisation"): SM utilisation in percent
// as a function of the seconds since the machine was loaded.
struct UtilisationCurve {
  enum class Shape { kConstant, kSawtooth, kIdleAfter };
  Shape shape = Shape::kConstant;
  double sm = 0;             // constant: the value; idleAfter: before `after_seconds`
  double idle_sm = 0;        // idleAfter: from `after_seconds` on
  double after_seconds = 0;  // idleAfter
  double min = 0, max = 100, period_seconds = 60;  // sawtooth: min -> max, then back to min
  double memory = -1;        // memory-controller percent; < 0: half the SM value
  uint64_t memory_used_mib = 0;

  double SmAt(double seconds) const;
  double MemoryAt(double seconds) const;
};

struct NvLink {
  PciAddress remote;
  RemoteType type = RemoteType::kGpu;
};

struct FakeGpu {
  unsigned int index = 0;
  std::string uuid;
  std::string name;
  uint64_t memory_mib = 0;
  PciAddress pci;
  unsigned int pci_device_id = 0;   // device << 16 | vendor (0x10DE)
  int numa_node = -1;               // -1: none
  std::string host_bridge;          // PCIe host bridge name
  std::vector<std::string> pcie_switches;  // switches from the host bridge down
  bool mig_capable = false;
  bool mig_enabled = false;
  std::vector<MigDevice> mig_devices;
  std::vector<NvLink> nvlinks;      // index = NVML link number
  bool lost = false;                // every call on this GPU fails with GPU_IS_LOST
  UtilisationCurve utilisation;
  bool gpm = false;                   // GPM supported (Hopper and newer)
  std::set<std::string> unsupported;  // NVML symbols answering NOT_SUPPORTED on this GPU
};

struct FakeMachine {
  std::string driver_version;
  int cuda_driver_version = 0;
  unsigned int nvlink_version = 0;  // what nvmlDeviceGetNvLinkVersion reports
  bool driver_not_loaded = false;   // nvmlInit fails with NVML_ERROR_DRIVER_NOT_LOADED
  std::vector<MigProfile> mig_profiles;
  std::vector<FakeGpu> gpus;
  std::set<std::string> unsupported;  // NVML symbols answering NOT_SUPPORTED on every GPU
  std::chrono::steady_clock::time_point loaded{};  // set by nvmlInit: time 0 of the curves

  // nvmlGpuTopologyLevel_t value for a pair (derivation in fake_machine.cc).
  unsigned int CommonAncestor(const FakeGpu& a, const FakeGpu& b) const;
};

// Reads and validates `path`. Errors carry the file and JSON path of the problem.
Result<FakeMachine> LoadMachine(const std::string& path);
Result<FakeMachine> ParseMachine(const std::string& json_text);

}  // namespace phalanx::fake_nvml
