#include "tests/fakes/nvml/fake_driver.h"

#include <poll.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include <fmt/format.h>

#include "core/json/json.h"

namespace phalanx::fake_nvml {
namespace {

void Complain(const std::string& why) { std::fprintf(stderr, "fake NVML: %s\n", why.c_str()); }

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

}  // namespace

// LeakSanitizer's hook, present only in sanitizer builds (weak: null otherwise).
extern "C" void __lsan_ignore_object(const void* p) __attribute__((weak));

FakeDriver& FakeDriver::Get() {
  // Never destroyed, so a thread still calling NVML while the process exits never meets a
  // dead mutex. Tests that dlclose the library leave it behind on purpose; tell LSan.
  static FakeDriver* driver = [] {
    auto* d = new FakeDriver();
    if (&__lsan_ignore_object != nullptr) __lsan_ignore_object(d);
    return d;
  }();
  return *driver;
}

nvmlReturn_t FakeDriver::Init() {
  std::lock_guard<std::mutex> lock(mu_);
  if (refcount_ > 0) {
    ++refcount_;
    return NVML_SUCCESS;
  }
  if (Env("FAKE_NVML_FAIL") == "driver-not-loaded") {
    Complain("FAKE_NVML_FAIL=driver-not-loaded: pretending the NVIDIA kernel driver is not loaded");
    return NVML_ERROR_DRIVER_NOT_LOADED;
  }
  const std::string path = Env("FAKE_NVML_MACHINE");
  if (path.empty()) {
    Complain("FAKE_NVML_MACHINE is not set: no machine, so no driver");
    return NVML_ERROR_DRIVER_NOT_LOADED;
  }
  auto machine = LoadMachine(path);
  if (!machine.ok()) {
    Complain(machine.status().ToString());
    return NVML_ERROR_UNKNOWN;
  }
  if (machine->driver_not_loaded) {
    Complain(fmt::format("{}: failures.driverNotLoaded is set", path));
    return NVML_ERROR_DRIVER_NOT_LOADED;
  }
  machine_ = std::move(machine).value();
  machine_.loaded = std::chrono::steady_clock::now();
  ++generation_;
  handles_.clear();
  events_.reset();
  refcount_ = 1;
  return NVML_SUCCESS;
}

nvmlReturn_t FakeDriver::Shutdown() {
  std::lock_guard<std::mutex> lock(mu_);
  if (refcount_ == 0) return NVML_ERROR_UNINITIALIZED;
  --refcount_;
  return NVML_SUCCESS;
}

bool FakeDriver::IsLost(const FakeGpu& gpu) const {
  if (gpu.lost) return true;
  std::stringstream list(Env("FAKE_NVML_LOST_GPUS"));
  std::string item;
  while (std::getline(list, item, ',')) {
    if (item == gpu.uuid || item == std::to_string(gpu.index)) return true;
  }
  return false;
}

nvmlDevice_t FakeDriver::Handle(int gpu, int mig) {
  auto [it, inserted] = handles_.try_emplace({gpu, mig}, nullptr);
  if (inserted) {
    device_storage_.push_back(nvmlDevice_st{generation_, gpu, mig});
    it->second = &device_storage_.back();
  }
  return it->second;
}

nvmlReturn_t FakeDriver::Resolve(nvmlDevice_t device, const MigDevice** mig,
                                 const FakeGpu** gpu) const {
  if (refcount_ == 0) return NVML_ERROR_UNINITIALIZED;
  if (device == nullptr || device->generation != generation_ || device->gpu < 0 ||
      device->gpu >= static_cast<int>(machine_.gpus.size())) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  *gpu = &machine_.gpus[device->gpu];
  if (IsLost(**gpu)) return NVML_ERROR_GPU_IS_LOST;
  *mig = device->mig >= 0 ? &(*gpu)->mig_devices.at(device->mig) : nullptr;
  return NVML_SUCCESS;
}

nvmlReturn_t FakeDriver::WithDevice(nvmlDevice_t device, const DeviceFn& fn) {
  std::lock_guard<std::mutex> lock(mu_);
  const FakeGpu* gpu = nullptr;
  const MigDevice* mig = nullptr;
  if (nvmlReturn_t r = Resolve(device, &mig, &gpu); r != NVML_SUCCESS) return r;
  return fn(Target{machine_, *gpu, mig});
}

nvmlReturn_t FakeDriver::WithDevicePair(nvmlDevice_t a, nvmlDevice_t b, const PairFn& fn) {
  std::lock_guard<std::mutex> lock(mu_);
  const FakeGpu* gpu_a = nullptr;
  const FakeGpu* gpu_b = nullptr;
  const MigDevice* mig_a = nullptr;
  const MigDevice* mig_b = nullptr;
  if (nvmlReturn_t r = Resolve(a, &mig_a, &gpu_a); r != NVML_SUCCESS) return r;
  if (nvmlReturn_t r = Resolve(b, &mig_b, &gpu_b); r != NVML_SUCCESS) return r;
  return fn(Target{machine_, *gpu_a, mig_a}, Target{machine_, *gpu_b, mig_b});
}

nvmlReturn_t FakeDriver::WithMachine(const MachineFn& fn) {
  std::lock_guard<std::mutex> lock(mu_);
  if (refcount_ == 0) return NVML_ERROR_UNINITIALIZED;
  return fn(machine_);
}

nvmlReturn_t FakeDriver::HandleByIndex(unsigned int index, nvmlDevice_t* device) {
  std::lock_guard<std::mutex> lock(mu_);
  if (refcount_ == 0) return NVML_ERROR_UNINITIALIZED;
  if (device == nullptr || index >= machine_.gpus.size()) return NVML_ERROR_INVALID_ARGUMENT;
  // Like the real driver: a GPU that fell off the bus has no handle.
  if (IsLost(machine_.gpus[index])) return NVML_ERROR_GPU_IS_LOST;
  *device = Handle(static_cast<int>(index), -1);
  return NVML_SUCCESS;
}

nvmlReturn_t FakeDriver::MigHandleByIndex(nvmlDevice_t parent, unsigned int index,
                                          nvmlDevice_t* mig) {
  nvmlDevice_t found = nullptr;
  const nvmlReturn_t r = WithDevice(parent, [&](const Target& t) {
    if (mig == nullptr || t.mig != nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!t.gpu.mig_capable) return NVML_ERROR_NOT_SUPPORTED;
    if (!t.gpu.mig_enabled) return NVML_ERROR_INVALID_ARGUMENT;
    if (index >= 7) return NVML_ERROR_INVALID_ARGUMENT;  // beyond nvmlDeviceGetMaxMigDeviceCount
    if (index >= t.gpu.mig_devices.size()) return NVML_ERROR_NOT_FOUND;
    found = Handle(static_cast<int>(t.gpu.index), static_cast<int>(index));
    return NVML_SUCCESS;
  });
  if (r == NVML_SUCCESS) *mig = found;
  return r;
}

nvmlReturn_t FakeDriver::ParentOfMig(nvmlDevice_t mig, nvmlDevice_t* parent) {
  nvmlDevice_t found = nullptr;
  const nvmlReturn_t r = WithDevice(mig, [&](const Target& t) {
    if (parent == nullptr || t.mig == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    found = Handle(static_cast<int>(t.gpu.index), -1);
    return NVML_SUCCESS;
  });
  if (r == NVML_SUCCESS) *parent = found;
  return r;
}

nvmlReturn_t FakeDriver::GpuInstanceById(nvmlDevice_t device, unsigned int id,
                                         nvmlGpuInstance_t* gi) {
  return WithDevice(device, [&](const Target& t) {
    if (gi == nullptr || t.mig != nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!t.gpu.mig_capable) return NVML_ERROR_NOT_SUPPORTED;
    for (size_t m = 0; m < t.gpu.mig_devices.size(); ++m) {
      if (t.gpu.mig_devices[m].gpu_instance_id != id) continue;
      instance_storage_.push_back(
          nvmlGpuInstance_st{generation_, static_cast<int>(t.gpu.index), static_cast<int>(m)});
      *gi = &instance_storage_.back();
      return NVML_SUCCESS;
    }
    return NVML_ERROR_NOT_FOUND;
  });
}

nvmlReturn_t FakeDriver::GpuInstanceInfo(nvmlGpuInstance_t gi, nvmlGpuInstanceInfo_t* info) {
  if (gi == nullptr || info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  std::lock_guard<std::mutex> lock(mu_);
  if (refcount_ == 0) return NVML_ERROR_UNINITIALIZED;
  if (gi->generation != generation_) return NVML_ERROR_INVALID_ARGUMENT;
  const FakeGpu& gpu = machine_.gpus.at(gi->gpu);
  if (IsLost(gpu)) return NVML_ERROR_GPU_IS_LOST;
  const MigDevice& mig = gpu.mig_devices.at(gi->mig);
  const MigProfile& profile = machine_.mig_profiles.at(mig.profile);
  info->device = Handle(gi->gpu, -1);
  info->id = mig.gpu_instance_id;
  info->profileId = profile.id;
  info->placement = nvmlGpuInstancePlacement_t{mig.placement_start, profile.placement_size};
  return NVML_SUCCESS;
}

nvmlReturn_t FakeDriver::EventSetCreate(nvmlEventSet_t* set) {
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  std::lock_guard<std::mutex> lock(mu_);
  if (refcount_ == 0) return NVML_ERROR_UNINITIALIZED;
  const std::string path = Env("FAKE_NVML_EVENTS");
  if (!path.empty() && (events_ == nullptr || events_->path() != path)) {
    auto source = FakeEventSource::Open(path);
    if (source.ok()) {
      events_ = std::move(source).value();
    } else {
      Complain(source.status().ToString() + " (no events will be delivered)");
    }
  }
  *set = new nvmlEventSet_st();
  return NVML_SUCCESS;
}

nvmlReturn_t FakeDriver::RegisterEvents(nvmlDevice_t device, unsigned long long types,
                                        nvmlEventSet_t set) {
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  return WithDevice(device, [&](const Target& t) {
    if (t.mig != nullptr) return NVML_ERROR_NOT_SUPPORTED;
    if ((types & ~kSupportedEvents) != 0) return NVML_ERROR_NOT_SUPPORTED;
    set->registered[static_cast<int>(t.gpu.index)] |= types;
    return NVML_SUCCESS;
  });
}

std::optional<FakeDriver::Injected> FakeDriver::ParseEvent(const std::string& line) {
  auto parsed = json::Parse(line);
  if (!parsed.ok()) {
    Complain(fmt::format("ignoring event line \"{}\": {}", line, parsed.status().ToString()));
    return std::nullopt;
  }
  const json::Json& j = *parsed;
  Injected e{-1, 0, 0, 0xFFFFFFFFu, 0xFFFFFFFFu};
  auto fail = [&](const std::string& why) {
    Complain(fmt::format("ignoring event line \"{}\": {}", line, why));
    return std::nullopt;
  };
  if (!j.is_object() || !j.contains("gpu") || !j.contains("type")) return fail("needs gpu and type");
  const json::Json& gpu = j["gpu"];
  for (const FakeGpu& g : machine_.gpus) {
    if ((gpu.is_number_unsigned() && gpu.get<unsigned int>() == g.index) ||
        (gpu.is_string() && gpu.get<std::string>() == g.uuid)) {
      e.gpu = static_cast<int>(g.index);
    }
    for (const MigDevice& m : g.mig_devices) {
      if (gpu.is_string() && gpu.get<std::string>() == m.uuid) {
        e.gpu = static_cast<int>(g.index);
        e.gi = m.gpu_instance_id;
        e.ci = m.compute_instance_id;
      }
    }
  }
  if (e.gpu < 0) return fail("unknown gpu");
  const std::string type = j["type"].is_string() ? j["type"].get<std::string>() : "";
  if (type == "xid") {
    if (!j.contains("xid") || !j["xid"].is_number_unsigned()) return fail("xid events need \"xid\"");
    e.type = nvmlEventTypeXidCriticalError;
    e.data = j["xid"].get<unsigned long long>();
  } else if (type == "dbe" || type == "double-bit-ecc") {
    e.type = nvmlEventTypeDoubleBitEccError;
  } else if (type == "sbe" || type == "single-bit-ecc") {
    e.type = nvmlEventTypeSingleBitEccError;
  } else {
    return fail("type must be xid, dbe or sbe");
  }
  if (j.contains("gi") && j["gi"].is_number_unsigned()) e.gi = j["gi"].get<unsigned int>();
  if (j.contains("ci") && j["ci"].is_number_unsigned()) e.ci = j["ci"].get<unsigned int>();
  return e;
}

nvmlReturn_t FakeDriver::EventSetWait(nvmlEventSet_t set, nvmlEventData_t* data,
                                      unsigned int timeout_ms, bool with_instance_ids) {
  if (set == nullptr || data == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  std::shared_ptr<FakeEventSource> source;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (refcount_ == 0) return NVML_ERROR_UNINITIALIZED;
    source = events_;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  if (source == nullptr) {
    // Nothing can ever arrive: sleep out the timeout (poll with no fds, not a busy loop).
    poll(nullptr, 0, static_cast<int>(std::min<unsigned int>(timeout_ms, 1u << 30)));
    return NVML_ERROR_TIMEOUT;
  }
  for (;;) {
    // Rounded up, so the wait never ends before the caller's timeout.
    const auto remaining = std::chrono::ceil<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (remaining <= std::chrono::milliseconds(0)) return NVML_ERROR_TIMEOUT;
    auto line = source->NextLine(remaining);
    if (!line) continue;  // re-checks the deadline
    std::lock_guard<std::mutex> lock(mu_);
    if (refcount_ == 0) return NVML_ERROR_UNINITIALIZED;
    // {"type": "wait-error"}: this wait fails as a driver hiccup would.
    if (line->find("\"wait-error\"") != std::string::npos) return NVML_ERROR_UNKNOWN;
    auto event = ParseEvent(*line);
    if (!event) continue;
    auto registered = set->registered.find(event->gpu);
    // Events for GPUs or types this set did not ask for are dropped, as NVML would.
    if (registered == set->registered.end() || (registered->second & event->type) == 0) continue;
    data->device = Handle(event->gpu, -1);
    data->eventType = event->type;
    data->eventData = event->data;
    if (with_instance_ids) {
      data->gpuInstanceId = event->gi;
      data->computeInstanceId = event->ci;
    }
    return NVML_SUCCESS;
  }
}

nvmlReturn_t FakeDriver::EventSetFree(nvmlEventSet_t set) {
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  delete set;
  return NVML_SUCCESS;
}

}  // namespace phalanx::fake_nvml
