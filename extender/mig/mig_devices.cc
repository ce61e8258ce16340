#include "extender/mig/mig_devices.h"

#include <algorithm>

#include "core/placement/topology_bandwidth.h"
#include "extender/mig/mig_requests.h"

namespace phalanx::extender {
namespace {

int IndexOf(const placement::MigNode& mig, std::string_view id) {
  for (size_t i = 0; i < mig.slices().size(); ++i)
    if (mig.slices()[i].device_id == id) return static_cast<int>(i);
  return -1;
}

}  // namespace

std::vector<placement::MigSlice> MigSlicesOf(const NodeInfo& node) {
  if (!node.topology) return {};
  std::vector<placement::MigSlice> slices = placement::MigSlicesFromTopology(*node.topology);
  for (placement::MigSlice& s : slices) {
    auto it = node.devices.find(s.device_id);
    if (it != node.devices.end() && !it->second.healthy) s.healthy = false;
  }
  return slices;
}

std::vector<int> MigDevicesFor(const placement::MigNode& mig, const NodeInfo& node, const PodInfo& pod) {
  auto request = SingleMigRequest(pod.mig);
  if (!request.ok() || !*request) return {};
  std::vector<int> real;
  for (const auto& [id, dev] : node.devices) {
    if (dev.pod_uid != pod.uid.str()) continue;
    if (int i = IndexOf(mig, id); i >= 0) real.push_back(i);
  }
  if (real.empty() && pod.devices) {
    for (const auto& [container, ids] : *pod.devices)
      for (const std::string& id : ids)
        if (int i = IndexOf(mig, id); i >= 0) real.push_back(i);
  }
  if (!real.empty()) {
    std::sort(real.begin(), real.end());
    real.erase(std::unique(real.begin(), real.end()), real.end());
    return real;
  }
  auto choice = placement::ChooseMigDevices(mig, **request);
  return choice ? choice->devices : std::vector<int>{};
}

}  // namespace phalanx::extender
