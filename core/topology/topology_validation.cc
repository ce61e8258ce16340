#include "core/topology/topology_validation.h"

#include <fmt/format.h>

#include <cmath>
#include <string>
#include <unordered_map>
#include <vector>

namespace phalanx::topology {
namespace {

std::string GpuPath(size_t i) { return fmt::format("gpus[{}]", i); }
std::string MigPath(size_t i, size_t k) { return fmt::format("gpus[{}].migDevices[{}]", i, k); }

Status Invalid(std::string_view path, std::string_view what) {
  return InvalidArgumentError(fmt::format("{}: {}", path, what));
}

template <typename T, typename U>
Status CheckRange(std::string_view path, T value, U lo, U hi) {
  if (value < static_cast<T>(lo) || value > static_cast<T>(hi)) {
    return Invalid(path, fmt::format("{} is out of range {}..{}", value, lo, hi));
  }
  return OkStatus();
}

// Printable ASCII without spaces: identifiers stay readable in `kubectl get node -o yaml`
// and safe to paste into CUDA_VISIBLE_DEVICES or a label.
bool IsIdentifierChars(std::string_view s) {
  for (char c : s) {
    if (c <= 0x20 || c >= 0x7f) return false;
  }
  return true;
}

// Valid UTF-8 without control characters. The decoder only ever sees valid UTF-8
// (nlohmann rejects the rest), so this guards the encoder: a byte sequence that JSON
// cannot carry would otherwise be altered on the way out and break Decode(Encode(t)) == t.
bool IsCleanText(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) return false;
    size_t extra = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xe0) == 0xc0) {
      extra = 1, cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      extra = 2, cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      extra = 3, cp = c & 0x07;
    } else {
      return false;
    }
    if (i + extra >= s.size()) return false;  // truncated sequence
    for (size_t k = 1; k <= extra; ++k) {
      auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    // Reject overlong forms, surrogates and values past U+10FFFF.
    static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[extra] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += extra + 1;
  }
  return true;
}

Status CheckText(std::string_view path, std::string_view s, size_t max_len, bool required) {
  if (required && s.empty()) return Invalid(path, "must not be empty");
  if (s.size() > max_len) {
    return Invalid(path, fmt::format("{} bytes exceed the limit of {}", s.size(), max_len));
  }
  if (!IsCleanText(s)) return Invalid(path, "must be UTF-8 text without control characters");
  return OkStatus();
}

Status CheckUuid(std::string_view path, std::string_view uuid, std::string_view prefix) {
  if (uuid.substr(0, prefix.size()) != prefix) {
    return Invalid(path,
                   fmt::format("\"{}\" must start with \"{}\"", uuid.substr(0, kMaxUuidLength), prefix));
  }
  if (uuid.size() == prefix.size() || uuid.size() > kMaxUuidLength || !IsIdentifierChars(uuid)) {
    return Invalid(path, fmt::format("must be {}<id> with at most {} printable ASCII characters "
                                     "and no spaces",
                                     prefix, kMaxUuidLength));
  }
  return OkStatus();
}

