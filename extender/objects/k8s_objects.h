// Kubernetes objects as the extender needs them: the few fields of Node, Pod and
// TrainingJob that scheduling reads (docs/architecture.md §2.1, §2.2, §2.4), parsed from API JSON.
//
// One parser per kind serves every source: the cluster snapshot file, informer events
// and the Pod embedded in a scheduler request, so all three agree on what a field means.
// Parsing is lenient about fields it does not need (absent or null = default) and strict
// about the ones it does (a malformed GPU quantity is an error with a JSON path).
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/clock.h"
#include "core/base/ids.h"
#include "core/base/result.h"
#include "core/json/json.h"
#include "core/topology/node_topology.h"

namespace phalanx::extender {

inline constexpr std::string_view kGpuResource = "nvidia.com/gpu";
inline constexpr std::string_view kGangLabel = "phalanx.io/gang";
inline constexpr std::string_view kGangAliasLabel = "scheduling.x-k8s.io/pod-group";
inline constexpr std::string_view kGangGate = "phalanx.io/gang";
inline constexpr std::string_view kMinMembersAnnotation = "phalanx.io/gang-min-members";
inline constexpr std::string_view kGangTimeoutAnnotation = "phalanx.io/gang-timeout-seconds";
inline constexpr std::string_view kTopologyAnnotation = "phalanx.io/topology";
inline constexpr std::string_view kTopologyModeAnnotation = "phalanx.io/topology-mode";
inline constexpr std::string_view kDevicesAnnotation = "phalanx.io/devices";
// Set by the active extender on an ungated gang member it refused, once the gang can be placed:
// the pod update moves it out of kube-scheduler's unschedulable queue (extender/admission/gang_requeue.cc).
inline constexpr std::string_view kRequeueAnnotation = "phalanx.io/requeued-at";
inline constexpr std::string_view kGpuStateAnnotation = "phalanx.io/gpu-state";
inline constexpr std::string_view kPreemptRequestAnnotation = "phalanx.io/preempt-request";
// Written by the device plugin on a pod whose GPUs stayed idle (docs/device-plugin.md "Utilisation").
inline constexpr std::string_view kIdleSinceAnnotation = "phalanx.io/idle-since";
inline constexpr std::string_view kProductLabel = "phalanx.io/gpu.product";
inline constexpr std::string_view kHostnameLabel = "kubernetes.io/hostname";
// The team queue a pod's work runs in (docs/user-guide.md §7).
inline constexpr std::string_view kQueueLabel = "phalanx.io/queue";

// Implicit gangs (docs/user-guide.md §7 "Pods outside gangs and ungated gangs"): a pod
// that is no gang member (no phalanx.io/gang, no scheduling.x-k8s.io/pod-group label)
// but names a team queue (a non-empty phalanx.io/queue label) and requests whole
// nvidia.com/gpu devices, and no MIG device, is a gang of one inside the extender, as
// Kueue treats plain pods: the gang gate holds it, the engine admits it within its
// queue's quota, reclaim and eviction take it whole. CPU-only and MIG pods never are.
// Only the extender sees this gang: no label is written, the operator and the device
// plugin see the pod as it is.
//
// Its name is "pod:<pod name>" (its GangKey "<namespace>/pod:<pod name>"). A label value
// allows only [A-Za-z0-9._-] and a pod name only [a-z0-9.-], so no real gang (a label
// value) can be named so, and two pods of a namespace never share one.
inline constexpr std::string_view kImplicitGangPrefix = "pod:";
std::string ImplicitGangName(std::string_view pod_name);
// The rule above, on what a pod carries: its gang name ("" = none), its phalanx.io/queue
// label ("" = none), its whole-GPU request and whether it requests MIG devices. The
// webhook (webhook.cc) and ParsePod both decide by it.
bool FormsImplicitGang(std::string_view gang, std::string_view queue_label, int gpus, bool requests_mig);

// One device of `phalanx.io/gpu-state`.
struct DeviceState {
  bool healthy = true;
  std::string pod_uid;  // "" = not allocated (per the device plugin's pod-resources view)
};

struct NodeInfo {
  NodeName name;
  std::map<std::string, std::string, std::less<>> labels;
  int allocatable_gpus = 0;   // status.allocatable[nvidia.com/gpu]
  bool unschedulable = false;  // spec.unschedulable
  bool ready = true;           // Ready condition (absent = assume ready)
  // Decoded `phalanx.io/gpu-topology`; nullopt when absent or invalid (see topology_error).
  std::optional<topology::NodeTopology> topology;
  std::string topology_error;
  std::map<std::string, DeviceState, std::less<>> devices;  // `phalanx.io/gpu-state`
  std::string gpu_state_error;

