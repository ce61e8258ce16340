#include "core/placement/mig.h"

#include <algorithm>
#include <charconv>
#include <map>

#include <fmt/format.h>

namespace phalanx::placement {
namespace {

constexpr std::string_view kMigResourcePrefix = "nvidia.com/mig-";

// Leading "<n><unit>" of `s` (e.g. "3g" with unit 'g'); advances `s` past it and a '.'.
std::optional<int> TakeCount(std::string_view& s, char unit) {
  int value = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || ptr == s.data() || ptr == s.data() + s.size() || *ptr != unit) return std::nullopt;
  s.remove_prefix(static_cast<size_t>(ptr - s.data()) + 1);
  if (!s.empty() && s.front() == '.') s.remove_prefix(1);
  return value;
}

}  // namespace

std::string MigResourceName(std::string_view profile) { return fmt::format("{}{}", kMigResourcePrefix, profile); }

std::optional<std::string> MigProfileOf(std::string_view resource) {
  if (!resource.starts_with(kMigResourcePrefix) || resource.size() == kMigResourcePrefix.size()) return std::nullopt;
  std::string profile(resource.substr(kMigResourcePrefix.size()));
  if (!MigComputeSlices(profile)) return std::nullopt;
  return profile;
}

std::optional<int> MigComputeSlices(std::string_view profile) {
  std::string_view s = profile;
  std::string_view probe = s;
  if (auto c = TakeCount(probe, 'c')) {  // "1c.3g.40gb": a compute instance
    s = probe;
    if (!TakeCount(s, 'g')) return std::nullopt;
    return *c >= 1 && *c <= 7 ? c : std::nullopt;
  }
  auto g = TakeCount(s, 'g');
  if (!g || *g < 1 || *g > 7 || s.empty()) return std::nullopt;
  return g;
}

MigNode::MigNode(std::vector<MigSlice> slices) : slices_(std::move(slices)), holders_(slices_.size()) {}

int MigNode::Total(std::string_view profile) const {
  return static_cast<int>(std::count_if(slices_.begin(), slices_.end(), [&](const MigSlice& s) { return s.profile == profile; }));
}

int MigNode::Healthy(std::string_view profile) const {
  return static_cast<int>(
      std::count_if(slices_.begin(), slices_.end(), [&](const MigSlice& s) { return s.profile == profile && s.healthy; }));
}

int MigNode::Free(std::string_view profile) const {
  int n = 0;
  for (size_t i = 0; i < slices_.size(); ++i) n += slices_[i].profile == profile && IsFree(i);
  return n;
}

int MigNode::TotalCompute() const {
  int n = 0;
  for (const MigSlice& s : slices_) n += s.compute_slices;
  return n;
}

int MigNode::FreeCompute() const {
  int n = 0;
  for (size_t i = 0; i < slices_.size(); ++i) n += IsFree(i) ? slices_[i].compute_slices : 0;
  return n;
}

int MigNode::FreeComputeOnGpu(int gpu) const {
  int n = 0;
  for (size_t i = 0; i < slices_.size(); ++i) n += slices_[i].gpu == gpu && IsFree(i) ? slices_[i].compute_slices : 0;
  return n;
}

int MigNode::TotalComputeOnGpu(int gpu) const {
  int n = 0;
  for (const MigSlice& s : slices_) n += s.gpu == gpu ? s.compute_slices : 0;
  return n;
}

bool MigNode::Take(const std::vector<int>& devices, const PodUid& pod) {
  for (size_t k = 0; k < devices.size(); ++k) {
    const int d = devices[k];
    if (d < 0 || static_cast<size_t>(d) >= slices_.size() || !holders_[static_cast<size_t>(d)].empty()) return false;
    if (std::find(devices.begin(), devices.begin() + static_cast<std::ptrdiff_t>(k), d) !=
        devices.begin() + static_cast<std::ptrdiff_t>(k)) {
      return false;  // the same device twice
    }
  }
  for (int d : devices) holders_[static_cast<size_t>(d)] = pod;
  return true;
}

int MigNode::Release(const PodUid& pod) {
  int n = 0;
  for (PodUid& h : holders_) {
    if (h == pod) {
      h = PodUid();
      ++n;
    }
  }
  return n;
}

std::vector<int> MigNode::HeldBy(const PodUid& pod) const {
  std::vector<int> out;
  for (size_t i = 0; i < holders_.size(); ++i)
    if (holders_[i] == pod) out.push_back(static_cast<int>(i));
  return out;
}

