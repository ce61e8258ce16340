// Bearer tokens: which requests are authenticated, and what TokenReview answers.
// By default every request is accepted whatever its token; with a required token, only that
// token and the registered ones are (401 otherwise). TokenReview reports authenticated only for
// registered tokens, with their user.
// Thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json/json.h"

namespace phalanx::fakes::apiserver {

struct TokenUser {
  std::string username, uid;
  std::vector<std::string> groups;
  // user.extra, e.g. a bound pod token's "authentication.kubernetes.io/pod-name" and "pod-uid".
  std::map<std::string, std::vector<std::string>> extra;
};

class TokenRegistry {
 public:
  void Add(std::string token, TokenUser user);
  void Require(std::optional<std::string> token);
  // `authorization` is the Authorization header value.
  bool Authenticated(std::string_view authorization) const;
  // The TokenReview answer (status) for a TokenReview request body (spec.token, spec.audiences).
  json::Json Review(const json::Json& request) const;

 private:
  mutable std::mutex mu_;
  std::optional<std::string> required_;
  std::map<std::string, TokenUser, std::less<>> tokens_;
};

}  // namespace phalanx::fakes::apiserver
