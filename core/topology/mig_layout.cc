#include "core/topology/mig_layout.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>

#include "core/topology/node_topology.h"
#include "core/topology/synthetic_uuid.h"

namespace phalanx::topology {
namespace {

constexpr uint8_t Starts(std::initializer_list<int> starts) {
  uint8_t mask = 0;
  for (int s : starts) mask = static_cast<uint8_t>(mask | (1u << s));
  return mask;
}

// Allowed starts are the same on A100 and H100 (MIG user guide, "A100/H100 MIG profiles").
constexpr std::array kA100_40Gb = {
    MigProfileSpec{"1g.5gb", 1, 1, Starts({0, 1, 2, 3, 4, 5, 6}), 4864},
    MigProfileSpec{"1g.10gb", 1, 2, Starts({0, 2, 4, 6}), 9856},
    MigProfileSpec{"2g.10gb", 2, 2, Starts({0, 2, 4}), 9856},
    MigProfileSpec{"3g.20gb", 3, 4, Starts({0, 4}), 19968},
    MigProfileSpec{"4g.20gb", 4, 4, Starts({0}), 19968},
    MigProfileSpec{"7g.40gb", 7, 8, Starts({0}), 40192},
};
constexpr std::array kA100_80Gb = {
    MigProfileSpec{"1g.10gb", 1, 1, Starts({0, 1, 2, 3, 4, 5, 6}), 9728},
    MigProfileSpec{"1g.20gb", 1, 2, Starts({0, 2, 4, 6}), 19968},
    MigProfileSpec{"2g.20gb", 2, 2, Starts({0, 2, 4}), 19968},
    MigProfileSpec{"3g.40gb", 3, 4, Starts({0, 4}), 40192},
    MigProfileSpec{"4g.40gb", 4, 4, Starts({0}), 40192},
    MigProfileSpec{"7g.80gb", 7, 8, Starts({0}), 80896},
};
constexpr std::array kH100_80Gb = {
    MigProfileSpec{"1g.10gb", 1, 1, Starts({0, 1, 2, 3, 4, 5, 6}), 9984},
    MigProfileSpec{"1g.20gb", 1, 2, Starts({0, 2, 4, 6}), 20096},
    MigProfileSpec{"2g.20gb", 2, 2, Starts({0, 2, 4}), 20096},
    MigProfileSpec{"3g.40gb", 3, 4, Starts({0, 4}), 40448},
    MigProfileSpec{"4g.40gb", 4, 4, Starts({0}), 40448},
    MigProfileSpec{"7g.80gb", 7, 8, Starts({0}), 81152},
};

const MigProfileSpec* FindProfile(std::span<const MigProfileSpec> table, std::string_view name) {
  for (const MigProfileSpec& spec : table) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

// Depth-first search over start slices; `used` is the bitmask of occupied memory slices.
// At most 7 instances with at most 7 starts each, so exhaustive search is instant.
bool Place(const std::vector<const MigProfileSpec*>& specs, size_t k, uint32_t used,
           std::vector<int>& starts) {
  if (k == specs.size()) return true;
  const MigProfileSpec& spec = *specs[k];
  for (int s = 0; s < kMigMemorySlices; ++s) {
    if ((spec.allowed_starts & (1u << s)) == 0 || s + spec.memory_slices > kMigMemorySlices) continue;
    uint32_t mask = ((1u << spec.memory_slices) - 1) << s;
    if ((used & mask) != 0) continue;
    starts[k] = s;
    if (Place(specs, k + 1, used | mask, starts)) return true;
  }
  return false;
}

}  // namespace

std::span<const MigProfileSpec> MigProfilesFor(std::string_view product) {
  auto has = [product](std::string_view s) { return product.find(s) != std::string_view::npos; };
  if (has("H100") && has("80GB")) return kH100_80Gb;
  if (has("A100") && has("80GB")) return kA100_80Gb;
  if (has("A100") && has("40GB")) return kA100_40Gb;
  return {};
}

Status ApplyMigLayout(Gpu& gpu, const std::vector<std::string>& profiles) {
  std::span<const MigProfileSpec> table = MigProfilesFor(gpu.product);
  if (table.empty()) {
    return InvalidArgumentError(fmt::format("no MIG profile table for product \"{}\"", gpu.product));
  }
  if (profiles.size() > static_cast<size_t>(kMaxMigDevicesPerGpu)) {
    return InvalidArgumentError(
        fmt::format("{} MIG devices exceed the limit of {} per GPU", profiles.size(), kMaxMigDevicesPerGpu));
  }
  std::vector<const MigProfileSpec*> specs;
  int compute = 0;
  for (const std::string& name : profiles) {
    const MigProfileSpec* spec = FindProfile(table, name);
    if (spec == nullptr) {
      return InvalidArgumentError(fmt::format("unknown MIG profile \"{}\" for \"{}\"", name, gpu.product));
    }
    compute += spec->compute_slices;
    specs.push_back(spec);
  }
  if (compute > kMigComputeSlices) {
    return InvalidArgumentError(fmt::format("layout [{}] needs {} compute slices, more than {}",
                                            fmt::join(profiles, ", "), compute, kMigComputeSlices));
  }
  std::vector<int> starts(specs.size(), 0);
  if (!Place(specs, 0, 0, starts)) {
    return InvalidArgumentError(
        fmt::format("layout [{}] has no valid placement on \"{}\"", fmt::join(profiles, ", "), gpu.product));
  }
  std::vector<MigDevice> devices;
  for (size_t k = 0; k < specs.size(); ++k) {
    MigDevice mig;
    mig.uuid = GpuUuid(SyntheticUuid("MIG-", gpu.uuid.str(), k));
    mig.profile = std::string(specs[k]->name);
    mig.memory_mib = specs[k]->memory_mib;
    mig.gpu_instance_id = static_cast<int>(k) + 1;
    mig.compute_instance_id = 0;
    mig.placement_start = starts[k];
    mig.placement_size = specs[k]->memory_slices;
    devices.push_back(std::move(mig));
  }
  gpu.mig_enabled = true;
  gpu.mig_devices = std::move(devices);
  return OkStatus();
}

}  // namespace phalanx::topology
