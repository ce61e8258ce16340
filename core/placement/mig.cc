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
  devices_.resize(slices_.size());
  for (size_t i = 0; i < slices_.size(); ++i) {
    const MigSlice& sl = slices_[i];
    auto it = std::find_if(by_profile_.begin(), by_profile_.end(), [&](const Profile& p) { return p.name == sl.profile; });
    if (it == by_profile_.end()) it = by_profile_.insert(by_profile_.end(), Profile{sl.profile, {}, 0, 0});
    it->devices.push_back(static_cast<int>(i));
    it->healthy += sl.healthy;
    // Parent indices are 0..63 and compute slices 1..7 (topology validation); clamped so a
    // malformed device cannot index out of range.
    const int gpu = std::clamp(sl.gpu, 0, kMaxMigGpus - 1);
    const int compute = std::clamp(sl.compute_slices, 0, 127);
    devices_[i] = Device{static_cast<int16_t>(gpu), static_cast<int8_t>(compute), false};
    if (static_cast<size_t>(gpu) >= gpus_.size()) gpus_.resize(static_cast<size_t>(gpu) + 1);
    gpus_[static_cast<size_t>(gpu)].total += compute;
    total_compute_ += compute;
    SetFree(i, sl.healthy);
  }
}

void MigNode::SetFree(size_t i, bool free) {
  Device& d = devices_[i];
  if (d.free == free) return;
  d.free = free;
  const int sign = free ? 1 : -1;
  gpus_[static_cast<size_t>(d.gpu)].free += sign * d.compute;
  free_compute_ += sign * d.compute;
  for (Profile& p : by_profile_) {
    if (p.name == slices_[i].profile) {
      p.free += sign;
      break;
    }
  }
}

const MigNode::Profile* MigNode::FindProfile(std::string_view profile) const {
  for (const Profile& p : by_profile_)
    if (p.name == profile) return &p;
  return nullptr;
}

const std::vector<int>& MigNode::DevicesOf(std::string_view profile) const {
  static const std::vector<int> kNone;
  const Profile* p = FindProfile(profile);
  return p ? p->devices : kNone;
}

int MigNode::Total(std::string_view profile) const { return static_cast<int>(DevicesOf(profile).size()); }

int MigNode::Healthy(std::string_view profile) const {
  const Profile* p = FindProfile(profile);
  return p ? p->healthy : 0;
}

int MigNode::Free(std::string_view profile) const {
  const Profile* p = FindProfile(profile);
  return p ? p->free : 0;
}

int MigNode::FreeComputeOnGpu(int gpu) const {
  if (gpu < 0 || static_cast<size_t>(gpu) >= gpus_.size() || gpu >= kMaxMigGpus) return 0;
  return gpus_[static_cast<size_t>(gpu)].free;
}

int MigNode::TotalComputeOnGpu(int gpu) const {
  if (gpu < 0 || static_cast<size_t>(gpu) >= gpus_.size() || gpu >= kMaxMigGpus) return 0;
  return gpus_[static_cast<size_t>(gpu)].total;
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
  for (int d : devices) {
    holders_[static_cast<size_t>(d)] = pod;
    SetFree(static_cast<size_t>(d), false);
  }
  return true;
}

int MigNode::Release(const PodUid& pod) {
  int n = 0;
  for (size_t i = 0; i < holders_.size(); ++i) {
    if (holders_[i] == pod) {
      holders_[i] = PodUid();
      SetFree(i, slices_[i].healthy);
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
  const MigNode::Profile* p = node.FindProfile(r.profile);
  const int healthy = p ? p->healthy : 0;
  f.free = p ? p->free : 0;
  f.total = p ? static_cast<int>(p->devices.size()) : 0;
  if (node.empty()) f.reason = MigUnfitReason::kNoMig;
  else if (f.total == 0) f.reason = MigUnfitReason::kNoSuchProfile;
  else if (f.total < r.count) f.reason = MigUnfitReason::kTooFewDevices;
  else if (healthy < r.count) f.reason = MigUnfitReason::kUnhealthy;
  else if (f.free < r.count) f.reason = MigUnfitReason::kInUse;
  return f;
}

std::optional<MigChoice> ChooseMigDevices(const MigNode& node, const MigRequest& r) {
  if (r.count < 1 || !CheckMigFit(node, r).fits()) return std::nullopt;
  // From the node's index: the profile's devices, their compact records and the per-GPU
  // compute counts (a working copy of the free counts, updated as we pick).
  const std::vector<MigNode::Device>& dev = node.devices();
  const std::vector<MigNode::GpuCompute>& gpus = node.gpu_compute();
  std::array<int, MigNode::kMaxMigGpus> free_on_gpu{};
  for (size_t g = 0; g < gpus.size(); ++g) free_on_gpu[g] = gpus[g].free;
  const std::vector<int>& candidates = node.FindProfile(r.profile)->devices;  // fits: the profile exists
  MigChoice choice;
  choice.devices.reserve(static_cast<size_t>(r.count));
  auto taken = [&](int i) { return std::find(choice.devices.begin(), choice.devices.end(), i) != choice.devices.end(); };
  int taken_compute = 0;
  for (int k = 0; k < r.count; ++k) {
    int best = -1;
    for (int c : candidates) {
      const MigNode::Device& d = dev[static_cast<size_t>(c)];
      if (!d.free || (k > 0 && taken(c))) continue;
      if (best < 0) {
        best = c;
        continue;
      }
      const MigNode::Device& b = dev[static_cast<size_t>(best)];
      const int fi = free_on_gpu[static_cast<size_t>(d.gpu)], fb = free_on_gpu[static_cast<size_t>(b.gpu)];
      // Fullest GPU first; the scan order keeps the lowest GPU and device on ties.
      if (fi < fb || (fi == fb && d.gpu < b.gpu)) best = c;
    }
    if (best < 0) return std::nullopt;  // unreachable after CheckMigFit
    const MigNode::Device& b = dev[static_cast<size_t>(best)];
    free_on_gpu[static_cast<size_t>(b.gpu)] -= b.compute;
    taken_compute += b.compute;
    choice.devices.push_back(best);
  }
  std::sort(choice.devices.begin(), choice.devices.end());
  // Fill after placing: of the GPUs touched, and of the node's whole MIG capacity.
  int gpu_total = 0, gpu_free_after = 0;
  std::array<bool, MigNode::kMaxMigGpus> touched{};
  for (int d : choice.devices) {
    const auto g = static_cast<size_t>(dev[static_cast<size_t>(d)].gpu);
    if (touched[g]) continue;
    touched[g] = true;
    gpu_total += gpus[g].total;
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
