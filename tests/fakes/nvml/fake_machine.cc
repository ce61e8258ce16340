#include "tests/fakes/nvml/fake_machine.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "core/json/json.h"
#include "device-plugin/nvml/nvml_types.h"

namespace phalanx::fake_nvml {
namespace {

using json::Json;

constexpr unsigned int kComputeSlices = 7;  // A100/H100: 7 compute slices
constexpr unsigned int kMemorySlices = 8;   // ... and 8 memory slices

Result<unsigned int> GetU32(const Json& object, std::string_view key, std::string_view path) {
  PHX_ASSIGN_OR_RETURN(uint64_t v, json::GetUint(object, key, path));
  if (v > 0xFFFFFFFFu) return InvalidArgumentError(fmt::format("{}: too large", json::JoinPath(path, key)));
  return static_cast<unsigned int>(v);
}

template <typename T, typename Get>
Result<T> Optional(const Json& object, std::string_view key, std::string_view path, T fallback,
                   Get get) {
  if (!object.is_object() || !object.contains(key) || object.at(key).is_null()) return fallback;
  return get(object, key, path);
}

Result<double> GetNumber(const Json& object, std::string_view key, std::string_view path) {
  const Json& v = object.at(key);
  if (!v.is_number()) return InvalidArgumentError(fmt::format("{}: expected a number", json::JoinPath(path, key)));
  return v.get<double>();
}

Result<std::set<std::string>> ParseSymbols(const Json& object, std::string_view path) {
  std::set<std::string> out;
  PHX_ASSIGN_OR_RETURN(const Json* list, json::GetOptional(object, "unsupported", path, Json::value_t::array));
  for (size_t i = 0; list != nullptr && i < list->size(); ++i) {
    const Json& s = (*list)[i];
    if (!s.is_string() || s.get<std::string>().rfind("nvml", 0) != 0) {
      return InvalidArgumentError(fmt::format("{}[{}]: expected an NVML symbol name like \"nvmlDeviceGetPowerUsage\"",
                                              json::JoinPath(path, "unsupported"), i));
    }
    out.insert(s.get<std::string>());
  }
  return out;
}

Result<UtilisationCurve> ParseCurve(const Json& gpu, const std::string& gpu_path) {
  UtilisationCurve c;
  PHX_ASSIGN_OR_RETURN(const Json* j, json::GetOptional(gpu, "utilisation", gpu_path, Json::value_t::object));
  if (j == nullptr) return c;
  const std::string path = gpu_path + ".utilisation";
  auto number = [&](const char* key, double fallback) -> Result<double> {
    return Optional<double>(*j, key, path, fallback, GetNumber);
  };
  PHX_ASSIGN_OR_RETURN(std::string shape, Optional<std::string>(*j, "curve", path, "constant", json::GetString));
  if (shape == "constant") {
    c.shape = UtilisationCurve::Shape::kConstant;
  } else if (shape == "sawtooth") {
    c.shape = UtilisationCurve::Shape::kSawtooth;
  } else if (shape == "idleAfter") {
    c.shape = UtilisationCurve::Shape::kIdleAfter;
  } else {
    return InvalidArgumentError(fmt::format("{}.curve: expected constant, sawtooth or idleAfter, got \"{}\"", path, shape));
  }
  PHX_ASSIGN_OR_RETURN(c.sm, number("sm", 0));
  PHX_ASSIGN_OR_RETURN(c.idle_sm, number("idleSm", 0));
  PHX_ASSIGN_OR_RETURN(c.after_seconds, number("afterSeconds", 0));
  PHX_ASSIGN_OR_RETURN(c.min, number("min", 0));
  PHX_ASSIGN_OR_RETURN(c.max, number("max", 100));
  PHX_ASSIGN_OR_RETURN(c.period_seconds, number("periodSeconds", 60));
  PHX_ASSIGN_OR_RETURN(c.memory, number("memory", -1));
  PHX_ASSIGN_OR_RETURN(c.memory_used_mib, Optional<uint64_t>(*j, "memoryUsedMiB", path, 0, json::GetUint));
  for (double v : {c.sm, c.idle_sm, c.min, c.max}) {
    if (v < 0 || v > 100) return InvalidArgumentError(fmt::format("{}: percentages must be within 0..100", path));
  }
  if (c.memory > 100) return InvalidArgumentError(fmt::format("{}.memory: must be within 0..100", path));
  if (c.period_seconds <= 0 || c.min > c.max || c.after_seconds < 0) {
    return InvalidArgumentError(fmt::format("{}: needs periodSeconds > 0, min <= max, afterSeconds >= 0", path));
  }
  return c;
}

Result<MigProfile> ParseProfile(const Json& j, const std::string& path) {
  MigProfile p;
  PHX_ASSIGN_OR_RETURN(p.index, GetU32(j, "index", path));
  if (p.index >= NVML_GPU_INSTANCE_PROFILE_COUNT) {
    return InvalidArgumentError(fmt::format("{}.index: {} is not a GPU instance profile index", path, p.index));
  }
  PHX_ASSIGN_OR_RETURN(p.id, GetU32(j, "id", path));
  PHX_ASSIGN_OR_RETURN(p.name, json::GetString(j, "name", path));
  PHX_ASSIGN_OR_RETURN(p.slices, GetU32(j, "slices", path));
  PHX_ASSIGN_OR_RETURN(p.instances, GetU32(j, "instances", path));
  PHX_ASSIGN_OR_RETURN(p.multiprocessors, GetU32(j, "multiprocessors", path));
  PHX_ASSIGN_OR_RETURN(p.memory_mib, json::GetUint(j, "memoryMiB", path));
  PHX_ASSIGN_OR_RETURN(p.placement_size, GetU32(j, "placementSize", path));
  PHX_ASSIGN_OR_RETURN(const Json* starts, json::GetArray(j, "placements", path));
  for (size_t i = 0; i < starts->size(); ++i) {
    const Json& s = (*starts)[i];
    if (!s.is_number_unsigned() || s.get<unsigned int>() + p.placement_size > kMemorySlices) {
      return InvalidArgumentError(fmt::format("{}.placements[{}]: expected a start in [0, {}]", path, i,
                                              kMemorySlices - p.placement_size));
    }
    p.placements.push_back(s.get<unsigned int>());
  }
  if (p.slices == 0 || p.slices > kComputeSlices || p.placement_size == 0) {
    return InvalidArgumentError(fmt::format("{}: slices must be 1..{} and placementSize > 0", path, kComputeSlices));
  }
  return p;
}

Status ParseMigDevices(const Json& gpu_json, const std::string& path, const FakeMachine& machine,
                       std::set<std::string>& uuids, FakeGpu& gpu) {
  PHX_ASSIGN_OR_RETURN(const Json* list, json::GetOptional(gpu_json, "migDevices", path, Json::value_t::array));
  if (list == nullptr) return OkStatus();
  if (!gpu.mig_enabled && !list->empty()) {
    return InvalidArgumentError(fmt::format("{}.migDevices: GPU is not in MIG mode (migEnabled)", path));
  }
  std::vector<bool> memory_used(kMemorySlices, false);
  unsigned int compute_used = 0;
  std::set<unsigned int> instance_ids;
  for (size_t i = 0; i < list->size(); ++i) {
    const std::string p = fmt::format("{}.migDevices[{}]", path, i);
    const Json& j = (*list)[i];
    MigDevice d;
    PHX_ASSIGN_OR_RETURN(d.uuid, json::GetString(j, "uuid", p));
    PHX_ASSIGN_OR_RETURN(d.profile_id, GetU32(j, "profileId", p));
    PHX_ASSIGN_OR_RETURN(d.gpu_instance_id, GetU32(j, "gpuInstanceId", p));
    PHX_ASSIGN_OR_RETURN(d.compute_instance_id, GetU32(j, "computeInstanceId", p));
    PHX_ASSIGN_OR_RETURN(d.placement_start, GetU32(j, "placementStart", p));
    PHX_ASSIGN_OR_RETURN(d.memory_used_mib, Optional<uint64_t>(j, "memoryUsedMiB", p, 0, json::GetUint));
    PHX_ASSIGN_OR_RETURN(d.gpm_sm, Optional<double>(j, "gpmSm", p, 0, GetNumber));
    if (d.gpm_sm < 0 || d.gpm_sm > 100) return InvalidArgumentError(fmt::format("{}.gpmSm: must be within 0..100", p));
    if (d.uuid.rfind("MIG-", 0) != 0 || !uuids.insert(d.uuid).second) {
      return InvalidArgumentError(fmt::format("{}.uuid: must start with MIG- and be unique", p));
    }
    if (!instance_ids.insert(d.gpu_instance_id).second) {
      return InvalidArgumentError(fmt::format("{}.gpuInstanceId: {} used twice", p, d.gpu_instance_id));
    }
    bool found = false;
    for (size_t k = 0; k < machine.mig_profiles.size(); ++k) {
      if (machine.mig_profiles[k].id == d.profile_id) {
        d.profile = k;
        found = true;
      }
    }
    if (!found) return InvalidArgumentError(fmt::format("{}.profileId: {} not in migProfiles", p, d.profile_id));
    const MigProfile& profile = machine.mig_profiles[d.profile];
    bool allowed = false;
    for (unsigned int s : profile.placements) allowed = allowed || s == d.placement_start;
    if (!allowed) {
      return InvalidArgumentError(fmt::format("{}.placementStart: {} is not a valid placement for {}", p,
                                              d.placement_start, profile.name));
    }
    for (unsigned int s = d.placement_start; s < d.placement_start + profile.placement_size; ++s) {
      if (memory_used[s]) return InvalidArgumentError(fmt::format("{}: overlaps memory slice {}", p, s));
      memory_used[s] = true;
    }
    compute_used += profile.slices;
    if (compute_used > kComputeSlices) {
      return InvalidArgumentError(fmt::format("{}: more than {} compute slices in use", p, kComputeSlices));
    }
    gpu.mig_devices.push_back(std::move(d));
  }
  return OkStatus();
}

Result<FakeGpu> ParseGpu(const Json& j, const std::string& path, unsigned int index,
                         const FakeMachine& machine, std::set<std::string>& uuids) {
  FakeGpu g;
  g.index = index;
  PHX_ASSIGN_OR_RETURN(g.uuid, json::GetString(j, "uuid", path));
  if (g.uuid.rfind("GPU-", 0) != 0 || !uuids.insert(g.uuid).second) {
    return InvalidArgumentError(fmt::format("{}.uuid: must start with GPU- and be unique", path));
  }
  PHX_ASSIGN_OR_RETURN(g.name, json::GetString(j, "name", path));
  PHX_ASSIGN_OR_RETURN(g.memory_mib, json::GetUint(j, "memoryMiB", path));
  PHX_ASSIGN_OR_RETURN(std::string bus_id, json::GetString(j, "pciBusId", path));
  auto pci = ParsePciBusId(bus_id);
  if (!pci.ok()) return pci.status().WithContext(path + ".pciBusId");
  g.pci = *pci;
  PHX_ASSIGN_OR_RETURN(std::string device_id,
                       Optional<std::string>(j, "pciDeviceId", path, "0x000010DE", json::GetString));
  g.pci_device_id = static_cast<unsigned int>(std::strtoul(device_id.c_str(), nullptr, 16));
  PHX_ASSIGN_OR_RETURN(int64_t numa, Optional<int64_t>(j, "numaNode", path, -1, json::GetInt));
  if (numa < -1) return InvalidArgumentError(fmt::format("{}.numaNode: must be >= -1", path));
  g.numa_node = static_cast<int>(numa);

  g.host_bridge = fmt::format("gpu{}-host-bridge", index);  // default: its own host bridge
  PHX_ASSIGN_OR_RETURN(const Json* pcie, json::GetOptional(j, "pcie", path, Json::value_t::object));
  if (pcie != nullptr) {
    const std::string p = path + ".pcie";
    PHX_ASSIGN_OR_RETURN(g.host_bridge, json::GetString(*pcie, "hostBridge", p));
    PHX_ASSIGN_OR_RETURN(const Json* switches, json::GetOptional(*pcie, "switches", p, Json::value_t::array));
    if (switches != nullptr) {
      for (const Json& s : *switches) {
        if (!s.is_string()) return InvalidArgumentError(fmt::format("{}.switches: expected strings", p));
        g.pcie_switches.push_back(s.get<std::string>());
      }
    }
  }
  PHX_ASSIGN_OR_RETURN(g.mig_capable, Optional<bool>(j, "migCapable", path, false, json::GetBool));
  PHX_ASSIGN_OR_RETURN(g.mig_enabled, Optional<bool>(j, "migEnabled", path, false, json::GetBool));
  if (g.mig_enabled && !g.mig_capable) {
    return InvalidArgumentError(fmt::format("{}.migEnabled: GPU is not migCapable", path));
  }
  PHX_RETURN_IF_ERROR(ParseMigDevices(j, path, machine, uuids, g));
  PHX_ASSIGN_OR_RETURN(g.lost, Optional<bool>(j, "lost", path, false, json::GetBool));
  PHX_ASSIGN_OR_RETURN(g.utilisation, ParseCurve(j, path));
  if (g.utilisation.memory_used_mib > g.memory_mib) {
    return InvalidArgumentError(fmt::format("{}.utilisation.memoryUsedMiB: more than memoryMiB", path));
  }
  PHX_ASSIGN_OR_RETURN(g.unsupported, ParseSymbols(j, path));
  PHX_ASSIGN_OR_RETURN(g.gpm, Optional<bool>(j, "gpm", path, false, json::GetBool));
  return g;
}

Status ParseNvLink(const Json& root, FakeMachine& m, std::set<PciAddress>& addresses) {
  PHX_ASSIGN_OR_RETURN(const Json* nvlink, json::GetOptional(root, "nvlink", "", Json::value_t::object));
  if (nvlink == nullptr) return OkStatus();
  PHX_ASSIGN_OR_RETURN(m.nvlink_version, GetU32(*nvlink, "version", "nvlink"));
  PHX_ASSIGN_OR_RETURN(const Json* bridges, json::GetOptional(*nvlink, "bridges", "nvlink", Json::value_t::array));
  for (size_t i = 0; bridges != nullptr && i < bridges->size(); ++i) {
    const std::string p = fmt::format("nvlink.bridges[{}]", i);
    PHX_ASSIGN_OR_RETURN(const Json* ends, json::GetArray((*bridges)[i], "gpus", p));
    PHX_ASSIGN_OR_RETURN(unsigned int links, GetU32((*bridges)[i], "links", p));
    if (ends->size() != 2 || !(*ends)[0].is_number_unsigned() || !(*ends)[1].is_number_unsigned()) {
      return InvalidArgumentError(fmt::format("{}.gpus: expected two GPU indices", p));
    }
    const unsigned int a = (*ends)[0].get<unsigned int>();
    const unsigned int b = (*ends)[1].get<unsigned int>();
    if (a == b || a >= m.gpus.size() || b >= m.gpus.size()) {
      return InvalidArgumentError(fmt::format("{}.gpus: [{}, {}] are not two distinct GPUs", p, a, b));
    }
    for (unsigned int l = 0; l < links; ++l) {
      m.gpus[a].nvlinks.push_back(NvLink{m.gpus[b].pci, RemoteType::kGpu});
      m.gpus[b].nvlinks.push_back(NvLink{m.gpus[a].pci, RemoteType::kGpu});
    }
  }
  PHX_ASSIGN_OR_RETURN(const Json* switches, json::GetOptional(*nvlink, "switches", "nvlink", Json::value_t::array));
  for (size_t i = 0; switches != nullptr && i < switches->size(); ++i) {
    const std::string p = fmt::format("nvlink.switches[{}]", i);
    PHX_ASSIGN_OR_RETURN(std::string bus_id, json::GetString((*switches)[i], "pciBusId", p));
    auto address = ParsePciBusId(bus_id);
    if (!address.ok()) return address.status().WithContext(p + ".pciBusId");
    if (!addresses.insert(*address).second) {
      return InvalidArgumentError(fmt::format("{}.pciBusId: {} used twice", p, bus_id));
    }
    PHX_ASSIGN_OR_RETURN(unsigned int links, GetU32((*switches)[i], "linksPerGpu", p));
    for (FakeGpu& g : m.gpus) {
      for (unsigned int l = 0; l < links; ++l) g.nvlinks.push_back(NvLink{*address, RemoteType::kSwitch});
    }
  }
  for (const FakeGpu& g : m.gpus) {
    if (g.nvlinks.size() > NVML_NVLINK_MAX_LINKS) {
      return InvalidArgumentError(fmt::format("nvlink: GPU {} would have {} links, NVML allows {}", g.index,
                                              g.nvlinks.size(), NVML_NVLINK_MAX_LINKS));
    }
  }
  return OkStatus();
}

}  // namespace

Result<PciAddress> ParsePciBusId(const std::string& text) {
  unsigned int domain = 0, bus = 0, device = 0, function = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%x:%x:%x.%x%c", &domain, &bus, &device, &function, &tail) != 4 ||
      bus > 0xFF || device > 0x1F || function > 7) {
    return InvalidArgumentError(fmt::format("\"{}\" is not a PCI bus ID like 00000000:18:00.0", text));
  }
  return PciAddress{domain, bus, device};
}