  std::string_view Label(std::string_view key) const;
};

// `phalanx.io/devices`: container -> device IDs.
using DeviceAssignment = std::map<std::string, std::vector<std::string>, std::less<>>;

enum class PodPhase { kPending, kRunning, kSucceeded, kFailed, kUnknown };

struct PodInfo {
  PodUid uid;
  std::string ns;
  std::string name;
  std::string node_name;  // spec.nodeName; "" = unbound
  // status.nominatedNodeName: kube-scheduler preempted for this pod there and waits for the
  // victims to go; its GPUs on that node are spoken for (see AdmissionPass::TryPlan).
  std::string nominated_node;
  PodPhase phase = PodPhase::kPending;
  bool deleting = false;  // metadata.deletionTimestamp set
  int gpus = 0;           // effective nvidia.com/gpu request (max(sum of containers, any init container))
  std::string gpu_container;  // first container requesting GPUs
  // Containers requesting GPUs, in spec order, with their counts: phalanx.io/devices is written
  // per container (kubelet allocates container by container).
  std::vector<std::pair<std::string, int>> gpu_containers;
  // nvidia.com/mig-<profile> requests: profile -> devices (extender/mig/mig_requests.h).
  std::map<std::string, int, std::less<>> mig;
  std::string mig_container;  // first container requesting MIG devices
  int priority = 0;
  std::string priority_class;
  std::string pool_selector;  // nodeSelector[phalanx.io/gpu.product], "" = any
  // Gang keys (docs/architecture.md §2.1).
  // Label phalanx.io/gang or its alias, or the implicit gang's "pod:<name>" (see
  // FormsImplicitGang); "" = not a gang member.
  std::string gang;
  bool implicit_gang = false;  // `gang` is the implicit gang of one (min_members 1)
  std::optional<int> min_members;
  std::optional<int> gang_timeout_seconds;
  std::string topology_level;
  bool topology_required = false;  // phalanx.io/topology-mode == required (default preferred)
  bool gated = false;              // schedulingGates contains phalanx.io/gang
  std::optional<DeviceAssignment> devices;
  std::string devices_error;  // `phalanx.io/devices` present but refused (malformed or oversize)
  std::string training_job;  // owner TrainingJob name, "" if none
  std::optional<SystemTime> start_time;
  std::optional<SystemTime> creation_time;
  // For PodDisruptionBudgets: labels, and the Ready condition (false without a status).
  std::map<std::string, std::string, std::less<>> labels;
  bool ready = false;
  // phalanx.io/idle-since (RFC 3339): its GPUs idle since then; nullopt = busy, unknown or
  // an unparsable value. Idle victims first (TierPolicy::idle_victims_first) reads it.
  std::optional<SystemTime> idle_since;

  std::string Key() const { return ns + "/" + name; }
  GangKey Gang() const { return GangKey(ns + "/" + gang); }
  bool IsGangMember() const { return !gang.empty(); }
  bool Terminal() const { return phase == PodPhase::kSucceeded || phase == PodPhase::kFailed; }
};

struct TrainingJobInfo {
  std::string ns;
  std::string name;
  double gpu_seconds_at_risk = 0;
  double notice_seconds_needed = 0;
  std::string preempt_request;  // current annotation value, "" if none
  double active_deadline_seconds = 0;  // spec.runPolicy.activeDeadlineSeconds; 0 = none
  // metadata.creationTimestamp: when the job was submitted. A gang re-created after a
  // preemption keeps the job's place in the engine's order from it (not from its new pods).
  std::optional<SystemTime> created;
  std::string Key() const { return ns + "/" + name; }
};

// Kubernetes quantity as an integer count ("8", "8000m" -> 8). InvalidArgument for
// anything else (fractions of whole devices are not a valid extended-resource request).
Result<int64_t> ParseCountQuantity(std::string_view quantity);
// RFC 3339 "2026-11-22T01:45:56Z" (fractional seconds and offsets accepted).
Result<SystemTime> ParseRfc3339(std::string_view text);
std::string FormatRfc3339(SystemTime time);

Result<NodeInfo> ParseNode(const json::Json& node);
Result<PodInfo> ParsePod(const json::Json& pod);
// A Pod spec's device requests as ParsePod reads them: whole nvidia.com/gpu (containers
// summed, init containers' max) and MIG devices. InvalidArgument with a JSON path
// ("Pod.spec.containers[0].resources.limits[nvidia.com/gpu]: ...") for a malformed one.
struct PodDeviceRequests {
  int gpus = 0;
  std::string gpu_container;  // first container requesting GPUs
  std::vector<std::pair<std::string, int>> gpu_containers;  // every one, spec order, with its count
  std::map<std::string, int, std::less<>> mig;
  std::string mig_container;
};
Result<PodDeviceRequests> ParsePodDeviceRequests(const json::Json& spec);
Result<TrainingJobInfo> ParseTrainingJob(const json::Json& job);
// Parses `phalanx.io/devices`.
Result<DeviceAssignment> ParseDeviceAssignment(std::string_view text);
std::string EncodeDeviceAssignment(const DeviceAssignment& devices);
// The pod's whole-GPU device IDs split over its GPU containers in spec order, each taking as many
// as it requests ({"c1":[A],"c2":[B]}): the device plugin matches kubelet's per-container calls
// to these. IDs beyond the containers' sum (an init container asking for more) go to the last
// container; a pod without named GPU containers gets them under its first GPU container, or "main".
DeviceAssignment AssignGpusToContainers(const PodInfo& pod, const std::vector<std::string>& ids);

}  // namespace phalanx::extender
