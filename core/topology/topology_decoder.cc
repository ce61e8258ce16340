// DecodeTopology: JSON text -> NodeTopology in three stages, each failing with a JSON path:
//   1. guards on the raw bytes (size, nesting depth) so hostile input never reaches the
//      parser's worst cases;
//   2. structure: types, required fields, the N×N token matrix, its diagonal and symmetry;
//   3. semantics: ValidateTopology on the built model (shared with the encoder).
// nlohmann is reached only through core/json, which turns its exceptions into Status.
#include <fmt/format.h>

#include <vector>

#include "core/json/json.h"
#include "core/topology/topology_codec.h"
#include "core/topology/topology_validation.h"

namespace phalanx::topology {
namespace {

using json::Json;

// One pass over the bytes counting bracket depth outside strings; malformed text is left
// for the parser to report.
Status CheckNesting(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxTopologyNestingDepth) {
        return InvalidArgumentError(
            fmt::format("<root>: nesting deeper than {} levels", kMaxTopologyNestingDepth));
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return OkStatus();
}

// An integer field that must lie in [lo, hi]; same message as ValidateTopology's ranges.
Result<int> GetBoundedInt(const Json& object, std::string_view key, std::string_view path, int lo, int hi) {
  PHX_ASSIGN_OR_RETURN(int64_t v, json::GetInt(object, key, path));
  if (v < lo || v > hi) {
    return InvalidArgumentError(
        fmt::format("{}: {} is out of range {}..{}", json::JoinPath(path, key), v, lo, hi));
  }
  return static_cast<int>(v);
}

Result<MigDevice> DecodeMig(const Json& obj, const std::string& path) {
  if (!obj.is_object()) {
    return InvalidArgumentError(fmt::format("{}: expected object, got {}", path, json::TypeName(obj)));
  }
  MigDevice mig;
  PHX_ASSIGN_OR_RETURN(std::string uuid, json::GetString(obj, "uuid", path));
  mig.uuid = GpuUuid(std::move(uuid));
  PHX_ASSIGN_OR_RETURN(mig.profile, json::GetString(obj, "profile", path));
  PHX_ASSIGN_OR_RETURN(mig.memory_mib, json::GetUint(obj, "memoryMiB", path));
  PHX_ASSIGN_OR_RETURN(mig.gpu_instance_id, GetBoundedInt(obj, "gpuInstanceId", path, 0, kMaxMigInstanceId));
  PHX_ASSIGN_OR_RETURN(mig.compute_instance_id,
                       GetBoundedInt(obj, "computeInstanceId", path, 0, kMaxMigInstanceId));
  const std::string placement_path = json::JoinPath(path, "placement");
  PHX_ASSIGN_OR_RETURN(const Json* placement, json::GetObject(obj, "placement", path));
  PHX_ASSIGN_OR_RETURN(mig.placement_start,
                       GetBoundedInt(*placement, "start", placement_path, 0, kMigMemorySlices - 1));
  PHX_ASSIGN_OR_RETURN(mig.placement_size,
                       GetBoundedInt(*placement, "size", placement_path, 1, kMigMemorySlices));
  return mig;
}

Result<Gpu> DecodeGpu(const Json& obj, size_t i, size_t gpu_count) {
  const std::string path = fmt::format("gpus[{}]", i);
  if (!obj.is_object()) {
    return InvalidArgumentError(fmt::format("{}: expected object, got {}", path, json::TypeName(obj)));
  }
  Gpu gpu;
  PHX_ASSIGN_OR_RETURN(uint64_t index, json::GetUint(obj, "index", path));
  if (index >= gpu_count) {
    return InvalidArgumentError(
        fmt::format("{}.index: {} is out of range for {} GPUs", path, index, gpu_count));
  }
  gpu.index = static_cast<int>(index);
  PHX_ASSIGN_OR_RETURN(std::string uuid, json::GetString(obj, "uuid", path));
  gpu.uuid = GpuUuid(std::move(uuid));
  PHX_ASSIGN_OR_RETURN(gpu.product, json::GetString(obj, "product", path));
  PHX_ASSIGN_OR_RETURN(gpu.memory_mib, json::GetUint(obj, "memoryMiB", path));

  PHX_ASSIGN_OR_RETURN(const Json* numa,
                       json::GetOptional(obj, "numaNode", path, Json::value_t::number_integer));
  if (numa != nullptr) {
    PHX_ASSIGN_OR_RETURN(gpu.numa_node, GetBoundedInt(obj, "numaNode", path, 0, kMaxNumaNode));
  }
  PHX_ASSIGN_OR_RETURN(const Json* bus, json::GetOptional(obj, "pciBusId", path, Json::value_t::string));
  if (bus != nullptr) {
    gpu.pci_bus_id = bus->get<std::string>();
    if (gpu.pci_bus_id.empty()) {
      return InvalidArgumentError(fmt::format("{}.pciBusId: must not be empty (omit it when unknown)", path));
    }
  }

  PHX_ASSIGN_OR_RETURN(std::string health, json::GetString(obj, "health", path));
  if (health == "Healthy") {
    gpu.health = Health::kHealthy;
  } else if (health == "Unhealthy") {
    gpu.health = Health::kUnhealthy;
  } else {
    return InvalidArgumentError(
        fmt::format("{}.health: unknown value \"{}\" (expected \"Healthy\" or \"Unhealthy\")", path,
                    std::string_view(health).substr(0, 32)));
  }
  PHX_ASSIGN_OR_RETURN(const Json* reason,
                       json::GetOptional(obj, "healthReason", path, Json::value_t::string));
  if (reason != nullptr) gpu.health_reason = reason->get<std::string>();

  PHX_ASSIGN_OR_RETURN(const Json* rate,
                       json::GetOptional(obj, "nvlinkGBpsPerLink", path, Json::value_t::number_float));
  if (rate != nullptr) gpu.nvlink_gbps_per_link = rate->get<double>();

  PHX_ASSIGN_OR_RETURN(gpu.mig_enabled, json::GetBool(obj, "migEnabled", path));
  PHX_ASSIGN_OR_RETURN(const Json* migs, json::GetOptional(obj, "migDevices", path, Json::value_t::array));
  if (migs != nullptr) {
    // Bound the work before decoding the entries; ValidateTopology repeats the check.
    if (migs->size() > static_cast<size_t>(kMaxMigDevicesPerGpu)) {
      return InvalidArgumentError(fmt::format("{}.migDevices: {} MIG devices exceed the limit of {} per GPU",
                                              path, migs->size(), kMaxMigDevicesPerGpu));
    }
    gpu.mig_devices.reserve(migs->size());
    for (size_t k = 0; k < migs->size(); ++k) {
      PHX_ASSIGN_OR_RETURN(MigDevice mig, DecodeMig((*migs)[k], fmt::format("{}.migDevices[{}]", path, k)));
      gpu.mig_devices.push_back(std::move(mig));
    }
  }
  return gpu;
}

Result<LinkMatrix> DecodeLinks(const Json& root, size_t n) {
  PHX_ASSIGN_OR_RETURN(const Json* rows, json::GetArray(root, "links", ""));
  if (rows->size() != n) {
    return InvalidArgumentError(
        fmt::format("links: expected {} rows (one per GPU), got {}", n, rows->size()));
  }
  std::vector<Link> cells(n * n);
  for (size_t i = 0; i < n; ++i) {
    const Json& row = (*rows)[i];
    if (!row.is_array()) {
      return InvalidArgumentError(fmt::format("links[{}]: expected array, got {}", i, json::TypeName(row)));
    }
    if (row.size() != n) {
      return InvalidArgumentError(fmt::format("links[{}]: expected {} entries, got {}", i, n, row.size()));
    }
    for (size_t j = 0; j < n; ++j) {
      const Json& cell = row[j];
      if (!cell.is_string()) {
        return InvalidArgumentError(
            fmt::format("links[{}][{}]: expected string, got {}", i, j, json::TypeName(cell)));
      }
      const std::string& token = cell.get_ref<const std::string&>();
      Result<Link> link = ParseLinkToken(token);
      if (!link.ok()) return link.status().WithContext(fmt::format("links[{}][{}]", i, j));
      if (i == j && !link->is_self()) {
        return InvalidArgumentError(
            fmt::format("links[{}][{}]: diagonal must be \"X\", got \"{}\"", i, j, token));
      }
      if (i != j && link->is_self()) {
        return InvalidArgumentError(
            fmt::format("links[{}][{}]: \"X\" is only allowed on the diagonal", i, j));
      }
      cells[i * n + j] = *link;
    }
  }
  LinkMatrix matrix(static_cast<int>(n));
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      const Link& a = cells[i * n + j];
      const Link& b = cells[j * n + i];
      if (a != b) {
        return InvalidArgumentError(
            fmt::format("links[{}][{}]: asymmetric: links[{}][{}]=\"{}\" but links[{}][{}]=\"{}\"", i, j, i,
                        j, a.Token(), j, i, b.Token()));
      }
      matrix.Set(static_cast<int>(i), static_cast<int>(j), a);
    }
  }
  return matrix;
}

