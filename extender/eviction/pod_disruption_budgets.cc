#include "extender/eviction/pod_disruption_budgets.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

namespace phalanx::extender {
namespace {

using json::Json;

std::optional<IntOrPercent> ParseIntOrPercent(const Json& spec, const char* key) {
  auto it = spec.find(key);
  if (it == spec.end() || it->is_null()) return std::nullopt;
  if (it->is_number_integer()) return IntOrPercent{it->get<int64_t>(), false};
  if (it->is_string()) {
    std::string s = it->get<std::string>();
    const bool percent = !s.empty() && s.back() == '%';
    if (percent) s.pop_back();
    try {
      return IntOrPercent{std::stoll(s), percent};
    } catch (...) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

std::optional<std::vector<LabelRequirement>> ParseSelector(const Json& spec) {
  auto sel = spec.find("selector");
  if (sel == spec.end() || !sel->is_object()) return std::nullopt;
  std::vector<LabelRequirement> reqs;
  if (auto ml = sel->find("matchLabels"); ml != sel->end() && ml->is_object()) {
    for (const auto& [k, v] : ml->items()) {
      if (!v.is_string()) return std::nullopt;
      reqs.push_back({k, "In", {v.get<std::string>()}});
    }
  }
  if (auto me = sel->find("matchExpressions"); me != sel->end() && me->is_array()) {
    for (const Json& e : *me) {
      if (!e.is_object()) return std::nullopt;
      LabelRequirement r{e.value("key", ""), e.value("operator", ""), {}};
      if (r.key.empty() || !(r.op == "In" || r.op == "NotIn" || r.op == "Exists" || r.op == "DoesNotExist")) {
        return std::nullopt;  // a malformed selector selects nothing, as in policy/v1
      }
      if (auto vals = e.find("values"); vals != e.end() && vals->is_array()) {
        for (const Json& v : *vals) {
          if (v.is_string()) r.values.push_back(v.get<std::string>());
        }
      }
      reqs.push_back(std::move(r));
    }
  }
  return reqs;
}

int64_t Scaled(const IntOrPercent& v, int64_t expected) {
  if (!v.percent) return v.value;
  return static_cast<int64_t>(std::ceil(static_cast<double>(v.value) * static_cast<double>(expected) / 100.0));
}

bool Healthy(const PodInfo& p) { return p.ready && !p.deleting; }

// Not running, so evicting it disrupts nothing (canIgnorePDB).
bool IgnoresBudgets(const PodInfo& p) { return p.phase == PodPhase::kPending || p.Terminal() || p.deleting; }

// The disruption controller's numbers for a budget without status, from the pods we know.
void Estimate(PdbInfo& b, const std::vector<const PodInfo*>& pods) {
  int64_t expected = 0, healthy = 0;
  for (const PodInfo* p : pods) {
    if (p->ns != b.ns || !b.Selects(*p)) continue;
    expected++;
    if (Healthy(*p)) healthy++;
  }
  int64_t desired = 0;
  if (b.min_available) {
    desired = Scaled(*b.min_available, expected);
  } else if (b.max_unavailable) {
    desired = expected - Scaled(*b.max_unavailable, expected);
  }
  b.current_healthy = healthy;
  b.desired_healthy = std::max<int64_t>(desired, 0);
  b.disruptions_allowed = expected == 0 ? 0 : std::max<int64_t>(healthy - b.desired_healthy, 0);
}

}  // namespace

bool PdbInfo::Selects(const PodInfo& pod) const { return selector && SelectorMatches(*selector, pod.labels); }

Result<PdbInfo> ParsePdb(const Json& object) {
  if (!object.is_object()) return InvalidArgumentError("PodDisruptionBudget: expected an object");
  PdbInfo b;
  const Json meta = object.value("metadata", Json::object());
  b.name = meta.value("name", "");
  b.ns = meta.value("namespace", "default");
  if (b.name.empty()) return InvalidArgumentError("PodDisruptionBudget.metadata.name: missing");
  b.generation = meta.value("generation", int64_t{0});
  const Json spec = object.value("spec", Json::object());
  if (spec.is_object()) {
    b.selector = ParseSelector(spec);
    b.min_available = ParseIntOrPercent(spec, "minAvailable");
    b.max_unavailable = ParseIntOrPercent(spec, "maxUnavailable");
    b.always_allow_unhealthy = spec.value("unhealthyPodEvictionPolicy", "") == "AlwaysAllow";
  }
  const Json status = object.value("status", Json::object());
  if (status.is_object() && status.contains("observedGeneration")) {
    b.has_status = true;
    b.observed_generation = status.value("observedGeneration", int64_t{0});
    b.disruptions_allowed = status.value("disruptionsAllowed", int64_t{0});
    b.current_healthy = status.value("currentHealthy", int64_t{0});
    b.desired_healthy = status.value("desiredHealthy", int64_t{0});
  }
  return b;
}

std::string CheckEvictions(const std::vector<PdbInfo>& budgets, const std::vector<const PodInfo*>& victims,
                           const std::vector<const PodInfo*>& namespace_pods) {
  std::map<size_t, int64_t> needed;  // budget index -> disruptions the victim set uses
  for (const PodInfo* v : victims) {
    if (IgnoresBudgets(*v)) continue;
    std::vector<size_t> guarding;
    for (size_t i = 0; i < budgets.size(); ++i) {
      if (budgets[i].ns == v->ns && budgets[i].Selects(*v)) guarding.push_back(i);
    }
    if (guarding.empty()) continue;
    if (guarding.size() > 1) {
      return fmt::format("pod {} has more than one PodDisruptionBudget ({}, {}), which the eviction API refuses",
                         v->Key(), budgets[guarding[0]].name, budgets[guarding[1]].name);
    }
    // Unready victims are counted per budget below (whether they use a disruption depends on it).
    needed.try_emplace(guarding[0], 0);
    if (Healthy(*v)) needed[guarding[0]]++;
  }
  for (auto [i, n] : needed) {
    PdbInfo b = budgets[i];
    if (b.has_status && b.observed_generation < b.generation) {
      return fmt::format("PodDisruptionBudget {} is still being processed by the disruption controller", b.Key());
    }
    if (!b.has_status) Estimate(b, namespace_pods);
    // Unready victims: free with AlwaysAllow or when healthy enough, else they need a disruption too.
    int64_t unready = 0;
    for (const PodInfo* v : victims) {
      if (!IgnoresBudgets(*v) && !Healthy(*v) && b.ns == v->ns && b.Selects(*v)) unready++;
    }
    const bool unready_free =
        b.always_allow_unhealthy || (b.current_healthy >= b.desired_healthy && b.desired_healthy > 0);
    const int64_t total = n + (unready_free ? 0 : unready);
    if (total > b.disruptions_allowed) {
      return fmt::format(
          "evicting {} pod(s) would violate PodDisruptionBudget {} (it allows {} disruption(s): needs {} healthy "
          "pods and has {})",
          total, b.Key(), b.disruptions_allowed, b.desired_healthy, b.current_healthy);
    }
  }
  return "";
}

}  // namespace phalanx::extender
