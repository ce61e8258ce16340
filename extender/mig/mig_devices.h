// MIG devices of a node as the ledger charges them: the device list from the node's
// `phalanx.io/gpu-topology` (health from `phalanx.io/gpu-state`, where device IDs are
// MIG UUIDs), and which devices a bound pod holds. Pure; thread-safe.
#pragma once

#include <vector>

#include "core/placement/mig.h"
#include "extender/objects/k8s_objects.h"

namespace phalanx::extender {

// Empty when the topology is unknown or no GPU is in MIG mode.
std::vector<placement::MigSlice> MigSlicesOf(const NodeInfo& node);

// Devices (indexes into `mig.slices()`) that a pod bound to the node holds: the ones the
// device plugin reports allocated to it (gpu-state), else the MIG UUIDs of its
// `phalanx.io/devices` annotation, else a best-fit assumption (ChooseMigDevices) among
// the free ones. Empty if the pod has no single MIG request or nothing fits.
std::vector<int> MigDevicesFor(const placement::MigNode& mig, const NodeInfo& node, const PodInfo& pod);

}  // namespace phalanx::extender
