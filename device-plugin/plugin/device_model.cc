#include "device-plugin/plugin/device_model.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

namespace phalanx::device_plugin {
namespace {

AdvertisedDevice WholeGpu(const nvml::GpuInfo& gpu, int position) {
  AdvertisedDevice d;
  d.id = gpu.uuid.str();
  d.physical = gpu.uuid;
  d.parent_gpu = gpu.uuid;
  d.gpu_position = position;
  d.numa_node = gpu.numa_node;
  return d;
}

AdvertisedDevice MigDev(const nvml::GpuInfo& gpu, const nvml::MigDeviceInfo& mig, int position) {
  AdvertisedDevice d = WholeGpu(gpu, position);
  d.id = mig.uuid.str();
  d.physical = mig.uuid;
  d.mig = true;
  return d;
}

// A GPU without a usable UUID cannot be named to kubelet at all.
std::string GpuLabel(const nvml::GpuInfo& gpu) {
  return fmt::format("GPU {} ({})", gpu.index, gpu.uuid.empty() ? "no UUID" : gpu.uuid.str());
}

Result<std::vector<ResourceSpec>> BaseResources(const nvml::GpuInventory& inv, const Config& config) {
  std::vector<ResourceSpec> out;
  ResourceSpec gpus{.name = "nvidia.com/gpu"};
  std::map<std::string, ResourceSpec> mig;  // by resource name, sorted
  std::optional<std::string> single_profile;
  for (size_t p = 0; p < inv.gpus.size(); ++p) {
    const auto& gpu = inv.gpus[p];
    const int pos = static_cast<int>(p);
    if (gpu.uuid.empty()) continue;
    switch (config.mig_strategy) {
      case MigStrategy::kNone:
        gpus.devices.push_back(WholeGpu(gpu, pos));
        break;
      case MigStrategy::kSingle:
        if (!gpu.mig_enabled) {
          if (std::any_of(inv.gpus.begin(), inv.gpus.end(), [](const auto& g) { return g.mig_enabled; })) {
            return InvalidArgumentError(fmt::format(
                "migStrategy single: {} has MIG disabled while other GPUs have it enabled; "
                "use migStrategy mixed", GpuLabel(gpu)));
          }
          gpus.devices.push_back(WholeGpu(gpu, pos));
          break;
        }
        for (const auto& m : gpu.mig_devices) {
          if (single_profile && *single_profile != m.profile) {
            return InvalidArgumentError(fmt::format(
                "migStrategy single: {} has MIG device {} with profile {} but other MIG devices "
                "are {}; all MIG devices must share one profile (use migStrategy mixed)",
                GpuLabel(gpu), m.uuid.str(), m.profile, *single_profile));
          }
          single_profile = m.profile;
          gpus.devices.push_back(MigDev(gpu, m, pos));
        }
        gpus.mig = true;
        break;
      case MigStrategy::kMixed:
        if (!gpu.mig_enabled) {
          gpus.devices.push_back(WholeGpu(gpu, pos));
          break;
        }
        for (const auto& m : gpu.mig_devices) {
          auto& spec = mig[MigResourceName(m.profile)];
          spec.name = MigResourceName(m.profile);
          spec.mig = true;
          spec.devices.push_back(MigDev(gpu, m, pos));
        }
        break;
    }
  }
  if (!gpus.devices.empty()) out.push_back(std::move(gpus));
  for (auto& [name, spec] : mig) out.push_back(std::move(spec));
  return out;
}

}  // namespace

const AdvertisedDevice* ResourceSpec::Find(const std::string& id) const {
  for (const auto& d : devices) {
    if (d.id == id) return &d;
  }
  return nullptr;
}

std::string MigResourceName(const std::string& profile) {
  std::string p = profile;
  std::replace(p.begin(), p.end(), '+', '.');
  return "nvidia.com/mig-" + p;
}

std::string SocketNameFor(const std::string& resource_name) {
  std::string s = resource_name;
  std::replace(s.begin(), s.end(), '/', '-');
  return "phalanx-" + s + ".sock";
}

std::string StripReplica(const std::string& id) {
  auto pos = id.find("::");
  return pos == std::string::npos ? id : id.substr(0, pos);
}

Result<std::vector<ResourceSpec>> BuildResources(const nvml::GpuInventory& inventory,
                                                 const Config& config) {
  PHX_ASSIGN_OR_RETURN(auto resources, BaseResources(inventory, config));
  std::set<std::string> names;
  for (const auto& r : resources) names.insert(r.name);
  for (const auto& ts : config.time_slicing) {
    auto it = std::find_if(resources.begin(), resources.end(),
                           [&](const ResourceSpec& r) { return r.name == ts.name; });
    if (it == resources.end()) {
      // A config shared by heterogeneous nodes names resources some nodes lack: not an error.
      continue;
    }
    std::string new_name = !ts.rename.empty() ? ts.rename
                           : config.rename_by_default ? ts.name + ".shared"
                                                      : ts.name;
    if (new_name != ts.name && names.count(new_name)) {
      return InvalidArgumentError(fmt::format(
          "sharing.timeSlicing: rename of {} to {} collides with an advertised resource", ts.name, new_name));
    }
    std::vector<AdvertisedDevice> replicas;
    for (const auto& d : it->devices) {
      for (int n = 0; n < ts.replicas; ++n) {
        AdvertisedDevice r = d;
        r.id = fmt::format("{}::{}", d.physical.str(), n);
        r.replica = n;
        replicas.push_back(std::move(r));
      }
    }
    names.erase(it->name);
    names.insert(new_name);
    it->name = new_name;
    it->devices = std::move(replicas);
    it->replicas = ts.replicas;
  }
  return resources;
}

}  // namespace phalanx::device_plugin