Result<std::string> GetOptionalString(const Json& root, std::string_view key) {
  PHX_ASSIGN_OR_RETURN(const Json* v, json::GetOptional(root, key, "", Json::value_t::string));
  return v == nullptr ? std::string() : v->get<std::string>();
}

}  // namespace

Result<NodeTopology> DecodeTopology(std::string_view document) {
  if (document.size() > kMaxTopologyDocumentBytes) {
    return InvalidArgumentError(fmt::format("<root>: document of {} bytes exceeds the limit of {} bytes",
                                            document.size(), kMaxTopologyDocumentBytes));
  }
  PHX_RETURN_IF_ERROR(CheckNesting(document));
  Result<Json> parsed = json::Parse(document, kMaxTopologyDocumentBytes);
  if (!parsed.ok()) return parsed.status().WithContext("<root>");
  const Json& root = *parsed;

  PHX_ASSIGN_OR_RETURN(uint64_t version, json::GetUint(root, "version", ""));
  if (version != static_cast<uint64_t>(kTopologyVersion)) {
    return InvalidArgumentError(fmt::format("version: unsupported version {} (this reader understands {})",
                                            version, kTopologyVersion));
  }
  NodeTopology topology;
  PHX_ASSIGN_OR_RETURN(topology.driver_version, GetOptionalString(root, "driverVersion"));
  PHX_ASSIGN_OR_RETURN(topology.cuda_version, GetOptionalString(root, "cudaVersion"));
  PHX_ASSIGN_OR_RETURN(topology.nvlink_domain, GetOptionalString(root, "nvlinkDomain"));

  PHX_ASSIGN_OR_RETURN(const Json* gpus, json::GetArray(root, "gpus", ""));
  if (gpus->empty()) return InvalidArgumentError("gpus: must list at least one GPU");
  if (gpus->size() > static_cast<size_t>(kMaxGpus)) {
    return InvalidArgumentError(fmt::format("gpus: {} GPUs exceed the limit of {}", gpus->size(), kMaxGpus));
  }
  topology.gpus.reserve(gpus->size());
  for (size_t i = 0; i < gpus->size(); ++i) {
    PHX_ASSIGN_OR_RETURN(Gpu gpu, DecodeGpu((*gpus)[i], i, gpus->size()));
    topology.gpus.push_back(std::move(gpu));
  }
  PHX_ASSIGN_OR_RETURN(topology.links, DecodeLinks(root, gpus->size()));
  PHX_RETURN_IF_ERROR(ValidateTopology(topology));
  return topology;
}

}  // namespace phalanx::topology
