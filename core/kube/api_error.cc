#include "core/kube/api_error.h"

#include <array>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace phalanx::kube {
namespace {

constexpr std::array<std::pair<Reason, std::string_view>, 20> kNames{{
    {Reason::kUnknown, "Unknown"},
    {Reason::kBadRequest, "BadRequest"},
    {Reason::kUnauthorized, "Unauthorized"},
    {Reason::kForbidden, "Forbidden"},
    {Reason::kNotFound, "NotFound"},
    {Reason::kAlreadyExists, "AlreadyExists"},
    {Reason::kConflict, "Conflict"},
    {Reason::kGone, "Gone"},
    {Reason::kExpired, "Expired"},
    {Reason::kInvalid, "Invalid"},
    {Reason::kMethodNotAllowed, "MethodNotAllowed"},
    {Reason::kNotAcceptable, "NotAcceptable"},
    {Reason::kUnsupportedMediaType, "UnsupportedMediaType"},
    {Reason::kRequestEntityTooLarge, "RequestEntityTooLarge"},
    {Reason::kTooManyRequests, "TooManyRequests"},
    {Reason::kInternalError, "InternalError"},
    {Reason::kServiceUnavailable, "ServiceUnavailable"},
    {Reason::kServerTimeout, "ServerTimeout"},
    {Reason::kTimeout, "Timeout"},
    {Reason::kNetwork, "Network"},
}};

Reason ReasonFromName(std::string_view name) {
  for (const auto& [reason, n] : kNames) {
    if (n == name) return reason;
  }
  return Reason::kUnknown;
}

// client-go's reasonForCode: the reason implied by an HTTP code when the body has none.
Reason ReasonFromCode(int code) {
  switch (code) {
    case 400: return Reason::kBadRequest;
    case 401: return Reason::kUnauthorized;
    case 403: return Reason::kForbidden;
    case 404: return Reason::kNotFound;
    case 405: return Reason::kMethodNotAllowed;
    case 406: return Reason::kNotAcceptable;
    case 409: return Reason::kConflict;
    case 410: return Reason::kGone;
    case 413: return Reason::kRequestEntityTooLarge;
    case 415: return Reason::kUnsupportedMediaType;
    case 422: return Reason::kInvalid;
    case 429: return Reason::kTooManyRequests;
    case 500: return Reason::kInternalError;
    case 503: return Reason::kServiceUnavailable;
    case 504: return Reason::kServerTimeout;
    default: return Reason::kUnknown;
  }
}

StatusCode CodeFor(Reason reason, int http_code) {
  switch (reason) {
    case Reason::kNotFound: return StatusCode::kNotFound;
    case Reason::kAlreadyExists: return StatusCode::kAlreadyExists;
    case Reason::kConflict: return StatusCode::kAborted;
    case Reason::kGone:
    case Reason::kExpired: return StatusCode::kOutOfRange;
    case Reason::kForbidden: return StatusCode::kPermissionDenied;
    case Reason::kUnauthorized: return StatusCode::kUnauthenticated;
    case Reason::kInvalid:
    case Reason::kBadRequest:
    case Reason::kNotAcceptable:
    case Reason::kUnsupportedMediaType:
    case Reason::kRequestEntityTooLarge: return StatusCode::kInvalidArgument;
    case Reason::kMethodNotAllowed: return StatusCode::kUnimplemented;
    case Reason::kTooManyRequests:
    case Reason::kInternalError:
    case Reason::kServiceUnavailable:
    case Reason::kServerTimeout:
    case Reason::kTimeout:
    case Reason::kNetwork: return StatusCode::kUnavailable;
    case Reason::kUnknown: break;
  }
  if (http_code >= 500) return StatusCode::kUnavailable;
  return StatusCode::kUnknown;
}

std::string FirstLine(std::string_view body) {
  const size_t nl = body.find('\n');
  std::string line(body.substr(0, std::min<size_t>(nl, 200)));
  return line;
}

ApiError FromJson(const nlohmann::json& j, int http_code) {
  ApiError e;
  e.http_code = http_code;
  if (auto it = j.find("code"); it != j.end() && it->is_number_integer() && it->get<int>() > 0) {
    e.http_code = it->get<int>();
  }
  if (auto it = j.find("message"); it != j.end() && it->is_string()) e.message = it->get<std::string>();
  if (auto it = j.find("reason"); it != j.end() && it->is_string()) {
    e.reason = ReasonFromName(it->get<std::string>());
  }
  if (auto d = j.find("details"); d != j.end() && d->is_object()) {
    if (auto it = d->find("retryAfterSeconds"); it != d->end() && it->is_number_integer()) {
      e.retry_after_seconds = it->get<int>();
    }
    if (auto it = d->find("kind"); it != d->end() && it->is_string()) e.kind = it->get<std::string>();
    if (auto it = d->find("name"); it != d->end() && it->is_string()) e.name = it->get<std::string>();
  }
  if (e.reason == Reason::kUnknown) e.reason = ReasonFromCode(e.http_code);
  return e;
}

}  // namespace

std::string_view ReasonName(Reason reason) {
  for (const auto& [r, n] : kNames) {
    if (r == reason) return n;
  }
  return "Unknown";
}

ApiError DecodeStatusObject(std::string_view status_json, int fallback_code) {
  nlohmann::json j = nlohmann::json::parse(status_json, nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) return FromJson(j, fallback_code);
  ApiError e;
  e.http_code = fallback_code;
  e.reason = ReasonFromCode(fallback_code);
  e.message = FirstLine(status_json);
  return e;
}

ApiError DecodeApiError(int http_code, std::string_view body) {
  ApiError e = DecodeStatusObject(body, http_code);
  if (e.message.empty()) e.message = fmt::format("the server returned HTTP {}", http_code);
  return e;
}

Status ToStatus(const ApiError& error) {
  return Status(CodeFor(error.reason, error.http_code),
                fmt::format("{} (HTTP {}): {}", ReasonName(error.reason), error.http_code, error.message));
}

Reason ReasonOf(const Status& status) {
  if (status.ok()) return Reason::kUnknown;
  const std::string& m = status.message();
  const size_t marker = m.find(" (HTTP ");
  if (marker == std::string::npos) return Reason::kUnknown;
  size_t start = m.rfind(": ", marker);
  start = start == std::string::npos ? 0 : start + 2;
  return ReasonFromName(std::string_view(m).substr(start, marker - start));
}

}  // namespace phalanx::kube
