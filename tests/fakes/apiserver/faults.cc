#include "tests/fakes/apiserver/faults.h"

#include <fmt/format.h>

namespace phalanx::fakes::apiserver {
namespace {

constexpr std::pair<FaultKind, std::string_view> kKindNames[] = {
    {FaultKind::kStatus, "status"},         {FaultKind::kTimeout, "timeout"},
    {FaultKind::kReset, "reset"},           {FaultKind::kSlow, "slow"},
    {FaultKind::kWatchGone, "watch-gone"},  {FaultKind::kWatchClose, "watch-close"},
    {FaultKind::kWatchStall, "watch-stall"},
};

bool IsWriteVerb(std::string_view verb) {
  return verb == "create" || verb == "update" || verb == "patch" || verb == "delete" || verb == "deletecollection";
}

bool IsWatchKind(FaultKind kind) {
  return kind == FaultKind::kWatchGone || kind == FaultKind::kWatchClose || kind == FaultKind::kWatchStall;
}

// The wording kube-apiserver uses for the errors a fault imitates.
std::string DefaultMessage(int code) {
  switch (code) {
    case 429: return "Too many requests, please try again later.";
    case 503: return "the server is currently unable to handle the request";
    case 504: return "Timeout: request did not complete within requested timeout - context deadline exceeded";
    default: return "Internal error occurred: injected fault";
  }
}

Fault MakeFault(const FaultRule& rule) {
  Fault fault;
  fault.kind = rule.kind;
  fault.delay = rule.delay;
  fault.after_apply = rule.after_apply;
  switch (rule.kind) {
    case FaultKind::kStatus:
      fault.error = FromCode(rule.code, rule.message.empty() ? DefaultMessage(rule.code) : rule.message,
                             rule.retry_after_seconds);
      break;
    case FaultKind::kTimeout: fault.error = FromCode(504, DefaultMessage(504), 0); break;
    case FaultKind::kWatchGone:
      fault.error = Gone("too old resource version: injected (watch-gone fault)");
      break;
    default: break;
  }
  return fault;
}

template <typename T>
Status Read(const json::Json& body, const char* key, T& out) {
  if (!body.contains(key)) return OkStatus();
  try {
    out = body[key].get<T>();
  } catch (const std::exception&) {
    return InvalidArgumentError(fmt::format("fault field \"{}\" has the wrong type", key));
  }
  return OkStatus();
}

}  // namespace

std::string_view FaultKindName(FaultKind kind) {
  for (const auto& [k, name] : kKindNames) {
    if (k == kind) return name;
  }
  return "?";
}

std::optional<FaultKind> ParseFaultKind(std::string_view name) {
  for (const auto& [k, n] : kKindNames) {
    if (n == name) return k;
  }
  return std::nullopt;
}

Result<FaultRule> FaultRuleFromJson(const json::Json& body) {
  if (!body.is_object()) return InvalidArgumentError("a fault rule must be a JSON object");
  FaultRule rule;
  std::string kind = "status";
  int64_t delay_ms = 0;
  PHX_RETURN_IF_ERROR(Read(body, "name", rule.name));
  PHX_RETURN_IF_ERROR(Read(body, "verb", rule.verb));
  PHX_RETURN_IF_ERROR(Read(body, "resource", rule.resource));
  PHX_RETURN_IF_ERROR(Read(body, "namespace", rule.namespace_));
  PHX_RETURN_IF_ERROR(Read(body, "client", rule.client));
  PHX_RETURN_IF_ERROR(Read(body, "pathContains", rule.path_contains));
  PHX_RETURN_IF_ERROR(Read(body, "kind", kind));
  PHX_RETURN_IF_ERROR(Read(body, "code", rule.code));
  PHX_RETURN_IF_ERROR(Read(body, "after", rule.after));
  PHX_RETURN_IF_ERROR(Read(body, "count", rule.count));
  PHX_RETURN_IF_ERROR(Read(body, "probability", rule.probability));
  PHX_RETURN_IF_ERROR(Read(body, "seed", rule.seed));
  PHX_RETURN_IF_ERROR(Read(body, "retryAfterSeconds", rule.retry_after_seconds));
  PHX_RETURN_IF_ERROR(Read(body, "delayMs", delay_ms));
  PHX_RETURN_IF_ERROR(Read(body, "afterApply", rule.after_apply));
  PHX_RETURN_IF_ERROR(Read(body, "message", rule.message));
  auto parsed = ParseFaultKind(kind);
  if (!parsed) {
    return InvalidArgumentError(fmt::format(
        "unknown fault kind \"{}\" (status, timeout, reset, slow, watch-gone, watch-close, watch-stall)", kind));
  }
  rule.kind = *parsed;
  if (rule.probability < 0 || rule.probability > 1) return InvalidArgumentError("probability must be in [0, 1]");
  if (delay_ms < 0 || delay_ms > 3600000) return InvalidArgumentError("delayMs must be in [0, 3600000]");
  if (rule.kind == FaultKind::kStatus && (rule.code < 400 || rule.code > 599)) {
    return InvalidArgumentError("code must be an HTTP error (400-599)");
  }
  rule.delay = std::chrono::milliseconds(delay_ms);
  return rule;
}

void FaultInjector::FailNext(FaultRule rule) {
  std::lock_guard<std::mutex> lock(mu_);
  ++added_;
  if (rule.count == 0) return;
  if (rule.name.empty()) rule.name = fmt::format("rule-{}", added_);
  const uint64_t seed = rule.seed;
  rules_.push_back(Active{std::move(rule), std::mt19937_64(seed)});
}

void FaultInjector::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  rules_.clear();
  latency_ = std::chrono::milliseconds(0);
}

