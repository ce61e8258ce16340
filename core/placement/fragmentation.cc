#include "core/placement/fragmentation.h"

#include <bit>
#include <numeric>

namespace phalanx::placement {
namespace {

// Milli-GPUs a task needs on each GPU it uses.
int PerGpuMilli(const TaskShape& t) { return t.milli > 0 && t.milli <= kMilliPerGpu ? t.milli : kMilliPerGpu; }

double PopularityTotal(std::span<const TaskShape> shapes) {
  double total = 0;
  for (const TaskShape& t : shapes) total += t.popularity > 0 ? t.popularity : 0;
  return total;
}

}  // namespace

int NodeFragmentationMilli(NodeFreeMilli free, const TaskShape& task) {
  const int total = std::accumulate(free.begin(), free.end(), 0);
  if (task.gpus <= 0) return total;  // a GPU-less task can use none of it
  const int need = PerGpuMilli(task);
  int hosts = 0, stranded = 0;
  for (int f : free) {
    if (f >= need) ++hosts;
    else stranded += f;
  }
  // Does not fit at all: everything is unusable to it; fits: only the GPUs too full
  // to host (a share of) it.
  return hosts < task.gpus ? total : stranded;
}

double NodeFragmentationMilli(NodeFreeMilli free, std::span<const TaskShape> shapes) {
  const double total = PopularityTotal(shapes);
  if (total <= 0) return 0;
  double frag = 0;
  for (const TaskShape& t : shapes) {
    if (t.popularity > 0) frag += t.popularity / total * NodeFragmentationMilli(free, t);
  }
  return frag;
}

FragmentationReport ClusterFragmentation(std::span<const std::vector<int>> nodes, std::span<const TaskShape> shapes) {
  FragmentationReport r;
  double frag_milli = 0, free_milli = 0;
  for (const std::vector<int>& n : nodes) {
    frag_milli += NodeFragmentationMilli(n, shapes);
    free_milli += std::accumulate(n.begin(), n.end(), 0.0);
  }
  r.fragmented_gpus = frag_milli / kMilliPerGpu;
  r.free_gpus = free_milli / kMilliPerGpu;
  r.ratio = free_milli > 0 ? frag_milli / free_milli : 0;
  return r;
}

FragmentationReport ClusterFragmentation(const ClusterState& state, std::span<const TaskShape> shapes) {
  FragmentationReport r;
  double frag_milli = 0, free_milli = 0;
  std::vector<int> free;
  for (NodeIndex i : state.Nodes()) {
    const int n = state.node(i).spec.gpu_count;
    free.resize(static_cast<size_t>(n));
    for (int g = 0; g < n; ++g) free[static_cast<size_t>(g)] = state.FreeMilli(i, g);
    frag_milli += NodeFragmentationMilli(free, shapes);
    free_milli += std::accumulate(free.begin(), free.end(), 0.0);
  }
  r.fragmented_gpus = frag_milli / kMilliPerGpu;
  r.free_gpus = free_milli / kMilliPerGpu;
  r.ratio = free_milli > 0 ? frag_milli / free_milli : 0;
  return r;
}

double FragmentationDelta(NodeFreeMilli free, GpuMask gpus, const TaskShape& task, std::span<const TaskShape> shapes) {
  std::vector<int> after(free.begin(), free.end());
  const int need = PerGpuMilli(task);
  for (size_t g = 0; g < after.size(); ++g) {
    if (gpus & (GpuMask{1} << g)) after[g] = after[g] > need ? after[g] - need : 0;
  }
  return NodeFragmentationMilli(after, shapes) - NodeFragmentationMilli(free, shapes);
}

}  // namespace phalanx::placement
