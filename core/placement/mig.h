// MIG devices as schedulable capacity (docs/architecture.md §4, docs/device-plugin.md "mixed"): the
// pure feasibility, best-fit choice and score for pods requesting
// `nvidia.com/mig-<profile>`, shared by the extender and the simulator.
//
// Model: MIG layouts are static. The device plugin advertises the MIG devices that exist
// (NVML GPU instances), one resource per profile; nothing here creates or destroys GPU
// instances. A node's MIG capacity is therefore its list of MIG devices, each on a
// parent GPU, with a profile and a compute-slice size, free or held by one pod.
//
// Best fit: a request takes free devices of its profile on the GPU whose MIG devices are
// already the most used (fewest free compute slices left), so slices are packed onto
// GPUs that are partly in use and a GPU whose devices are all free is only broken into
// when no partly used GPU has a device of that profile left. Ties: lowest GPU index, then
// lowest device. The score (0..10) rewards the same: the fill of the chosen GPUs and of
// the node's MIG capacity after placing.
//
// Pure and thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/ids.h"

namespace phalanx::placement {

// One MIG device of a node.
struct MigSlice {
  int gpu = 0;               // parent GPU index
  std::string profile;       // "1g.10gb" (nvidia-smi profile name)
  int compute_slices = 1;    // the "1g": 1..7
  std::string device_id;     // the ID kubelet knows ("MIG-<uuid>"); may be synthetic in the simulator
  bool healthy = true;       // false when the parent GPU is unhealthy
};

// "nvidia.com/mig-1g.10gb" for "1g.10gb".
std::string MigResourceName(std::string_view profile);
// The profile of an `nvidia.com/mig-<profile>` resource name; nullopt for any other.
std::optional<std::string> MigProfileOf(std::string_view resource);
// Compute slices of a profile name: "3g.40gb" -> 3, "1c.3g.40gb" -> 1 (a compute
// instance of a 3g GPU instance), "1g.10gb+me" -> 1; nullopt if it is not a MIG profile.
std::optional<int> MigComputeSlices(std::string_view profile);

// MIG accounting of one node: its devices and who holds each, indexed for the extender's
// per-request pass over thousands of nodes: per profile its devices and their healthy and
// free counts, per device a 4-byte record (parent GPU, compute slices, free), per parent
// GPU its total and free compute slices. Take and Release keep the counts, so feasibility
// is O(1) after the profile lookup and best fit reads only the compact records of the
// requested profile's devices (MigSlice carries two strings: 80 bytes a device).
class MigNode {
 public:
  MigNode() = default;
  explicit MigNode(std::vector<MigSlice> slices);

  const std::vector<MigSlice>& slices() const { return slices_; }
  bool empty() const { return slices_.empty(); }
  // Holder of device `i`; empty when free.
  const PodUid& holder(size_t i) const { return holders_[i]; }
  bool IsFree(size_t i) const { return holders_[i].empty() && slices_[i].healthy; }

  int Total(std::string_view profile) const;    // devices of the profile
  int Healthy(std::string_view profile) const;  // ... on healthy GPUs
  int Free(std::string_view profile) const;     // ... healthy and not held
  // Compute slices of the node's / one GPU's MIG devices: all, and free.
  int TotalCompute() const { return total_compute_; }
  int FreeCompute() const { return free_compute_; }
  int FreeComputeOnGpu(int gpu) const;
  int TotalComputeOnGpu(int gpu) const;

  // The index the queries above read (ChooseMigDevices and CheckMigFit use it directly).
  struct Device {
    int16_t gpu = 0;  // parent GPU, clamped to 0..kMaxMigGpus-1
    int8_t compute = 1;
    bool free = false;  // healthy and not held
  };
  struct Profile {
    std::string name;
    std::vector<int> devices;  // ascending
    int healthy = 0;
    int free = 0;
  };
  struct GpuCompute {
    int total = 0;
    int free = 0;
  };
  static constexpr int kMaxMigGpus = 64;
  const std::vector<Device>& devices() const { return devices_; }
  // Null if no device has the profile.
  const Profile* FindProfile(std::string_view profile) const;
  // Indexed by parent GPU (0..max GPU index with MIG devices).
  const std::vector<GpuCompute>& gpu_compute() const { return gpus_; }

  // Marks devices held by `pod`. False (nothing changed) if one is out of range or held.
  bool Take(const std::vector<int>& devices, const PodUid& pod);
  // Frees every device `pod` holds; the number freed.
  int Release(const PodUid& pod);
  // Devices `pod` holds, ascending.
  std::vector<int> HeldBy(const PodUid& pod) const;
  // Devices of a profile, ascending; empty if the node has none.
  const std::vector<int>& DevicesOf(std::string_view profile) const;

 private:
  void SetFree(size_t i, bool free);  // keeps the counts

  std::vector<MigSlice> slices_;
  std::vector<PodUid> holders_;
  std::vector<Device> devices_;  // parallel to slices_
  std::vector<Profile> by_profile_;
  std::vector<GpuCompute> gpus_;
  int total_compute_ = 0;
  int free_compute_ = 0;
};

struct MigRequest {
  std::string profile;  // "1g.10gb"
  int count = 1;        // devices wanted (the resource quantity)
};

enum class MigUnfitReason {
  kFits = 0,
  kNoMig,            // the node has no MIG devices at all
  kNoSuchProfile,    // none of its devices has the profile (MIG geometry)
  kTooFewDevices,    // fewer devices of the profile than requested, in total
  kUnhealthy,        // enough devices, but not enough on healthy GPUs
  kInUse,            // enough devices; pods hold them (preemption could help)
};

struct MigFeasibility {
  MigUnfitReason reason = MigUnfitReason::kFits;
  std::string profile;
  int requested = 0;
  int free = 0;
  int total = 0;
  bool fits() const { return reason == MigUnfitReason::kFits; }
  // Preemption cannot fix it (the extender's FailedAndUnresolvableNodes).
  bool unresolvable() const { return reason != MigUnfitReason::kFits && reason != MigUnfitReason::kInUse; }
  // "Insufficient nvidia.com/mig-1g.10gb: requested 2, 1 free of 3" and friends.
  std::string Message() const;
};

MigFeasibility CheckMigFit(const MigNode& node, const MigRequest& request);

struct MigChoice {
  std::vector<int> devices;  // indexes into MigNode::slices(), ascending
  double score = 0;          // 0..10, best fit
};

// The best-fit devices for the request, or nullopt if it does not fit.
std::optional<MigChoice> ChooseMigDevices(const MigNode& node, const MigRequest& request);

}  // namespace phalanx::placement