bool IsLabelValue(std::string_view s) {
  if (s.empty()) return true;
  if (s.size() > kMaxLabelValueLength) return false;
  auto alnum = [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  };
  if (!alnum(s.front()) || !alnum(s.back())) return false;
  for (char c : s) {
    if (!alnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

// Parses a positive decimal without leading zeros; advances `s`. 0 on failure.
int TakeNumber(std::string_view& s) {
  size_t n = 0;
  while (n < s.size() && n < 5 && s[n] >= '0' && s[n] <= '9') ++n;
  if (n == 0 || s[0] == '0') return 0;
  int v = 0;
  for (size_t k = 0; k < n; ++k) v = v * 10 + (s[k] - '0');
  s.remove_prefix(n);
  return v;
}

bool Consume(std::string_view& s, std::string_view lit) {
  if (s.substr(0, lit.size()) != lit) return false;
  s.remove_prefix(lit.size());
  return true;
}

bool IsHex(std::string_view s) {
  for (char c : s) {
    bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    if (!hex) return false;
  }
  return !s.empty();
}

// Canonical key of a bus id for duplicate detection: the domain widths and hex case of
// NVML and sysfs differ for the same device.
std::string BusKey(std::string_view bus_id) {
  size_t colon = bus_id.find(':');
  uint64_t domain = 0;
  for (char c : bus_id.substr(0, colon)) {
    int digit = c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
    domain = domain * 16 + static_cast<uint64_t>(digit);
  }
  std::string key = fmt::format("{:08x}", domain);
  for (char c : bus_id.substr(colon)) key.push_back(c >= 'A' && c <= 'F' ? static_cast<char>(c | 0x20) : c);
  return key;
}

struct Seen {
  size_t gpu;
  long mig;  // -1: the GPU itself
};

std::string SeenPath(const Seen& s) {
  return s.mig < 0 ? GpuPath(s.gpu) : MigPath(s.gpu, static_cast<size_t>(s.mig));
}

Status ValidateMig(const Gpu& gpu, size_t i, std::unordered_map<std::string, Seen>& uuids) {
  const std::string gpu_path = GpuPath(i);
  if (!gpu.mig_enabled && !gpu.mig_devices.empty()) {
    return Invalid(gpu_path + ".migDevices",
                   fmt::format("{} MIG devices listed but migEnabled is false", gpu.mig_devices.size()));
  }
  if (gpu.mig_devices.size() > static_cast<size_t>(kMaxMigDevicesPerGpu)) {
    return Invalid(gpu_path + ".migDevices", fmt::format("{} MIG devices exceed the limit of {} per GPU",
                                                         gpu.mig_devices.size(), kMaxMigDevicesPerGpu));
  }
  for (size_t k = 0; k < gpu.mig_devices.size(); ++k) {
    const MigDevice& mig = gpu.mig_devices[k];
    const std::string path = MigPath(i, k);
    PHX_RETURN_IF_ERROR(CheckUuid(path + ".uuid", mig.uuid.str(), "MIG-"));
    auto [it, inserted] = uuids.emplace(mig.uuid.str(), Seen{i, static_cast<long>(k)});
    if (!inserted) {
      return Invalid(path + ".uuid", fmt::format("duplicate of {}.uuid", SeenPath(it->second)));
    }
    if (!IsMigProfileName(mig.profile)) {
      return Invalid(path + ".profile", fmt::format("\"{}\" is not a MIG profile like 1g.10gb or 3g.40gb",
                                                    std::string_view(mig.profile).substr(0, 32)));
    }
    PHX_RETURN_IF_ERROR(CheckRange(path + ".memoryMiB", mig.memory_mib, uint64_t{1}, kMaxMemoryMiB));
    if (mig.memory_mib > gpu.memory_mib) {
      return Invalid(path + ".memoryMiB",
                     fmt::format("{} exceeds the GPU's memoryMiB {}", mig.memory_mib, gpu.memory_mib));
    }
    PHX_RETURN_IF_ERROR(CheckRange(path + ".gpuInstanceId", mig.gpu_instance_id, 0, kMaxMigInstanceId));
    PHX_RETURN_IF_ERROR(
        CheckRange(path + ".computeInstanceId", mig.compute_instance_id, 0, kMaxMigInstanceId));
    PHX_RETURN_IF_ERROR(CheckRange(path + ".placement.start", mig.placement_start, 0, kMigMemorySlices - 1));
    PHX_RETURN_IF_ERROR(CheckRange(path + ".placement.size", mig.placement_size, 1, kMigMemorySlices));
    const int end = mig.placement_start + mig.placement_size;  // exclusive
    if (end > kMigMemorySlices) {
      return Invalid(path + ".placement",
                     fmt::format("start {} + size {} exceeds the GPU's {} memory slices", mig.placement_start,
                                 mig.placement_size, kMigMemorySlices));
    }
    for (size_t prev = 0; prev < k; ++prev) {
      const MigDevice& other = gpu.mig_devices[prev];
      const std::string other_path = MigPath(i, prev);
      // Compute instances of one GPU instance share its placement; distinct GPU
      // instances own disjoint memory slices.
      if (other.gpu_instance_id == mig.gpu_instance_id) {
        if (other.compute_instance_id == mig.compute_instance_id) {
          return Invalid(path, fmt::format("duplicate of {} (gpuInstanceId {}, computeInstanceId {})",
                                           other_path, mig.gpu_instance_id, mig.compute_instance_id));
        }
        if (other.placement_start != mig.placement_start || other.placement_size != mig.placement_size) {
          return Invalid(path + ".placement",
                         fmt::format("differs from {}.placement of the same GPU instance {}", other_path,
                                     mig.gpu_instance_id));
        }
        continue;
      }
      const int other_end = other.placement_start + other.placement_size;
      if (mig.placement_start < other_end && other.placement_start < end) {
        return Invalid(path + ".placement",
                       fmt::format("slices {}..{} overlap {}.placement (slices {}..{})", mig.placement_start,
                                   end - 1, other_path, other.placement_start, other_end - 1));
      }
    }
  }
  return OkStatus();
}

Status ValidateGpu(const NodeTopology& t, size_t i, std::vector<long>& index_owner,
                   std::unordered_map<std::string, Seen>& uuids,
                   std::unordered_map<std::string, size_t>& bus_ids) {
  const Gpu& gpu = t.gpus[i];
  const std::string path = GpuPath(i);
  const int n = t.gpu_count();
  if (gpu.index < 0 || gpu.index >= n) {
    return Invalid(path + ".index", fmt::format("{} is out of range for {} GPUs", gpu.index, n));
  }
  long& owner = index_owner[static_cast<size_t>(gpu.index)];
  if (owner >= 0) return Invalid(path + ".index", fmt::format("duplicate of gpus[{}].index", owner));
  owner = static_cast<long>(i);
  if (static_cast<size_t>(gpu.index) != i) {
    return Invalid(
        path + ".index",
        fmt::format("{} is out of order: GPUs must be listed by index, expected {}", gpu.index, i));
  }
  PHX_RETURN_IF_ERROR(CheckUuid(path + ".uuid", gpu.uuid.str(), "GPU-"));
  auto [it, inserted] = uuids.emplace(gpu.uuid.str(), Seen{i, -1});
  if (!inserted) {
    return Invalid(path + ".uuid", fmt::format("duplicate of {}.uuid", SeenPath(it->second)));
  }
  PHX_RETURN_IF_ERROR(CheckText(path + ".product", gpu.product, kMaxProductLength, /*required=*/true));
  PHX_RETURN_IF_ERROR(CheckRange(path + ".memoryMiB", gpu.memory_mib, uint64_t{1}, kMaxMemoryMiB));
  if (gpu.numa_node) PHX_RETURN_IF_ERROR(CheckRange(path + ".numaNode", *gpu.numa_node, 0, kMaxNumaNode));
  if (!gpu.pci_bus_id.empty()) {
    if (!IsPciBusId(gpu.pci_bus_id)) {
      return Invalid(path + ".pciBusId", fmt::format("\"{}\" is not a PCI bus id like 00000000:18:00.0",
                                                     std::string_view(gpu.pci_bus_id).substr(0, 32)));
    }
    auto [bit, fresh] = bus_ids.emplace(BusKey(gpu.pci_bus_id), i);
    if (!fresh)
      return Invalid(path + ".pciBusId", fmt::format("duplicate of gpus[{}].pciBusId", bit->second));
  }
  if (gpu.health == Health::kHealthy && !gpu.health_reason.empty()) {
    return Invalid(path + ".healthReason", "only allowed when health is Unhealthy");
  }
  PHX_RETURN_IF_ERROR(CheckText(path + ".healthReason", gpu.health_reason, kMaxReasonLength, false));
  if (!std::isfinite(gpu.nvlink_gbps_per_link) || gpu.nvlink_gbps_per_link < 0 ||
      gpu.nvlink_gbps_per_link > kMaxNvlinkGbpsPerLink) {
    return Invalid(path + ".nvlinkGBpsPerLink",
                   fmt::format("{} is out of range 0..{}", gpu.nvlink_gbps_per_link, kMaxNvlinkGbpsPerLink));
  }
  return ValidateMig(gpu, i, uuids);
}

Status ValidateLinks(const NodeTopology& t) {
  const int n = t.gpu_count();
  if (t.links.size() != n) {
    return Invalid("links", fmt::format("expected {} rows (one per GPU), got {}", n, t.links.size()));
  }
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      const Link& link = t.links.at(i, j);
      if ((i == j) != link.is_self() ||
          (link.is_nvlink() && (link.nvlinks() < 1 || link.nvlinks() > kMaxNvlinksPerPair))) {
        return Invalid(fmt::format("links[{}][{}]", i, j), fmt::format("invalid link {}", link.Token()));
      }
      if (link.is_nvlink() && !(t.gpus[static_cast<size_t>(i)].nvlink_gbps_per_link > 0)) {
        return Invalid(fmt::format("gpus[{}].nvlinkGBpsPerLink", i),
                       fmt::format("required because links[{}][{}] is {}", i, j, link.Token()));
      }
    }
  }
  return OkStatus();
}

}  // namespace

