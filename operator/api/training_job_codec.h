// TrainingJob <-> JSON (the API server's representation, docs/architecture.md §2.4).
//
// DecodeTrainingJob never fails on a bad spec: the job still needs a status saying what
// is wrong (phase Failed, condition InvalidSpec), so the spec's problem is returned in
// TrainingJob::spec_error. It fails only when the object cannot be identified (no
// metadata.name) or the status the operator wrote cannot be read back: overwriting an
// unreadable status could lose a checkpoint record, so the caller retries instead.
// Thread-safe (pure functions).
#pragma once

#include "core/base/result.h"
#include "core/json/json.h"
#include "operator/api/training_job.h"

namespace phalanx::op {

Result<TrainingJob> DecodeTrainingJob(const json::Json& object);
Result<ObjectMeta> DecodeObjectMeta(const json::Json& metadata);
// Spec decoding + validation (validation.h); kInvalidArgument names the field.
Result<TrainingJobSpec> DecodeSpec(const json::Json& spec, const ObjectMeta& meta);
Result<TrainingJobStatus> DecodeStatus(const json::Json& status);
json::Json EncodeStatus(const TrainingJobStatus& status);

}  // namespace phalanx::op
