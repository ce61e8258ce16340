#include "tests/fakes/apiserver/api_error.h"

#include <fmt/format.h>

namespace phalanx::fakes::apiserver {
namespace {

std::string Qualified(std::string_view group, std::string_view resource) {
  return group.empty() ? std::string(resource) : fmt::format("{}.{}", resource, group);
}

ApiError Make(int code, std::string reason, std::string message, std::string_view group = {},
              std::string_view kind = {}, std::string_view name = {}) {
  ApiError e;
  e.code = code;
  e.reason = std::move(reason);
  e.message = std::move(message);
  e.group = group;
  e.kind = kind;
  e.name = name;
  return e;
}

}  // namespace

json::Json ApiError::ToStatus() const {
  json::Json status = {{"kind", "Status"},    {"apiVersion", "v1"},  {"metadata", json::Json::object()},
                       {"status", "Failure"}, {"message", message}, {"code", code}};
  // Some real failures carry no reason (an eviction of a pod under two budgets): omitted, not "".
  if (!reason.empty()) status["reason"] = reason;
  json::Json details = json::Json::object();
  if (!name.empty()) details["name"] = name;
  if (!group.empty()) details["group"] = group;
  if (!kind.empty()) details["kind"] = kind;
  if (retry_after_seconds > 0) details["retryAfterSeconds"] = retry_after_seconds;
  for (const auto& cause : causes) {
    json::Json c = json::Json::object();
    if (!cause.type.empty()) c["reason"] = cause.type;
    if (!cause.message.empty()) c["message"] = cause.message;
    if (!cause.field.empty()) c["field"] = cause.field;
    details["causes"].push_back(std::move(c));
  }
  if (!details.empty()) status["details"] = std::move(details);
  return status;
}

ApiError NotFound(std::string_view group, std::string_view resource, std::string_view name) {
  return Make(404, "NotFound", fmt::format("{} \"{}\" not found", Qualified(group, resource), name),
              group, resource, name);
}

ApiError AlreadyExists(std::string_view group, std::string_view resource, std::string_view name) {
  return Make(409, "AlreadyExists",
              fmt::format("{} \"{}\" already exists", Qualified(group, resource), name), group,
              resource, name);
}

ApiError Conflict(std::string_view group, std::string_view resource, std::string_view name,
                  std::string_view why) {
  return Make(409, "Conflict",
              fmt::format("Operation cannot be fulfilled on {} \"{}\": {}", Qualified(group, resource),
                          name, why),
              group, resource, name);
}

ApiError Invalid(std::string_view group, std::string_view kind, std::string_view name,
                 std::string_view why) {
  return Make(422, "Invalid", fmt::format("{} \"{}\" is invalid: {}", kind, name, why), group, kind,
              name);
}

ApiError BadRequest(std::string_view why) { return Make(400, "BadRequest", std::string(why)); }
ApiError Gone(std::string_view why) { return Make(410, "Expired", std::string(why)); }
ApiError MethodNotAllowed(std::string_view why) {
  return Make(405, "MethodNotAllowed", std::string(why));
}
ApiError Unauthorized() { return Make(401, "Unauthorized", "Unauthorized"); }
ApiError Unsupported(std::string_view why) {
  return Make(415, "UnsupportedMediaType", std::string(why));
}
ApiError InternalError(std::string_view why) {
  return Make(500, "InternalError", fmt::format("Internal error occurred: {}", why));
}

ApiError TooManyRequests(std::string_view message, int retry_after_seconds,
                         std::vector<StatusCause> causes) {
  ApiError e = Make(429, "TooManyRequests", std::string(message));
  e.retry_after_seconds = retry_after_seconds;
  e.causes = std::move(causes);
  return e;
}

ApiError FromCode(int code, std::string_view message, int retry_after_seconds) {
  std::string reason;
  switch (code) {
    case 400: reason = "BadRequest"; break;
    case 401: reason = "Unauthorized"; break;
    case 403: reason = "Forbidden"; break;
    case 404: reason = "NotFound"; break;
    case 409: reason = "Conflict"; break;
    case 410: reason = "Expired"; break;
    case 422: reason = "Invalid"; break;
    case 429: reason = "TooManyRequests"; break;
    case 500: reason = "InternalError"; break;
    case 503: reason = "ServiceUnavailable"; break;
    case 504: reason = "Timeout"; break;
    default: reason = "Unknown"; break;
  }
  ApiError e = Make(code, std::move(reason), std::string(message));
  e.retry_after_seconds = retry_after_seconds;
  return e;
}

json::Json SuccessStatus(std::string_view group, std::string_view resource, std::string_view name,
                         std::string_view uid, int code) {
  json::Json details = {{"name", name}, {"kind", resource}};
  if (!group.empty()) details["group"] = group;
  if (!uid.empty()) details["uid"] = uid;
  return {{"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", json::Json::object()},
          {"status", "Success"}, {"details", std::move(details)}, {"code", code}};
}

}  // namespace phalanx::fakes::apiserver
