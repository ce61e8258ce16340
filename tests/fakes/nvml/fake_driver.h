// FakeDriver: the state behind the fake libnvidia-ml.so.1 (tests/fakes/nvml/README.md).
//
// A C ABI library has no constructor to receive dependencies, so the exported functions
// reach one process-wide FakeDriver (the exception STYLE.md allows for C-ABI shims). It
// owns the machine loaded at nvmlInit, NVML's init reference count, device handles and
// event sets, and applies the failure switches:
//   FAKE_NVML_MACHINE   machine JSON, read when the reference count goes 0 -> 1
//   FAKE_NVML_FAIL      "driver-not-loaded": nvmlInit fails with DRIVER_NOT_LOADED
//   FAKE_NVML_LOST_GPUS comma-separated GPU indices or UUIDs, re-read on every call: calls
//                       on those GPUs (and their MIG devices) fail with GPU_IS_LOST
//   FAKE_NVML_EVENTS    fifo or file of injected events (FakeEventSource)
// Reasons for failed inits are printed to stderr, prefixed "fake NVML: ".
//
// Handles stay valid memory forever (a stale handle after a re-init is rejected with
// INVALID_ARGUMENT instead of crashing). Thread-safety: every method is thread-safe;
// EventSetWait blocks without holding the driver lock.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "device-plugin/nvml/nvml_types.h"
#include "tests/fakes/nvml/fake_event_source.h"
#include "tests/fakes/nvml/fake_machine.h"

// NVML's opaque handle types, defined by the fake.
struct nvmlDevice_st {
  unsigned int generation;  // FakeDriver generation that issued it
  int gpu;                  // index into FakeMachine::gpus
  int mig;                  // index into FakeGpu::mig_devices, -1 for the GPU itself
};
struct nvmlGpuInstance_st {
  unsigned int generation;
  int gpu;
  int mig;  // the MIG device whose GPU instance this is
};
struct nvmlGpmSample_st {
  int gpu = -1;         // index into FakeMachine::gpus; -1 until filled
  int mig = -1;         // MIG device index for nvmlGpmMigSampleGet, -1 for the whole GPU
  double seconds = 0;   // since the machine was loaded
};
struct nvmlEventSet_st {
  std::map<int, unsigned long long> registered;  // GPU -> event mask
};

namespace phalanx::fake_nvml {

class FakeDriver {
 public:
  static FakeDriver& Get();

  nvmlReturn_t Init();
  nvmlReturn_t Shutdown();

  // What a device handle designates, for the duration of a locked call.
  struct Target {
    const FakeMachine& machine;
    const FakeGpu& gpu;
    const MigDevice* mig;  // null for the physical GPU
  };
  using DeviceFn = std::function<nvmlReturn_t(const Target&)>;
  using PairFn = std::function<nvmlReturn_t(const Target&, const Target&)>;
  using MachineFn = std::function<nvmlReturn_t(const FakeMachine&)>;

  // Run `fn` under the lock after checking init, the handle(s) and GPU loss.
  nvmlReturn_t WithDevice(nvmlDevice_t device, const DeviceFn& fn);
  nvmlReturn_t WithDevicePair(nvmlDevice_t a, nvmlDevice_t b, const PairFn& fn);
  nvmlReturn_t WithMachine(const MachineFn& fn);

  nvmlReturn_t HandleByIndex(unsigned int index, nvmlDevice_t* device);
  nvmlReturn_t MigHandleByIndex(nvmlDevice_t parent, unsigned int index, nvmlDevice_t* mig);
  nvmlReturn_t ParentOfMig(nvmlDevice_t mig, nvmlDevice_t* parent);
  nvmlReturn_t GpuInstanceById(nvmlDevice_t device, unsigned int id, nvmlGpuInstance_t* gi);
  nvmlReturn_t GpuInstanceInfo(nvmlGpuInstance_t gi, nvmlGpuInstanceInfo_t* info);

  nvmlReturn_t EventSetCreate(nvmlEventSet_t* set);
  nvmlReturn_t RegisterEvents(nvmlDevice_t device, unsigned long long types, nvmlEventSet_t set);
  nvmlReturn_t EventSetWait(nvmlEventSet_t set, nvmlEventData_t* data, unsigned int timeout_ms,
                            bool with_instance_ids);
  nvmlReturn_t EventSetFree(nvmlEventSet_t set);

  static constexpr unsigned long long kSupportedEvents =
      nvmlEventTypeSingleBitEccError | nvmlEventTypeDoubleBitEccError | nvmlEventTypePState |
      nvmlEventTypeXidCriticalError | nvmlEventTypeClock;

 private:
  struct Injected {
    int gpu;
    unsigned long long type;
    unsigned long long data;
    unsigned int gi;
    unsigned int ci;
  };

  // All require mu_ held.
  nvmlReturn_t Resolve(nvmlDevice_t device, const MigDevice** mig, const FakeGpu** gpu) const;
  bool IsLost(const FakeGpu& gpu) const;
  nvmlDevice_t Handle(int gpu, int mig);
  std::optional<Injected> ParseEvent(const std::string& line);

  std::mutex mu_;
  int refcount_ = 0;
  unsigned int generation_ = 0;
  FakeMachine machine_;
  std::deque<nvmlDevice_st> device_storage_;
  std::deque<nvmlGpuInstance_st> instance_storage_;
  std::map<std::pair<int, int>, nvmlDevice_t> handles_;
  std::shared_ptr<FakeEventSource> events_;
};

}  // namespace phalanx::fake_nvml
