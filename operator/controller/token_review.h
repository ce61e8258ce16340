// Identity of a worker pod from a TokenReview of its projected service-account token
// (audience "phalanx"). The progress endpoint trusts a report only for the pod the token
// was issued to (a bound token carries the pod's name and uid in user.extra). Pure.
#pragma once

#include <string>
#include <string_view>

#include "core/base/result.h"
#include "core/json/json.h"

namespace phalanx::op {

struct PodIdentity {
  std::string namespace_;
  std::string pod_name;
  std::string pod_uid;
  std::string service_account;
};

json::Json MakeTokenReview(std::string_view token, std::string_view audience);
// kUnauthenticated: not authenticated or wrong audience; kPermissionDenied: authenticated
// but not a pod-bound service-account token.
Result<PodIdentity> ParseTokenReview(const json::Json& review, std::string_view audience);
// "Bearer <token>" -> token; kUnauthenticated when missing.
Result<std::string> BearerToken(std::string_view authorization_header);

}  // namespace phalanx::op
