// The TrainingJob rules the CRD's schema and CEL rules enforce, checked again in code:
// the fake API server (and a cluster whose CRD was edited) does not evaluate CEL, and a
// job the operator cannot run must end Failed with a clear reason, never crash-loop.
// Each error names the field ("spec.checkpoint.flushSeconds: 60 exceeds ...").
#pragma once

#include "core/base/status.h"
#include "operator/api/training_job.h"

namespace phalanx::op {

// Longest job name: pods are named "<job>-a<attempt>-<index>" and also used as pod
// hostnames, which are DNS labels of at most 63 characters (room for 6-digit attempts
// and 5-digit indices).
inline constexpr size_t kMaxJobNameLength = 49;
inline constexpr int32_t kMaxReplicas = 10000;
inline constexpr int32_t kMaxGpusPerReplica = 16;  // a replica is one pod on one node
// Kubernetes' default when the template does not set terminationGracePeriodSeconds.
inline constexpr int64_t kDefaultTerminationGraceSeconds = 30;

Status ValidateName(const std::string& name);
Status ValidateSpec(const TrainingJobSpec& spec);
// template.spec.terminationGracePeriodSeconds or the Kubernetes default.
int64_t TemplateGraceSeconds(const json::Json& pod_template);

}  // namespace phalanx::op
