// CheckMigFit and ChooseMigDevices as they were before MigNode kept an index: every
// count from a scan of the node's devices (MigSlice and holder), the profile's devices
// found by name. Slow but obviously right; mig_equivalence_test checks the indexed path
// against it.
#pragma once

#include <algorithm>
#include <array>
#include <optional>
#include <vector>

#include "core/placement/mig.h"

namespace phalanx::placement::reference {

inline std::vector<int> ReferenceDevicesOf(const MigNode& node, std::string_view profile) {
  std::vector<int> out;
  for (size_t i = 0; i < node.slices().size(); ++i)
    if (node.slices()[i].profile == profile) out.push_back(static_cast<int>(i));
  return out;
}

inline bool ReferenceIsFree(const MigNode& node, size_t i) { return node.holder(i).empty() && node.slices()[i].healthy; }

inline MigFeasibility ReferenceCheckMigFit(const MigNode& node, const MigRequest& r) {
  MigFeasibility f;
  f.profile = r.profile;
  f.requested = r.count;
  const std::vector<int> devices = ReferenceDevicesOf(node, r.profile);
  int healthy = 0;
  for (int d : devices) {
    healthy += node.slices()[static_cast<size_t>(d)].healthy;
    f.free += ReferenceIsFree(node, static_cast<size_t>(d));
  }
  f.total = static_cast<int>(devices.size());
  if (node.empty()) f.reason = MigUnfitReason::kNoMig;
  else if (f.total == 0) f.reason = MigUnfitReason::kNoSuchProfile;
  else if (f.total < r.count) f.reason = MigUnfitReason::kTooFewDevices;
  else if (healthy < r.count) f.reason = MigUnfitReason::kUnhealthy;
  else if (f.free < r.count) f.reason = MigUnfitReason::kInUse;
  return f;
}

inline std::optional<MigChoice> ReferenceChooseMigDevices(const MigNode& node, const MigRequest& r) {
  if (r.count < 1 || !ReferenceCheckMigFit(node, r).fits()) return std::nullopt;
  const auto& slices = node.slices();
  // Per parent GPU: free and total compute slices, updated as we pick. One pass: the
  // extender scores thousands of nodes per request.
  std::array<int, 64> free_on_gpu{}, total_on_gpu{};
  int node_total = 0, node_free = 0;
  for (size_t i = 0; i < slices.size(); ++i) {
    const size_t g = static_cast<size_t>(std::clamp(slices[i].gpu, 0, 63));
    total_on_gpu[g] += slices[i].compute_slices;
    node_total += slices[i].compute_slices;
    if (ReferenceIsFree(node, i)) {
      free_on_gpu[g] += slices[i].compute_slices;
      node_free += slices[i].compute_slices;
    }
  }
  auto gpu_of = [&](size_t i) { return static_cast<size_t>(std::clamp(slices[i].gpu, 0, 63)); };
  const std::vector<int> candidates = ReferenceDevicesOf(node, r.profile);
  std::vector<bool> taken(slices.size(), false);
  MigChoice choice;
  choice.devices.reserve(static_cast<size_t>(r.count));
  int taken_compute = 0;
  for (int k = 0; k < r.count; ++k) {
    int best = -1;
    for (int c : candidates) {
      const size_t i = static_cast<size_t>(c);
      if (taken[i] || !ReferenceIsFree(node, i)) continue;
      if (best < 0) {
        best = static_cast<int>(i);
        continue;
      }
      const size_t b = static_cast<size_t>(best);
      const int fi = free_on_gpu[gpu_of(i)], fb = free_on_gpu[gpu_of(b)];
      // Fullest GPU first; the scan order keeps the lowest GPU and device on ties.
      if (fi < fb || (fi == fb && slices[i].gpu < slices[b].gpu)) best = static_cast<int>(i);
    }
    if (best < 0) return std::nullopt;  // unreachable after CheckMigFit
    const size_t b = static_cast<size_t>(best);
    taken[b] = true;
    free_on_gpu[gpu_of(b)] -= slices[b].compute_slices;
    taken_compute += slices[b].compute_slices;
    choice.devices.push_back(best);
  }
  std::sort(choice.devices.begin(), choice.devices.end());
  // Fill after placing: of the GPUs touched, and of the node's whole MIG capacity.
  int gpu_total = 0, gpu_free_after = 0;
  std::array<bool, 64> touched{};
  for (int d : choice.devices) {
    const size_t g = gpu_of(static_cast<size_t>(d));
    if (touched[g]) continue;
    touched[g] = true;
    gpu_total += total_on_gpu[g];
    gpu_free_after += free_on_gpu[g];
  }
  const int node_free_after = node_free - taken_compute;
  const double gpu_fill = gpu_total > 0 ? static_cast<double>(gpu_total - gpu_free_after) / gpu_total : 1.0;
  const double node_fill = node_total > 0 ? static_cast<double>(node_total - node_free_after) / node_total : 1.0;
  choice.score = std::clamp(5.0 * gpu_fill + 5.0 * node_fill, 0.0, 10.0);
  return choice;
}

}  // namespace phalanx::placement::reference
