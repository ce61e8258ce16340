#include "operator/controller/token_review.h"

#include <algorithm>

namespace phalanx::op {

json::Json MakeTokenReview(std::string_view token, std::string_view audience) {
  return {{"apiVersion", "authentication.k8s.io/v1"},
          {"kind", "TokenReview"},
          {"spec", {{"token", std::string(token)}, {"audiences", json::Json::array({std::string(audience)})}}}};
}

Result<std::string> BearerToken(std::string_view h) {
  constexpr std::string_view kPrefix = "Bearer ";
  if (h.size() <= kPrefix.size() || h.substr(0, kPrefix.size()) != kPrefix) {
    return UnauthenticatedError("missing Authorization: Bearer <projected service-account token>");
  }
  return std::string(h.substr(kPrefix.size()));
}

Result<PodIdentity> ParseTokenReview(const json::Json& review, std::string_view audience) {
  const json::Json status = review.value("status", json::Json::object());
  if (!status.value("authenticated", false)) {
    return UnauthenticatedError("token rejected: " + status.value("error", std::string("not authenticated")));
  }
  const json::Json auds = status.value("audiences", json::Json::array());
  if (auds.is_array() && !auds.empty() &&
      std::find(auds.begin(), auds.end(), json::Json(std::string(audience))) == auds.end()) {
    return UnauthenticatedError("token not issued for audience " + std::string(audience));
  }
  const json::Json user = status.value("user", json::Json::object());
  const std::string username = user.value("username", std::string());
  constexpr std::string_view kSa = "system:serviceaccount:";
  if (username.rfind(kSa, 0) != 0) return PermissionDeniedError("not a service-account token: " + username);
  const std::string rest = username.substr(kSa.size());
  const auto colon = rest.find(':');
  if (colon == std::string::npos) return PermissionDeniedError("malformed service-account user " + username);
  PodIdentity id;
  id.namespace_ = rest.substr(0, colon);
  id.service_account = rest.substr(colon + 1);
  const json::Json extra = user.value("extra", json::Json::object());
  auto first = [&](const char* key) -> std::string {
    auto it = extra.find(key);
    if (it == extra.end() || !it->is_array() || it->empty() || !(*it)[0].is_string()) return "";
    return (*it)[0].get<std::string>();
  };
  id.pod_name = first("authentication.kubernetes.io/pod-name");
  id.pod_uid = first("authentication.kubernetes.io/pod-uid");
  if (id.pod_name.empty()) return PermissionDeniedError("token is not bound to a pod (use a projected token)");
  return id;
}

}  // namespace phalanx::op
