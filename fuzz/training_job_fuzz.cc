// A TrainingJob custom resource as the operator's informer delivers it
// (operator/api/training_job_codec.h). Contract beyond not crashing: the status it decodes
// encodes, decodes again, and encodes to the same document (the operator writes it back).
#include "core/json/json.h"
#include "fuzz/fuzz_util.h"
#include "operator/api/training_job_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace op = phalanx::op;
  auto object = phalanx::json::Parse(phalanx::fuzz::AsText(data, size));
  if (!object.ok()) return 0;
  auto job = op::DecodeTrainingJob(*object);
  if (!job.ok()) return 0;
  const phalanx::json::Json status = op::EncodeStatus(job->status);
  auto again = op::DecodeStatus(status);
  FUZZ_CHECK(again.ok(), again.status().message());
  FUZZ_CHECK(op::EncodeStatus(*again) == status, phalanx::json::Dump(status));
  return 0;
}
