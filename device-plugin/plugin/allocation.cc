#include "device-plugin/plugin/allocation.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

namespace phalanx::device_plugin {
namespace {

std::string JoinIds(const std::vector<std::string>& ids, std::string_view sep) {
  std::string out;
  for (const auto& id : ids) {
    if (!out.empty()) out += sep;
    out += id;
  }
  return out;
}

Result<std::vector<std::string>> WholeGpus(const ResourceSpec& resource,
                                           const placement::BandwidthMatrix& bandwidth,
                                           const std::set<std::string>& available,
                                           const std::vector<std::string>& must_include, int size) {
  placement::DeviceSetRequest req;
  req.count = size;
  std::map<int, std::string> by_position;
  for (const auto& id : available) {
    const AdvertisedDevice* d = resource.Find(id);
    if (d->gpu_position >= bandwidth.size() || d->gpu_position >= placement::kMaxGpusPerNode) continue;
    req.available |= placement::GpuMask{1} << d->gpu_position;
    by_position[d->gpu_position] = id;
  }
  for (const auto& id : must_include) {
    req.must_include |= placement::GpuMask{1} << resource.Find(id)->gpu_position;
  }
  PHX_ASSIGN_OR_RETURN(auto choice, placement::ChooseDeviceSet(bandwidth, req));
  std::vector<std::string> out;
  for (int g : choice.gpus) out.push_back(by_position[g]);
  return out;
}

// MIG devices: must-include first, then devices on the GPUs already used, then on the GPU
// with the fewest free devices of this resource (fill partially used GPUs first).
std::vector<std::string> PackMig(const ResourceSpec& resource, const std::set<std::string>& available,
                                 const std::vector<std::string>& must_include, int size) {
  std::vector<std::string> out(must_include.begin(), must_include.end());
  std::map<int, std::vector<std::string>> free_by_gpu;
  for (const auto& id : available) {
    if (std::find(out.begin(), out.end(), id) == out.end()) {
      free_by_gpu[resource.Find(id)->gpu_position].push_back(id);
    }
  }
  std::set<int> used;
  for (const auto& id : out) used.insert(resource.Find(id)->gpu_position);
  while (static_cast<int>(out.size()) < size && !free_by_gpu.empty()) {
    auto best = free_by_gpu.begin();
    for (auto it = free_by_gpu.begin(); it != free_by_gpu.end(); ++it) {
      bool it_used = used.count(it->first), best_used = used.count(best->first);
      if (it_used != best_used ? it_used : it->second.size() < best->second.size()) best = it;
    }
    out.push_back(best->second.front());
    used.insert(best->first);
    best->second.erase(best->second.begin());
    if (best->second.empty()) free_by_gpu.erase(best);
  }
  return out;
}

// Replicas: one per GPU while possible, preferring GPUs with the most free replicas.
std::vector<std::string> SpreadReplicas(const ResourceSpec& resource, const std::set<std::string>& available,
                                        const std::vector<std::string>& must_include, int size) {
  std::vector<std::string> out(must_include.begin(), must_include.end());
  std::map<int, std::vector<std::string>> free_by_gpu;
  for (const auto& d : resource.devices) {  // device order keeps replica numbers ascending
    if (available.count(d.id) && std::find(out.begin(), out.end(), d.id) == out.end()) {
      free_by_gpu[d.gpu_position].push_back(d.id);
    }
  }
  std::map<int, int> taken;
  for (const auto& id : out) ++taken[resource.Find(id)->gpu_position];
  while (static_cast<int>(out.size()) < size && !free_by_gpu.empty()) {
    auto best = free_by_gpu.begin();
    for (auto it = free_by_gpu.begin(); it != free_by_gpu.end(); ++it) {
      const int ti = taken[it->first], tb = taken[best->first];
      if (ti != tb ? ti < tb : it->second.size() > best->second.size()) best = it;
    }
    out.push_back(best->second.front());
    ++taken[best->first];
    best->second.erase(best->second.begin());
    if (best->second.empty()) free_by_gpu.erase(best);
  }
  return out;
}

}  // namespace

Result<PreferredChoice> ChoosePreferred(const ResourceSpec& resource,
                                        const placement::BandwidthMatrix& bandwidth,
                                        const PreferredRequest& request,
                                        const std::set<std::string>& avoid) {
  if (request.size < 1) {
    return InvalidArgumentError(fmt::format("allocation size must be >= 1, got {}", request.size));
  }
  std::set<std::string> available;
  for (const auto* list : {&request.available, &request.must_include}) {
    for (const auto& id : *list) {
      if (resource.Find(id) == nullptr) {
        return InvalidArgumentError(fmt::format("unknown device \"{}\" for resource {}", id, resource.name));
      }
      available.insert(id);
    }
  }
  std::vector<std::string> must;
  for (const auto& id : request.must_include) {
    if (std::find(must.begin(), must.end(), id) == must.end()) must.push_back(id);
  }
  if (static_cast<int>(must.size()) > request.size) {
    return InvalidArgumentError(fmt::format("{} must-include devices exceed the allocation size {}",
                                            must.size(), request.size));
  }
  if (static_cast<int>(available.size()) < request.size) {
    return ResourceExhaustedError(fmt::format("{} devices requested, {} available", request.size,
                                              available.size()));
  }
  // Devices planned for other pending pods stay out of the choice while enough others remain.
  std::set<std::string> free;
  for (const auto& id : available) {
    if (!avoid.count(id) || std::find(must.begin(), must.end(), id) != must.end()) free.insert(id);
  }
  if (static_cast<int>(free.size()) >= request.size) available = std::move(free);
  PreferredChoice c;
  if (static_cast<int>(available.size()) == request.size) {
    // Nothing to choose (must-include is part of `available`); skips the set search,
    // which is the costliest case for ChooseDeviceSet (16 of 16: ~4 ms).
    c.device_ids.assign(available.begin(), available.end());
    return c;
  }
  if (resource.replicas > 1) {
    c.device_ids = SpreadReplicas(resource, available, must, request.size);
  } else if (resource.mig) {
    c.device_ids = PackMig(resource, available, must, request.size);
  } else {
    PHX_ASSIGN_OR_RETURN(c.device_ids, WholeGpus(resource, bandwidth, available, must, request.size));
  }
  return c;
}

Result<v1beta1::ContainerAllocateResponse> BuildAllocation(const ResourceSpec& resource,
                                                           const std::vector<std::string>& ids,
                                                           const Config& config,
                                                           const HealthTable& health) {
  if (ids.empty()) return InvalidArgumentError("no device IDs in the container request");
  if (config.fail_requests_greater_than_one && resource.replicas > 1 && ids.size() > 1) {
    return InvalidArgumentError(fmt::format(
        "{} devices of time-sliced resource {} requested; this node allows 1 per container "
        "(sharing.timeSlicing.failRequestsGreaterThanOne)", ids.size(), resource.name));
  }
  std::vector<std::string> physical;
  std::vector<const AdvertisedDevice*> devices;
  for (const auto& id : ids) {
    const AdvertisedDevice* d = resource.Find(id);
    if (d == nullptr) {
      return InvalidArgumentError(fmt::format("unknown device \"{}\" for resource {}", id, resource.name));
    }
    DeviceHealth h = health.Effective(d->physical.str(), d->parent_gpu.str());
    if (!h.healthy) {
      return FailedPreconditionError(fmt::format("device {} of resource {} is unhealthy: {}", id,
                                                 resource.name, h.reason));
    }
    if (std::find(physical.begin(), physical.end(), d->physical.str()) == physical.end()) {
      physical.push_back(d->physical.str());
      devices.push_back(d);
    }
  }
  v1beta1::ContainerAllocateResponse out;
  auto& envs = *out.mutable_envs();
  if (config.HasStrategy(DeviceListStrategy::kEnvvar)) {
    envs["NVIDIA_VISIBLE_DEVICES"] = JoinIds(physical, ",");
  }
  if (config.HasStrategy(DeviceListStrategy::kVolumeMounts)) {
    envs["NVIDIA_VISIBLE_DEVICES"] = kVolumeMountRoot;
    for (const auto& p : physical) {
      auto* m = out.add_mounts();
      m->set_host_path("/dev/null");
      m->set_container_path(fmt::format("{}/{}", kVolumeMountRoot, p));
      m->set_read_only(true);
    }
  }
  std::vector<std::string> cdi_names;
  for (const auto& p : physical) cdi_names.push_back("nvidia.com/gpu=" + p);
  if (config.HasStrategy(DeviceListStrategy::kCdiAnnotations)) {
    (*out.mutable_annotations())[std::string(kCdiAnnotationPrefix) + "phalanx-device-plugin_" +
                                 SocketNameFor(resource.name).substr(8)] = JoinIds(cdi_names, ",");
  }
  if (config.HasStrategy(DeviceListStrategy::kCdiCri)) {
    for (const auto& n : cdi_names) out.add_cdi_devices()->set_name(n);
  }
  if (config.pass_device_specs) {
    // Device nodes the NVIDIA container runtime would add. /dev/nvidia<N> uses the NVML
    // index as the minor number, which matches on standard installs.
    std::set<int> minors;
    for (const auto* d : devices) minors.insert(d->gpu_position);
    for (const char* path : {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"}) {
      auto* s = out.add_devices();
      s->set_host_path(path);
      s->set_container_path(path);
      s->set_permissions("rw");
    }
    for (int m : minors) {
      auto* s = out.add_devices();
      s->set_host_path(fmt::format("/dev/nvidia{}", m));
      s->set_container_path(fmt::format("/dev/nvidia{}", m));
      s->set_permissions("rw");
    }
  }
  return out;
}

}  // namespace phalanx::device_plugin