std::string MigFeasibility::Message() const {
  const std::string resource = MigResourceName(profile);
  switch (reason) {
    case MigUnfitReason::kFits: return "fits";
    case MigUnfitReason::kNoMig: return fmt::format("Insufficient {}: node has no MIG devices", resource);
    case MigUnfitReason::kNoSuchProfile:
      return fmt::format("Insufficient {}: node's MIG layout has no {} device", resource, profile);
    case MigUnfitReason::kTooFewDevices:
      return fmt::format("Insufficient {}: requested {}, node's MIG layout has only {}", resource, requested, total);
    case MigUnfitReason::kUnhealthy:
      return fmt::format("Insufficient {}: requested {}, only {} of {} on healthy GPUs", resource, requested, free, total);
    case MigUnfitReason::kInUse:
      return fmt::format("Insufficient {}: requested {}, {} free of {} (the rest held by pods)", resource, requested,
                         free, total);
  }
  return "unknown";
}

MigFeasibility CheckMigFit(const MigNode& node, const MigRequest& r) {
  MigFeasibility f;
  f.profile = r.profile;
  f.requested = r.count;
  f.total = node.Total(r.profile);
  f.free = node.Free(r.profile);
  if (node.empty()) f.reason = MigUnfitReason::kNoMig;
  else if (f.total == 0) f.reason = MigUnfitReason::kNoSuchProfile;
  else if (f.total < r.count) f.reason = MigUnfitReason::kTooFewDevices;
  else if (node.Healthy(r.profile) < r.count) f.reason = MigUnfitReason::kUnhealthy;
  else if (f.free < r.count) f.reason = MigUnfitReason::kInUse;
  return f;
}

std::optional<MigChoice> ChooseMigDevices(const MigNode& node, const MigRequest& r) {
  if (r.count < 1 || !CheckMigFit(node, r).fits()) return std::nullopt;
  const auto& slices = node.slices();
  std::map<int, int> free_on_gpu;  // free compute slices per GPU, updated as we pick
  for (const MigSlice& s : slices) free_on_gpu.try_emplace(s.gpu, node.FreeComputeOnGpu(s.gpu));
  std::vector<bool> taken(slices.size(), false);
  MigChoice choice;
  for (int k = 0; k < r.count; ++k) {
    int best = -1;
    for (size_t i = 0; i < slices.size(); ++i) {
      if (taken[i] || !node.IsFree(i) || slices[i].profile != r.profile) continue;
      if (best < 0) {
        best = static_cast<int>(i);
        continue;
      }
      const MigSlice& b = slices[static_cast<size_t>(best)];
      const int fi = free_on_gpu[slices[i].gpu], fb = free_on_gpu[b.gpu];
      // Fullest GPU first; the scan order keeps the lowest GPU and device on ties.
      if (fi < fb || (fi == fb && slices[i].gpu < b.gpu)) best = static_cast<int>(i);
    }
    if (best < 0) return std::nullopt;  // unreachable after CheckMigFit
    taken[static_cast<size_t>(best)] = true;
    free_on_gpu[slices[static_cast<size_t>(best)].gpu] -= slices[static_cast<size_t>(best)].compute_slices;
    choice.devices.push_back(best);
  }
  std::sort(choice.devices.begin(), choice.devices.end());
  // Fill after placing: of the GPUs touched, and of the node's whole MIG capacity.
  int gpu_total = 0, gpu_free_after = 0, taken_compute = 0;
  std::vector<int> touched;
  for (int d : choice.devices) {
    taken_compute += slices[static_cast<size_t>(d)].compute_slices;
    const int g = slices[static_cast<size_t>(d)].gpu;
    if (std::find(touched.begin(), touched.end(), g) == touched.end()) touched.push_back(g);
  }
  for (int g : touched) {
    gpu_total += node.TotalComputeOnGpu(g);
    gpu_free_after += free_on_gpu[g];
  }
  const int node_total = node.TotalCompute();
  const int node_free_after = node.FreeCompute() - taken_compute;
  const double gpu_fill = gpu_total > 0 ? static_cast<double>(gpu_total - gpu_free_after) / gpu_total : 1.0;
  const double node_fill = node_total > 0 ? static_cast<double>(node_total - node_free_after) / node_total : 1.0;
  choice.score = std::clamp(5.0 * gpu_fill + 5.0 * node_fill, 0.0, 10.0);
  return choice;
}

}  // namespace phalanx::placement
