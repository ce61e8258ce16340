// ObservedPod: what the reconciler needs to know about one pod of a TrainingJob, decoded
// once from the API object (STYLE §2.3: no JSON in the logic). Value type.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/base/clock.h"
#include "core/base/result.h"
#include "core/json/json.h"

namespace phalanx::op {

struct ObservedContainer {
  std::string name;
  bool running = false;
  bool terminated = false;
  int32_t exit_code = 0;
  std::string reason;   // terminated.reason (OOMKilled, Error, Completed) or waiting.reason
  std::string message;  // terminated.message: the termination log (checkpoint record)
  std::optional<SystemTime> finished_at;
};

struct ObservedPod {
  std::string namespace_;
  std::string name;
  std::string job_name;        // label phalanx.io/job-name
  std::string controller_uid;  // uid of the controller ownerReference
  std::string uid;
  std::string resource_version;
  int32_t attempt = -1;  // label phalanx.io/attempt; -1 when missing or malformed
  int32_t index = -1;    // label phalanx.io/replica-index
  std::string phase;     // Pending | Running | Succeeded | Failed | Unknown
  std::string reason;    // status.reason (Evicted, NodeLost, ...)
  std::string message;
  std::string node_name;
  std::optional<SystemTime> deletion_timestamp;
  std::vector<std::string> finalizers;
  bool gated = false;  // still has the phalanx.io/gang scheduling gate
  bool ready = false;
  std::optional<std::string> disruption_reason;  // DisruptionTarget=True condition's reason
  std::string disruption_message;
  std::vector<ObservedContainer> containers;  // containerStatuses, then init ones are ignored
  std::map<std::string, std::string> annotations;
  // Usage accounting (operator/cost/usage.h).
  std::optional<SystemTime> start_time;  // status.startTime: kubelet admitted it (GPUs allocated)
  std::optional<int32_t> priority;       // spec.priority (from the priority class at admission)
  double gpus = 0;  // GPU-equivalents the containers request (cost/price_table.h GpuEquivalents)
  // The node's phalanx.io/gpu.product label; not part of the pod: filled in by the controller
  // (empty when the pod is unbound or the node is unknown).
  std::string gpu_product;

  bool HasFinalizer(std::string_view f) const;
  bool deleting() const { return deletion_timestamp.has_value(); }
  bool terminal() const { return phase == "Succeeded" || phase == "Failed"; }
};

Result<ObservedPod> DecodeObservedPod(const json::Json& pod);

}  // namespace phalanx::op
