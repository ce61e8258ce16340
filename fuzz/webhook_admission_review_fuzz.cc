// The API server's AdmissionReview (POST /mutate-pods): extender/webhook/webhook.h. Contract: 200 with an
// AdmissionReview that is valid JSON, or 400; never anything else.
#include "core/json/json.h"
#include "extender/webhook/webhook.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const phalanx::extender::WebhookReply reply =
      phalanx::extender::ReviewPodAdmission(phalanx::fuzz::AsText(data, size), {});
  FUZZ_CHECK(reply.status == 200 || reply.status == 400, reply.body);
  if (reply.status == 200) FUZZ_CHECK(phalanx::json::Parse(reply.body).ok(), reply.body);
  FUZZ_CHECK(!reply.patched || reply.status == 200, reply.body);
  return 0;
}
