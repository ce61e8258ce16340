#include "tests/fakes/apiserver/disruption_budget.h"

#include <algorithm>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace phalanx::fakes::apiserver {
namespace {

using json::Member;

// metav1.LabelSelector -> the query-string form LabelSelector parses; nullopt when malformed.
std::optional<std::string> SelectorText(const json::Json& selector) {
  if (!selector.is_object()) return std::nullopt;
  std::vector<std::string> parts;
  if (const json::Json* labels = Member(selector, "matchLabels")) {
    if (!labels->is_object()) return std::nullopt;
    for (const auto& [key, value] : labels->items()) {
      if (!value.is_string()) return std::nullopt;
      parts.push_back(key + "=" + value.get<std::string>());
    }
  }
  if (const json::Json* expressions = Member(selector, "matchExpressions")) {
    if (!expressions->is_array()) return std::nullopt;
    for (const auto& e : *expressions) {
      if (!e.is_object() || !e.contains("key") || !e["key"].is_string()) return std::nullopt;
      const std::string key = e["key"].get<std::string>();
      const std::string op = e.value("operator", "");
      std::vector<std::string> values;
      if (const json::Json* v = Member(e, "values")) {
        if (!v->is_array()) return std::nullopt;
        for (const auto& value : *v) {
          if (!value.is_string()) return std::nullopt;
          values.push_back(value.get<std::string>());
        }
      }
      if (op == "In" || op == "NotIn") {
        if (values.empty()) return std::nullopt;
        parts.push_back(fmt::format("{} {} ({})", key, op == "In" ? "in" : "notin",
                                    fmt::join(values, ",")));
      } else if (op == "Exists" || op == "DoesNotExist") {
        if (!values.empty()) return std::nullopt;
        parts.push_back((op == "Exists" ? "" : "!") + key);
      } else {
        return std::nullopt;
      }
    }
  }
  return fmt::format("{}", fmt::join(parts, ","));
}

// An IntOrString against `total`: integers as they are, "N%" rounded up (the controller's
// GetScaledValueFromIntOrPercent with roundUp); nullopt when malformed.
std::optional<int64_t> Scaled(const json::Json& value, int64_t total) {
  if (value.is_number_integer()) return value.get<int64_t>();
  if (!value.is_string()) return std::nullopt;
  const std::string text = value.get<std::string>();
  if (text.size() < 2 || text.back() != '%') return std::nullopt;
  const std::string digits = text.substr(0, text.size() - 1);
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      digits.size() > 9) {
    return std::nullopt;
  }
  const int64_t percent = std::stoll(digits);
  return (percent * total + 99) / 100;
}

bool IsTerminating(const json::Json& pod) {
  const json::Json* meta = Member(pod, "metadata");
  return meta != nullptr && Member(*meta, "deletionTimestamp") != nullptr;
}

std::string BudgetName(const json::Json& budget) {
  const json::Json* meta = Member(budget, "metadata");
  return meta != nullptr ? meta->value("name", "") : "";
}

}  // namespace

std::optional<LabelSelector> BudgetSelector(const json::Json& budget) {
  const json::Json* spec = Member(budget, "spec");
  const json::Json* selector = spec != nullptr ? Member(*spec, "selector") : nullptr;
  if (selector == nullptr) return std::nullopt;
  auto text = SelectorText(*selector);
  if (!text) return std::nullopt;
  auto parsed = LabelSelector::Parse(*text);
  if (!parsed.ok()) return std::nullopt;
  return std::move(parsed).value();
}

bool PodReady(const json::Json& pod) {
  const json::Json* status = Member(pod, "status");
  const json::Json* conditions = status != nullptr ? Member(*status, "conditions") : nullptr;
  if (conditions == nullptr || !conditions->is_array()) return false;
  return std::any_of(conditions->begin(), conditions->end(), [](const json::Json& c) {
    return c.is_object() && c.value("type", "") == "Ready" && c.value("status", "") == "True";
  });
}

bool EvictionIgnoresBudgets(const StoredObject& pod) {
  return pod.terminating || pod.phase == "Pending" || pod.phase == "Succeeded" ||
         pod.phase == "Failed";
}

BudgetStatus ComputeBudgetStatus(const json::Json& budget, const std::vector<json::Json>& selected,
                                 std::optional<int64_t> controllers_scale) {
  BudgetStatus s;
  for (const auto& pod : selected) {
    if (!IsTerminating(pod) && PodReady(pod)) ++s.current_healthy;
  }
  const json::Json empty = json::Json::object();
  const json::Json* spec_ptr = Member(budget, "spec");
  const json::Json& spec = spec_ptr != nullptr ? *spec_ptr : empty;
  std::optional<int64_t> desired;
  if (const json::Json* max_unavailable = Member(spec, "maxUnavailable")) {
    if (controllers_scale) {
      s.expected_pods = *controllers_scale;
      if (auto n = Scaled(*max_unavailable, s.expected_pods)) {
        desired = std::max<int64_t>(0, s.expected_pods - *n);
      }
    }
  } else if (const json::Json* min_available = Member(spec, "minAvailable")) {
    if (min_available->is_number_integer()) {
      s.expected_pods = static_cast<int64_t>(selected.size());
      desired = min_available->get<int64_t>();
    } else if (controllers_scale) {
      s.expected_pods = *controllers_scale;
      desired = Scaled(*min_available, s.expected_pods);
    }
  }
  // Neither field, a malformed one, or no scale: the controller's fail-safe allows nothing.
  if (!desired) {
    s.expected_pods = 0;
    return s;
  }
  s.desired_healthy = *desired;
  if (s.expected_pods > 0) {
    s.disruptions_allowed = std::max<int64_t>(0, s.current_healthy - s.desired_healthy);
  }
  return s;
}

std::optional<ApiError> CheckEviction(const json::Json& budget, const BudgetStatus& status,
                                      bool pod_ready) {
  if (!pod_ready) {
    const json::Json* spec = Member(budget, "spec");
    if (spec != nullptr && spec->value("unhealthyPodEvictionPolicy", "") == "AlwaysAllow") {
      return std::nullopt;
    }
    if (status.current_healthy >= status.desired_healthy && status.desired_healthy > 0) {
      return std::nullopt;
    }
  }
  if (status.disruptions_allowed > 0) return std::nullopt;
  return TooManyRequests(
      "Cannot evict pod as it would violate the pod's disruption budget.", 0,
      {{"DisruptionBudget",
        fmt::format("The disruption budget {} needs {} healthy pods and has {} currently",
                    BudgetName(budget), status.desired_healthy, status.current_healthy),
        ""}});
}

ApiError MultipleBudgetsError() {
  ApiError e;
  e.code = 500;
  e.message =
      "This pod has more than one PodDisruptionBudget, which the eviction subresource does not "
      "support.";
  return e;
}

}  // namespace phalanx::fakes::apiserver
