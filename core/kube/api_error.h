// Typed Kubernetes API errors, decoded from the `Status` object the API server returns with
// every failure (metav1.Status: {kind: Status, status: Failure, message, reason, code, details}).
//
// Errors travel as phalanx::Status so they compose with the rest of core; the code follows the
// retry meaning of core/base/status.h and the message is "<Reason> (HTTP <code>): <message>",
// from which ReasonOf() recovers the exact reason:
//   NotFound 404 -> kNotFound          AlreadyExists 409 -> kAlreadyExists
//   Conflict 409 -> kAborted (re-read, retry)   Gone/Expired 410 -> kOutOfRange (relist)
//   Forbidden 403 -> kPermissionDenied  Unauthorized 401 -> kUnauthenticated
//   Invalid 422 / BadRequest 400 -> kInvalidArgument
//   TooManyRequests 429, ServerTimeout/Timeout 504, InternalError 500, ServiceUnavailable 503
//     -> kUnavailable (transient)
//   client-side timeout -> kDeadlineExceeded; network failure -> kUnavailable ("Network: ...").
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/base/status.h"

namespace phalanx::kube {

enum class Reason {
  kUnknown,
  kBadRequest,
  kUnauthorized,
  kForbidden,
  kNotFound,
  kAlreadyExists,
  kConflict,
  kGone,
  kExpired,
  kInvalid,
  kMethodNotAllowed,
  kNotAcceptable,
  kUnsupportedMediaType,
  kRequestEntityTooLarge,
  kTooManyRequests,
  kInternalError,
  kServiceUnavailable,
  kServerTimeout,
  kTimeout,
  kNetwork,  // client side: connection refused/reset, TLS failure, stream cut
};

std::string_view ReasonName(Reason reason);  // "NotFound"; the metav1.StatusReason spelling

struct ApiError {
  int http_code = 0;
  Reason reason = Reason::kUnknown;
  std::string message;
  std::optional<int> retry_after_seconds;  // details.retryAfterSeconds
  std::string kind, name;                  // details.kind / details.name when given
};

// Decodes a failed response. `body` may be a Status object or anything else (an HTML error page,
// empty): the reason then comes from the HTTP code and the message from the body's first line.
ApiError DecodeApiError(int http_code, std::string_view body);
// Decodes a metav1.Status JSON object given as text (watch ERROR events carry one).
ApiError DecodeStatusObject(std::string_view status_json, int fallback_code);

Status ToStatus(const ApiError& error);

// The reason carried by a Status made by ToStatus (possibly with context prefixed);
// kUnknown for other statuses.
Reason ReasonOf(const Status& status);

// NotFound and AlreadyExists have their own StatusCode: use phalanx::IsNotFound/IsAlreadyExists
// (core/base/status.h). The predicates below need the reason.
inline bool IsConflict(const Status& s) { return ReasonOf(s) == Reason::kConflict; }
inline bool IsGone(const Status& s) {
  return ReasonOf(s) == Reason::kGone || ReasonOf(s) == Reason::kExpired;
}
inline bool IsForbidden(const Status& s) { return ReasonOf(s) == Reason::kForbidden; }
inline bool IsUnauthorized(const Status& s) { return ReasonOf(s) == Reason::kUnauthorized; }
inline bool IsInvalid(const Status& s) { return ReasonOf(s) == Reason::kInvalid; }
inline bool IsBadRequest(const Status& s) { return ReasonOf(s) == Reason::kBadRequest; }
inline bool IsTooManyRequests(const Status& s) { return ReasonOf(s) == Reason::kTooManyRequests; }
inline bool IsServerTimeout(const Status& s) {
  return ReasonOf(s) == Reason::kServerTimeout || ReasonOf(s) == Reason::kTimeout;
}

}  // namespace phalanx::kube
