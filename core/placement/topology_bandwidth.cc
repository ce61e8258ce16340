#include "core/placement/topology_bandwidth.h"

namespace phalanx::placement {

BandwidthMatrix BandwidthFromTopology(const topology::NodeTopology& node) {
  const int n = static_cast<int>(node.gpus.size());
  BandwidthMatrix bw(n);
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) bw.Set(i, j, node.Bandwidth(i, j));
  return bw;
}

GpuMask WholeGpuMask(const topology::NodeTopology& node) {
  GpuMask mask = 0;
  for (size_t i = 0; i < node.gpus.size() && i < kMaxGpusPerNode; ++i) {
    const topology::Gpu& gpu = node.gpus[i];
    if (!gpu.mig_enabled && gpu.health == topology::Health::kHealthy) mask |= GpuMask{1} << i;
  }
  return mask;
}

GpuMask MigGpuMask(const topology::NodeTopology& node) {
  GpuMask mask = 0;
  for (size_t i = 0; i < node.gpus.size() && i < kMaxGpusPerNode; ++i)
    if (node.gpus[i].mig_enabled) mask |= GpuMask{1} << i;
  return mask;
}

std::vector<MigSlice> MigSlicesFromTopology(const topology::NodeTopology& node) {
  std::vector<MigSlice> out;
  for (const topology::Gpu& gpu : node.gpus) {
    if (!gpu.mig_enabled) continue;
    for (const topology::MigDevice& mig : gpu.mig_devices) {
      MigSlice s;
      s.gpu = gpu.index;
      s.profile = mig.profile;
      s.compute_slices = MigComputeSlices(mig.profile).value_or(1);
      s.device_id = mig.uuid.str();
      s.healthy = gpu.health == topology::Health::kHealthy;
      out.push_back(std::move(s));
    }
  }
  return out;
}

}  // namespace phalanx::placement
