#include "tests/fakes/apiserver/token_registry.h"

namespace phalanx::fakes::apiserver {

void TokenRegistry::Add(std::string token, TokenUser user) {
  std::lock_guard<std::mutex> lock(mu_);
  tokens_[std::move(token)] = std::move(user);
}

void TokenRegistry::Require(std::optional<std::string> token) {
  std::lock_guard<std::mutex> lock(mu_);
  required_ = std::move(token);
}

bool TokenRegistry::Authenticated(std::string_view authorization) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!required_) return true;
  constexpr std::string_view kBearer = "Bearer ";
  if (authorization.substr(0, kBearer.size()) != kBearer) return false;
  const std::string_view token = authorization.substr(kBearer.size());
  return token == *required_ || tokens_.find(token) != tokens_.end();
}

json::Json TokenRegistry::Review(const json::Json& request) const {
  std::string token;
  json::Json audiences = json::Json::array();
  if (request.is_object() && request.contains("spec") && request["spec"].is_object()) {
    token = request["spec"].value("token", "");
    if (request["spec"].contains("audiences")) audiences = request["spec"]["audiences"];
  }
  json::Json review = {{"kind", "TokenReview"},
                       {"apiVersion", "authentication.k8s.io/v1"},
                       {"metadata", {{"creationTimestamp", nullptr}}},
                       {"spec", request.is_object() && request.contains("spec") ? request["spec"]
                                                                              : json::Json::object()}};
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tokens_.find(token);
  if (it == tokens_.end()) {
    review["status"] = {{"authenticated", false}, {"error", "invalid bearer token"}, {"user", json::Json::object()}};
  } else {
    review["status"] = {{"authenticated", true},
                        {"user", {{"username", it->second.username},
                                  {"uid", it->second.uid},
                                  {"groups", it->second.groups}}},
                        {"audiences", audiences}};
    if (!it->second.extra.empty()) review["status"]["user"]["extra"] = it->second.extra;
  }
  return review;
}

}  // namespace phalanx::fakes::apiserver
