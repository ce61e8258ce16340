// GPU fragmentation, as defined by FGD (Weng et al., "Beware of Fragmentation:
// Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent", USENIX ATC'23).
//
// For a node and one task shape, the node's fragmentation is the free GPU capacity the
// task cannot use:
//   - the task does not fit on the node at all  -> all of the node's free capacity;
//   - it fits                                    -> the free capacity of the GPUs that
//     cannot host (part of) it: for a fractional task of m milli-GPUs, GPUs with less
//     than m free; for a task of whole GPUs, every partly used GPU.
//   - a task without GPUs cannot use any GPU: all free capacity (as the FGD reference
//     simulator does; leave such shapes out of the mix to ignore them).
// Cluster fragmentation = sum over nodes, sum over shapes of popularity x node
// fragmentation, with popularities normalised to sum to 1. Reported in GPUs and as a
// ratio of the free GPUs (0 when nothing is free).
// Free capacity is in milli-GPUs per GPU (0..1000), so openb's `gpu_milli` pods replay
// exactly; whole-GPU and multi-GPU tasks use 1000 per GPU. CPU and memory are outside
// Phalanx's ledger, so FGD's "lacks CPU" cases are not modelled (documented in
// docs/algorithms.md).
//
// Pure and thread-compatible.
#pragma once

#include <span>
#include <vector>

#include "core/placement/cluster_state.h"

namespace phalanx::placement {

struct TaskShape {
  // Whole GPUs (>= 1), or 1 with milli < kMilliPerGpu for a share; 0 = no GPU.
  int gpus = 1;
  int milli = kMilliPerGpu;  // per GPU
  double popularity = 1;     // relative frequency in the workload
};

// Free milli-GPUs of one node, per GPU (0..kMilliPerGpu each).
using NodeFreeMilli = std::span<const int>;

// Milli-GPUs of `free` the task cannot use (see above).
int NodeFragmentationMilli(NodeFreeMilli free, const TaskShape& task);

// Popularity-weighted fragmentation of one node over `shapes`, in milli-GPUs.
double NodeFragmentationMilli(NodeFreeMilli free, std::span<const TaskShape> shapes);

struct FragmentationReport {
  double fragmented_gpus = 0;  // expected unusable free GPUs
  double free_gpus = 0;        // all free capacity, in GPUs
  double ratio = 0;            // fragmented / free; 0 when free == 0
};

// Over explicit per-node free vectors (what the simulator keeps for openb replays).
FragmentationReport ClusterFragmentation(std::span<const std::vector<int>> nodes,
                                         std::span<const TaskShape> shapes);

// Over a ClusterState (free = ClusterState::FreeMilli per GPU).
FragmentationReport ClusterFragmentation(const ClusterState& state, std::span<const TaskShape> shapes);

// FGD's scoring signal: how much the node's fragmentation grows if `task` lands on
// `gpus` (a one-bit mask for a share). Lower is better; negative is possible.
double FragmentationDelta(NodeFreeMilli free, GpuMask gpus, const TaskShape& task,
                          std::span<const TaskShape> shapes);

}  // namespace phalanx::placement
