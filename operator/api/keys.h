// Label, annotation, finalizer and env names of the TrainingJob contract (docs/architecture.md §2.1,
// §2.2, §2.4; docs/trainingjob.md). Changing any of these breaks running clusters.
#pragma once

#include <string_view>

namespace phalanx::op {

inline constexpr std::string_view kGroup = "phalanx.io";
inline constexpr std::string_view kApiVersion = "phalanx.io/v1alpha1";
inline constexpr std::string_view kKind = "TrainingJob";
inline constexpr std::string_view kPlural = "trainingjobs";

// Pod labels written by the operator.
inline constexpr std::string_view kLabelJobName = "phalanx.io/job-name";
inline constexpr std::string_view kLabelAttempt = "phalanx.io/attempt";
inline constexpr std::string_view kLabelReplicaIndex = "phalanx.io/replica-index";
inline constexpr std::string_view kLabelGang = "phalanx.io/gang";
inline constexpr std::string_view kLabelQueue = "phalanx.io/queue";  // from spec.scheduling.queue

// Pod annotations.
inline constexpr std::string_view kAnnotationGangMinMembers = "phalanx.io/gang-min-members";
inline constexpr std::string_view kAnnotationGangTimeout = "phalanx.io/gang-timeout-seconds";
inline constexpr std::string_view kAnnotationTopology = "phalanx.io/topology";
inline constexpr std::string_view kAnnotationTopologyMode = "phalanx.io/topology-mode";
inline constexpr std::string_view kAnnotationPreemptNotice = "phalanx.io/preempt-notice";
// Hash of the pod-shaping part of the spec the pod was built from; a different hash on a
// live attempt means the spec changed and the gang is rebuilt.
inline constexpr std::string_view kAnnotationSpecHash = "phalanx.io/spec-hash";

// TrainingJob annotation written by the extender (docs/architecture.md §2.2).
inline constexpr std::string_view kAnnotationPreemptRequest = "phalanx.io/preempt-request";
// TrainingJob condition (and Warning event reason): that annotation is present but malformed.
inline constexpr std::string_view kConditionPreemptRequestRefused = "PreemptRequestRefused";

inline constexpr std::string_view kSchedulingGate = "phalanx.io/gang";
inline constexpr std::string_view kFinalizerCheckpoint = "phalanx.io/checkpoint";
inline constexpr std::string_view kDefaultSchedulerName = "phalanx-scheduler";
inline constexpr std::string_view kGpuResource = "nvidia.com/gpu";

// Where the downward-API volume surfaces the preempt notice inside every container.
inline constexpr std::string_view kPreemptVolumeName = "phalanx-preempt";
inline constexpr std::string_view kPreemptMountPath = "/etc/phalanx/preempt";
inline constexpr std::string_view kPreemptFile = "/etc/phalanx/preempt/notice";
// Projected service-account token (audience "phalanx") for the progress endpoint.
inline constexpr std::string_view kTokenVolumeName = "phalanx-token";
inline constexpr std::string_view kTokenMountPath = "/var/run/secrets/phalanx.io";
inline constexpr std::string_view kTokenAudience = "phalanx";

inline constexpr int kDefaultMasterPort = 29500;

}  // namespace phalanx::op
