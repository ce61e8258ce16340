#include "core/topology/node_topology.h"

#include <algorithm>
#include <cassert>
#include <limits>

namespace phalanx::topology {

double NodeTopology::Bandwidth(int i, int j) const {
  assert(i >= 0 && i < links.size() && j >= 0 && j < links.size());
  if (i < 0 || i >= links.size() || j < 0 || j >= links.size()) return 0.0;
  const Link& link = links.at(i, j);
  switch (link.kind()) {
    case LinkKind::kSelf:
      return std::numeric_limits<double>::infinity();
    case LinkKind::kNvlink: {
      // A matrix larger than gpus only happens in an invalid hand-built model; fall back
      // to the default rate rather than reading out of bounds.
      auto rate = [this](int g) {
        double r = g < gpu_count() ? gpus[static_cast<size_t>(g)].nvlink_gbps_per_link : 0.0;
        return r > 0 ? r : kDefaultNvlinkGbpsPerLink;
      };
      // Both ends must drive the bonded links; the slower GPU sets the pace.
      return link.nvlinks() * std::min(rate(i), rate(j));
    }
    default:
      return PcieBandwidth(link.kind());
  }
}

size_t NodeTopology::MigDeviceCount() const {
  size_t n = 0;
  for (const Gpu& gpu : gpus) n += gpu.mig_devices.size();
  return n;
}

}  // namespace phalanx::topology