double UtilisationCurve::SmAt(double seconds) const {
  switch (shape) {
    case Shape::kConstant: return sm;
    case Shape::kIdleAfter: return seconds < after_seconds ? sm : idle_sm;
    case Shape::kSawtooth: {
      const double phase = seconds / period_seconds - static_cast<long long>(seconds / period_seconds);
      return min + (max - min) * phase;
    }
  }
  return sm;
}

double UtilisationCurve::MemoryAt(double seconds) const { return memory >= 0 ? memory : SmAt(seconds) / 2; }

unsigned int FakeMachine::CommonAncestor(const FakeGpu& a, const FakeGpu& b) const {
  if (a.index == b.index) return NVML_TOPOLOGY_INTERNAL;
  if (a.host_bridge != b.host_bridge) {
    return a.numa_node >= 0 && a.numa_node == b.numa_node ? NVML_TOPOLOGY_NODE : NVML_TOPOLOGY_SYSTEM;
  }
  size_t common = 0;
  while (common < a.pcie_switches.size() && common < b.pcie_switches.size() &&
         a.pcie_switches[common] == b.pcie_switches[common]) {
    ++common;
  }
  if (common == 0) return NVML_TOPOLOGY_HOSTBRIDGE;
  // Both directly under the same (deepest common) switch: one switch crossed.
  if (common == a.pcie_switches.size() && common == b.pcie_switches.size()) return NVML_TOPOLOGY_SINGLE;
  return NVML_TOPOLOGY_MULTIPLE;
}

