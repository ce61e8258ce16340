#include "tests/fakes/apiserver/faults.h"

namespace phalanx::fakes::apiserver {

void FaultInjector::FailNext(FaultRule rule) {
  std::lock_guard<std::mutex> lock(mu_);
  if (rule.count > 0) rules_.push_back(std::move(rule));
}

void FaultInjector::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  rules_.clear();
  latency_ = std::chrono::milliseconds(0);
}

std::optional<ApiError> FaultInjector::Match(std::string_view verb, std::string_view path) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = rules_.begin(); it != rules_.end(); ++it) {
    if (it->verb != "*" && it->verb != verb) continue;
    if (!it->path_contains.empty() && path.find(it->path_contains) == std::string_view::npos) continue;
    ApiError error = FromCode(it->code, it->message, it->retry_after_seconds);
    if (--it->count <= 0) rules_.erase(it);
    return error;
  }
  return std::nullopt;
}

void FaultInjector::set_latency(std::chrono::milliseconds latency) {
  std::lock_guard<std::mutex> lock(mu_);
  latency_ = latency;
}

std::chrono::milliseconds FaultInjector::latency() const {
  std::lock_guard<std::mutex> lock(mu_);
  return latency_;
}

void FaultInjector::set_write_latency(std::chrono::milliseconds latency) {
  std::lock_guard<std::mutex> lock(mu_);
  write_latency_ = latency;
}

std::chrono::milliseconds FaultInjector::write_latency() const {
  std::lock_guard<std::mutex> lock(mu_);
  return write_latency_;
}

}  // namespace phalanx::fakes::apiserver