std::optional<Fault> FaultInjector::Match(const FaultRequest& request) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = rules_.begin(); it != rules_.end(); ++it) {
    const FaultRule& r = it->rule;
    if (r.verb == "write" ? !IsWriteVerb(request.verb) : (r.verb != "*" && r.verb != request.verb)) continue;
    if (!r.resource.empty() && r.resource != request.resource) continue;
    if (!r.namespace_.empty() && r.namespace_ != request.namespace_) continue;
    if (!r.client.empty() && !request.client.starts_with(r.client)) continue;
    if (!r.path_contains.empty() && request.path.find(r.path_contains) == std::string_view::npos) continue;
    // Watch faults only break watches; a watch never gets the 504 of a request timeout.
    const bool watch = request.verb == "watch";
    if (IsWatchKind(r.kind) ? !watch : (r.kind == FaultKind::kTimeout && watch)) continue;
    if (it->rule.after > 0) {
      --it->rule.after;
      continue;
    }
    if (r.probability < 1.0 && std::uniform_real_distribution<double>(0, 1)(it->rng) >= r.probability) continue;
    Fault fault = MakeFault(r);
    fault.after_apply = fault.after_apply && request.write;
    ++fired_[r.name];
    if (r.count > 0 && --it->rule.count == 0) rules_.erase(it);
    return fault;
  }
  return std::nullopt;
}

std::optional<ApiError> FaultInjector::Match(std::string_view verb, std::string_view path) {
  auto fault = Match(FaultRequest{.verb = verb, .path = path});
  if (!fault) return std::nullopt;
  return fault->error;
}

std::map<std::string, uint64_t> FaultInjector::fired() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {fired_.begin(), fired_.end()};
}

uint64_t FaultInjector::fired(std::string_view name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = fired_.find(name);
  return it == fired_.end() ? 0 : it->second;
}

void FaultInjector::ClearFired() {
  std::lock_guard<std::mutex> lock(mu_);
  fired_.clear();
}

json::Json FaultInjector::ToJson() const {
  std::lock_guard<std::mutex> lock(mu_);
  json::Json rules = json::Json::array();
  for (const auto& a : rules_) {
    const FaultRule& r = a.rule;
    rules.push_back({{"name", r.name},           {"verb", r.verb},
                     {"resource", r.resource},   {"namespace", r.namespace_},
                     {"client", r.client},       {"pathContains", r.path_contains},
                     {"kind", FaultKindName(r.kind)}, {"code", r.code},
                     {"after", r.after},         {"count", r.count},
                     {"probability", r.probability},
                     {"delayMs", r.delay.count()}, {"afterApply", r.after_apply}});
  }
  json::Json fired = json::Json::object();
  for (const auto& [name, n] : fired_) fired[name] = n;
  return {{"rules", std::move(rules)}, {"fired", std::move(fired)}};
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