Result<FakeMachine> ParseMachine(const std::string& json_text) {
  PHX_ASSIGN_OR_RETURN(Json root, json::Parse(json_text));
  FakeMachine m;
  PHX_ASSIGN_OR_RETURN(m.driver_version, json::GetString(root, "driverVersion", ""));
  PHX_ASSIGN_OR_RETURN(int64_t cuda, json::GetInt(root, "cudaDriverVersion", ""));
  m.cuda_driver_version = static_cast<int>(cuda);
  PHX_ASSIGN_OR_RETURN(const Json* failures, json::GetOptional(root, "failures", "", Json::value_t::object));
  if (failures != nullptr) {
    PHX_ASSIGN_OR_RETURN(m.driver_not_loaded,
                         Optional<bool>(*failures, "driverNotLoaded", "failures", false, json::GetBool));
  }
  PHX_ASSIGN_OR_RETURN(const Json* profiles, json::GetOptional(root, "migProfiles", "", Json::value_t::array));
  for (size_t i = 0; profiles != nullptr && i < profiles->size(); ++i) {
    PHX_ASSIGN_OR_RETURN(MigProfile p, ParseProfile((*profiles)[i], fmt::format("migProfiles[{}]", i)));
    m.mig_profiles.push_back(std::move(p));
  }
  PHX_ASSIGN_OR_RETURN(m.unsupported, ParseSymbols(root, ""));
  PHX_ASSIGN_OR_RETURN(const Json* gpus, json::GetArray(root, "gpus", ""));
  std::set<std::string> uuids;
  std::set<PciAddress> addresses;
  for (size_t i = 0; i < gpus->size(); ++i) {
    const std::string path = fmt::format("gpus[{}]", i);
    PHX_ASSIGN_OR_RETURN(FakeGpu g, ParseGpu((*gpus)[i], path, static_cast<unsigned int>(i), m, uuids));
    if (!addresses.insert(g.pci).second) {
      return InvalidArgumentError(fmt::format("{}.pciBusId: address used twice", path));
    }
    m.gpus.push_back(std::move(g));
  }
  PHX_RETURN_IF_ERROR(ParseNvLink(root, m, addresses));
  return m;
}

Result<FakeMachine> LoadMachine(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return NotFoundError(fmt::format("cannot read machine file {}: {}", path, std::strerror(errno)));
  }
  std::stringstream text;
  text << in.rdbuf();
  auto machine = ParseMachine(text.str());
  if (!machine.ok()) return machine.status().WithContext(path);
  return machine;
}

}  // namespace phalanx::fake_nvml
