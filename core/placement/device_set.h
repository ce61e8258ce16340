// Intra-node GPU set choice (docs/architecture.md §4): pick k of a node's free, healthy GPUs so that
// the set's all-reduce bandwidth is as high as possible, and among equally good sets
// keep the node's remaining free GPUs as well connected as possible for later requests.
//
// All-reduce bandwidth of a set = the bottleneck link of its best ring (ring all-reduce
// runs at the speed of its slowest hop). On NVSwitch machines every pair is a full-speed
// link, so every set is equally good and the tie-break alone decides.
//
// Pure: no I/O, no clock, no logging. Thread-compatible. Used by the device plugin
// (GetPreferredAllocation), the extender (node score) and the simulator.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/base/result.h"

namespace phalanx::placement {

inline constexpr int kMaxGpusPerNode = 64;

// Symmetric pairwise bandwidth between a node's GPUs in GB/s per direction.
// The diagonal is meaningless and ignored.
class BandwidthMatrix {
 public:
  explicit BandwidthMatrix(int gpus);
  int size() const { return n_; }
  double at(int i, int j) const { return bw_[static_cast<size_t>(i * n_ + j)]; }
  void Set(int i, int j, double gbps);  // sets both (i,j) and (j,i)

 private:
  int n_;
  std::vector<double> bw_;
};

// Bit i set = GPU i.
using GpuMask = uint64_t;

struct DeviceSetRequest {
  int count = 1;          // GPUs wanted
  GpuMask available = 0;  // free and healthy GPUs
  GpuMask must_include = 0;  // kubelet's must_include_deviceIDs; subset of available
};

struct DeviceSetChoice {
  std::vector<int> gpus;      // ascending GPU indices, size == count
  // Bottleneck of the best ring over `gpus` in GB/s; +infinity for a single GPU.
  double ring_bandwidth_gbps = 0;
  // True if the choice came from the exhaustive search (provably best under the
  // ranking); false for the bounded search used on large nodes.
  bool exhaustive = false;
};

// Chooses the set. Errors: InvalidArgument for malformed requests (count < 1, masks
// outside the matrix, must_include not available or larger than count);
// ResourceExhausted when fewer than `count` GPUs are available.
Result<DeviceSetChoice> ChooseDeviceSet(const BandwidthMatrix& bandwidth, const DeviceSetRequest& request);

// Bottleneck bandwidth of the best ring through all of `gpus` (max over Hamiltonian
// cycles of the minimum edge). +infinity for one GPU; the single link for two.
// Exact for up to 16 GPUs; above that a greedy ring gives a lower bound.
double RingBottleneck(const BandwidthMatrix& bandwidth, std::span<const int> gpus);

}  // namespace phalanx::placement
