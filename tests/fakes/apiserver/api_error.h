// ApiError: a Kubernetes API failure as the real server reports it, a `Status` object
// (kind Status, apiVersion v1, status Failure, message, reason, code, details), plus the
// factories for the reasons the fake produces (apimachinery's errors.go wording).
// Pure value types. Thread-compatible.
#pragma once

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/json/json.h"

namespace phalanx::fakes::apiserver {

// details.causes[]: `type` is serialised as "reason", as metav1.StatusCause does.
struct StatusCause {
  std::string type, message, field;
};

struct ApiError {
  int code = 500;
  std::string reason;  // "NotFound", "AlreadyExists", "Conflict", "Expired", "Invalid", ...
  std::string message;
  std::string group, kind, name;  // details (kind = the resource plural, as the real server does)
  int retry_after_seconds = 0;    // > 0: details.retryAfterSeconds and a Retry-After header
  std::vector<StatusCause> causes;

  json::Json ToStatus() const;
  std::string ToStatusJson() const { return json::Dump(ToStatus()); }
};

// `resource` is the plural ("pods"), `group` may be empty.
ApiError NotFound(std::string_view group, std::string_view resource, std::string_view name);
ApiError AlreadyExists(std::string_view group, std::string_view resource, std::string_view name);
// 409 "the object has been modified; please apply your changes to the latest version".
ApiError Conflict(std::string_view group, std::string_view resource, std::string_view name,
                  std::string_view why);
ApiError Invalid(std::string_view group, std::string_view kind, std::string_view name,
                 std::string_view why);
ApiError BadRequest(std::string_view why);
ApiError Gone(std::string_view why);  // 410 Expired
ApiError MethodNotAllowed(std::string_view why);
ApiError Unauthorized();
ApiError Unsupported(std::string_view why);  // 415 UnsupportedMediaType
ApiError InternalError(std::string_view why);
// 429 TooManyRequests (an eviction refused by a disruption budget, ...).
ApiError TooManyRequests(std::string_view message, int retry_after_seconds,
                         std::vector<StatusCause> causes = {});
// A Status answer with a chosen code (fault injection): reason derived from the code.
ApiError FromCode(int code, std::string_view message, int retry_after_seconds);

// A success Status (delete of an object that is gone at once, binding, eviction).
json::Json SuccessStatus(std::string_view group, std::string_view resource, std::string_view name,
                         std::string_view uid, int code);

template <typename T>
using ApiResult = std::variant<T, ApiError>;

template <typename T>
bool IsOk(const ApiResult<T>& r) {
  return r.index() == 0;
}

}  // namespace phalanx::fakes::apiserver
