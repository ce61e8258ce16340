// GpuQueue objects (phalanx.io/v1alpha1, cluster-scoped; docs/user-guide.md §7) as the
// engine's team queues. Pure: decoding and assembling; ClusterSync (kube_sync.h) watches
// the objects and namespaces and hands the result to Extender::SetQueues.
//
// A GpuQueue that does not decode (a wrong type, a bad quota, a selector the API would
// refuse) carries `error` naming the field ("spec.quotas[0].nominal: must be >= 0") and is
// not applied: the last valid version of that queue (or none) stays in force.
// Which queue a gang runs in: its pods' label phalanx.io/queue, else the queue whose
// spec.namespaceSelector matches the pod's namespace (the first by name), else the queue
// marked spec.default.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/base/result.h"
#include "core/kube/client.h"
#include "core/scheduling/queues.h"
#include "extender/objects/k8s_objects.h"  // kQueueLabel
#include "extender/objects/label_selector.h"

namespace phalanx::extender {

struct NamespaceInfo {
  std::string name;
  std::map<std::string, std::string, std::less<>> labels;
};
Result<NamespaceInfo> DecodeNamespace(const kube::Json& object);

struct GpuQueueInfo {
  std::string name, uid;
  int64_t generation = 0;
  scheduling::QueueSpec spec;
  bool is_default = false;
  // spec.namespaceSelector; nullopt = selects no namespace (absent).
  std::optional<std::vector<LabelRequirement>> namespace_selector;
  std::string error;  // "" = valid; else why it is not applied (names the field)

  bool Selects(const NamespaceInfo& ns) const;
};
// Errs only without metadata.name; anything wrong in spec goes to `error`.
Result<GpuQueueInfo> DecodeGpuQueue(const kube::Json& object);

struct QueueAssignment {
  scheduling::QueueConfig config;
  std::map<std::string, std::string> namespace_queue;  // namespace -> queue its selector picks
  bool operator==(const QueueAssignment& o) const;
};

// One queue's standing (the extender's, for GpuQueue status and metrics).
struct QueueStatusInfo {
  std::string name;
  std::vector<scheduling::QueuePoolUsage> pools;  // milli-GPUs
  int pending_gangs = 0;
  scheduling::Milli pending = 0;  // milli-GPUs the pending gangs ask for
  double fair_share = 0;           // weighted dominant-resource share
  bool operator==(const QueueStatusInfo& o) const;
};
// "H100: 8/8 (+0 borrowed, -0 lent)" per pool, joined by "; " (status.usageSummary).
std::string UsageSummary(const QueueStatusInfo& q);
kube::Json QueueStatusJson(const QueueStatusInfo& q);  // the GpuQueue status fields

// The engine's queues from the valid GpuQueues (sorted by name) and the namespaces'
// labels. `base` supplies the knobs GpuQueues do not carry (cross-queue preemption
// priority, reclaim delay). Errors name the queue and field: no queue or more than one
// marked default, a parent that does not exist, children's quotas beyond their parent's.
// No GpuQueue: an empty (disabled) config.
Result<QueueAssignment> AssignQueues(const std::vector<GpuQueueInfo>& queues,
                                     const std::vector<NamespaceInfo>& namespaces,
                                     const scheduling::QueueConfig& base = {});

}  // namespace phalanx::extender
