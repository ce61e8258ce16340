#include "tests/fakes/apiserver/request_counts.h"

namespace phalanx::fakes::apiserver {

void RequestCounts::Add(std::string_view client, std::string_view verb, std::string_view resource) {
  RequestKey key{client.empty() ? "unknown" : std::string(client), std::string(verb), std::string(resource)};
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_[std::move(key)];
}

std::map<RequestKey, uint64_t> RequestCounts::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_;
}

uint64_t RequestCounts::Count(std::string_view client, std::string_view verb, std::string_view resource) const {
  auto matches = [](std::string_view want, const std::string& have) { return want.empty() || want == have; };
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t n = 0;
  for (const auto& [key, count] : counts_) {
    if (matches(client, key.client) && matches(verb, key.verb) && matches(resource, key.resource)) n += count;
  }
  return n;
}

void RequestCounts::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  counts_.clear();
}

json::Json RequestCounts::ToJson() const {
  json::Json out = json::Json::object();
  for (const auto& [key, count] : Snapshot()) out[key.client][key.verb][key.resource] = count;
  return out;
}

}  // namespace phalanx::fakes::apiserver
