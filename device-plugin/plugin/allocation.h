// What the plugin answers kubelet's GetPreferredAllocation and Allocate (docs/architecture.md §3 step 5).
// Pure functions over the resource's devices; thread-safe.
//
// Preferred allocation without a plan (the extender's plan per container is AdmissionMatcher's,
// admission_match.h), among the available devices minus `avoid` (devices planned for other
// pending pods) when enough remain, else among all available:
//  - whole GPUs: the NVLink-best set (core/placement ChooseDeviceSet) among the
//     available GPUs, honouring must-include;
//     MIG devices: packed onto as few GPUs as possible (keeps other GPUs whole);
//     time-sliced replicas: spread over distinct GPUs first, then the least-used GPUs.
// Allocate: NVIDIA_VISIBLE_DEVICES (envvar / volume-mounts), CDI device names
// "nvidia.com/gpu=<uuid>" (cdi-cri) or the CDI annotation (cdi-annotations), device
// nodes with passDeviceSpecs; unknown IDs -> InvalidArgument, unhealthy -> FailedPrecondition.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "core/base/clock.h"
#include "core/base/result.h"
#include "core/placement/device_set.h"
#include "device-plugin/plugin/config.h"
#include "device-plugin/plugin/device_model.h"
#include "device-plugin/plugin/health_table.h"
#include "proto/deviceplugin/v1beta1/api.pb.h"

namespace phalanx::device_plugin {

inline constexpr const char* kCdiAnnotationPrefix = "cdi.k8s.io/";
inline constexpr const char* kVolumeMountRoot = "/var/run/nvidia-container-devices";

struct PreferredRequest {
  std::vector<std::string> available;
  std::vector<std::string> must_include;
  int size = 0;
};

enum class PreferredSource { kAnnotation, kTopology };

struct PreferredChoice {
  std::vector<std::string> device_ids;
  PreferredSource source = PreferredSource::kTopology;
  std::string pod;  // the planned pod, when source == kAnnotation
};

// InvalidArgument for unknown IDs, size < 1, must-include larger than size;
// ResourceExhausted when fewer than `size` devices are available.
Result<PreferredChoice> ChoosePreferred(const ResourceSpec& resource,
                                        const placement::BandwidthMatrix& bandwidth,
                                        const PreferredRequest& request,
                                        const std::set<std::string>& avoid = {});

Result<v1beta1::ContainerAllocateResponse> BuildAllocation(const ResourceSpec& resource,
                                                           const std::vector<std::string>& ids,
                                                           const Config& config,
                                                           const HealthTable& health);

}  // namespace phalanx::device_plugin