bool IsMigProfileName(std::string_view s) {
  std::string_view rest = s;
  int first = TakeNumber(rest);
  if (first == 0) return false;
  int compute = 0;
  int gpu_slices = first;
  if (Consume(rest, "c.")) {
    compute = first;
    gpu_slices = TakeNumber(rest);
  }
  if (gpu_slices < 1 || gpu_slices > kMigMemorySlices || compute > gpu_slices) return false;
  if (!Consume(rest, "g.") || TakeNumber(rest) == 0 || !Consume(rest, "gb")) return false;
  while (!rest.empty()) {
    if (!Consume(rest, "+")) return false;
    size_t n = 0;
    while (n < rest.size() && ((rest[n] >= 'a' && rest[n] <= 'z') || (rest[n] >= '0' && rest[n] <= '9'))) ++n;
    if (n == 0 || n > 16) return false;
    rest.remove_prefix(n);
  }
  return true;
}

bool IsPciBusId(std::string_view s) {
  // domain ':' bus ':' device '.' function
  size_t c1 = s.find(':');
  if (c1 != 4 && c1 != 8) return false;
  return s.size() == c1 + 8 && IsHex(s.substr(0, c1)) && s[c1] == ':' && IsHex(s.substr(c1 + 1, 2)) &&
         s[c1 + 3] == ':' && IsHex(s.substr(c1 + 4, 2)) && s[c1 + 6] == '.' && IsHex(s.substr(c1 + 7, 1));
}

