// The objects a TrainingJob attempt consists of (docs/architecture.md §2.1, §2.4): a headless Service
// named after the job and `replicas` pods "<job>-a<attempt>-<index>". Names are
// deterministic so a retried create can only ever hit AlreadyExists, never duplicate.
// Pure; thread-safe.
#pragma once

#include <string>

#include "core/json/json.h"
#include "operator/api/training_job.h"

namespace phalanx::op {

// Operator-wide settings that shape pods (from flags).
struct PodOptions {
  std::string progress_url;  // empty: no progress endpoint (no token volume, no env)
  int master_port = 29500;
  int64_t token_expiration_seconds = 3600;
};

std::string PodName(const std::string& job, int32_t attempt, int32_t index);
std::string GangName(const std::string& job, int32_t attempt);
// "<job>-a<attempt>-0.<job>.<namespace>.svc": rank 0 through the headless Service.
std::string MasterAddr(const TrainingJob& job, int32_t attempt);
std::string JobSelector(const std::string& job);
// FNV-1a over the pod-shaping spec fields (replicas, gpusPerReplica, template,
// scheduling, checkpoint), hex. Stable across processes and builds.
std::string SpecHash(const TrainingJobSpec& spec);

struct AttemptContext {
  int32_t attempt = 1;
  std::string resume_from;     // PHALANX_RESUME_FROM ("" on a fresh start)
  std::string restart_reason;  // PHALANX_RESTART_REASON ("" on attempt 1)
};

json::Json BuildPod(const TrainingJob& job, const AttemptContext& ctx, int32_t index,
                    const PodOptions& options);
json::Json BuildService(const TrainingJob& job, const PodOptions& options);
json::Json OwnerReference(const TrainingJob& job);

}  // namespace phalanx::op
