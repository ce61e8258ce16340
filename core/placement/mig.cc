#include "core/placement/mig.h"

#include <algorithm>
#include <array>
#include <charconv>

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

MigNode::MigNode(std::vector<MigSlice> slices) : slices_(std::move(slices)), holders_(slices_.size()) {
  for (size_t i = 0; i < slices_.size(); ++i) {
    auto it = std::find_if(by_profile_.begin(), by_profile_.end(), [&](const auto& e) { return e.first == slices_[i].profile; });
    if (it == by_profile_.end()) it = by_profile_.insert(by_profile_.end(), {slices_[i].profile, {}});
    it->second.push_back(static_cast<int>(i));
  }
}

const std::vector<int>& MigNode::DevicesOf(std::string_view profile) const {
  static const std::vector<int> kNone;
  for (const auto& [name, devices] : by_profile_)
    if (name == profile) return devices;
  return kNone;
}

int MigNode::Total(std::string_view profile) const { return static_cast<int>(DevicesOf(profile).size()); }

int MigNode::Healthy(std::string_view profile) const {
  int n = 0;
  for (int d : DevicesOf(profile)) n += slices_[static_cast<size_t>(d)].healthy;
  return n;
}

int MigNode::Free(std::string_view profile) const {
  int n = 0;
  for (int d : DevicesOf(profile)) n += IsFree(static_cast<size_t>(d));
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
  const std::vector<int>& devices = node.DevicesOf(r.profile);
  int healthy = 0;
  for (int d : devices) {
    healthy += node.slices()[static_cast<size_t>(d)].healthy;
    f.free += node.IsFree(static_cast<size_t>(d));
  }
  f.total = static_cast<int>(devices.size());
  if (node.empty()) f.reason = MigUnfitReason::kNoMig;
  else if (f.total == 0) f.reason = MigUnfitReason::kNoSuchProfile;
  else if (f.total < r.count) f.reason = MigUnfitReason::kTooFewDevices;
  else if (healthy < r.count) f.reason = MigUnfitReason::kUnhealthy;
  else if (f.free < r.count) f.reason = MigUnfitReason::kInUse;
  return f;
}

std::optional<MigChoice> ChooseMigDevices(const MigNode& node, const MigRequest& r) {
  if (r.count < 1 || !CheckMigFit(node, r).fits()) return std::nullopt;
  const auto& slices = node.slices();
  // Per parent GPU: free and total compute slices, updated as we pick. One pass: the
  // extender scores thousands of nodes per request.
  std::array<int, 64> free_on_gpu{}, total_on_gpu{};
  int node_total = 0, node_free = 0;
  for (size_t i = 0; i < slices.size(); ++i) {
    const size_t g = static_cast<size_t>(std::clamp(slices[i].gpu, 0, 63));
    total_on_gpu[g] += slices[i].compute_slices;
    node_total += slices[i].compute_slices;
    if (node.IsFree(i)) {
      free_on_gpu[g] += slices[i].compute_slices;
      node_free += slices[i].compute_slices;
    }
  }
  auto gpu_of = [&](size_t i) { return static_cast<size_t>(std::clamp(slices[i].gpu, 0, 63)); };
  const std::vector<int>& candidates = node.DevicesOf(r.profile);
  std::vector<bool> taken(slices.size(), false);
  MigChoice choice;
  choice.devices.reserve(static_cast<size_t>(r.count));
  int taken_compute = 0;
  for (int k = 0; k < r.count; ++k) {
    int best = -1;
    for (int c : candidates) {
      const size_t i = static_cast<size_t>(c);
      if (taken[i] || !node.IsFree(i)) continue;
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

}  // namespace phalanx::placement