Status ValidateTopology(const NodeTopology& t) {
  if (t.gpus.empty()) return Invalid("gpus", "must list at least one GPU");
  if (t.gpus.size() > static_cast<size_t>(kMaxGpus)) {
    return Invalid("gpus", fmt::format("{} GPUs exceed the limit of {}", t.gpus.size(), kMaxGpus));
  }
  std::vector<long> index_owner(t.gpus.size(), -1);
  std::unordered_map<std::string, Seen> uuids;
  std::unordered_map<std::string, size_t> bus_ids;
  uuids.reserve(t.gpus.size() * 2);
  for (size_t i = 0; i < t.gpus.size(); ++i) {
    PHX_RETURN_IF_ERROR(ValidateGpu(t, i, index_owner, uuids, bus_ids));
  }
  PHX_RETURN_IF_ERROR(ValidateLinks(t));
  if (!IsLabelValue(t.nvlink_domain)) {
    return Invalid("nvlinkDomain",
                   fmt::format("\"{}\" is not a label value (at most {} of [A-Za-z0-9._-], "
                               "alphanumeric at both ends)",
                               std::string_view(t.nvlink_domain).substr(0, 80), kMaxLabelValueLength));
  }
  for (auto [key, value] :
       {std::pair<std::string_view, const std::string*>{"driverVersion", &t.driver_version},
        {"cudaVersion", &t.cuda_version}}) {
    if (value->size() > kMaxVersionLength || !IsIdentifierChars(*value)) {
      return Invalid(key, fmt::format("must be at most {} printable ASCII characters without spaces",
                                      kMaxVersionLength));
    }
  }
  return OkStatus();
}

}  // namespace phalanx::topology
