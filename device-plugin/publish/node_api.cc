#include "device-plugin/publish/node_api.h"

#include <algorithm>
#include <ctime>
#include <optional>
#include <string_view>

#include "device-plugin/publish/node_state.h"

namespace phalanx::device_plugin {
namespace {

std::string Str(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// RFC 3339 "2026-11-22T09:11:01Z" (what the API server writes for creationTimestamp).
SystemTime ParseTime(const std::string& s) {
  std::tm tm{};
  if (s.size() < 19 || strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm) == nullptr) return SystemTime{};
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

// A plain decimal count ("8"); nullopt otherwise (quantities with units are not device counts).
std::optional<uint64_t> ParseCount(const std::string& s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  uint64_t n = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  return n;
}

}  // namespace

Result<PodOnNode> DecodePod(const nlohmann::json& pod) {
  if (!pod.is_object()) return InvalidArgumentError("pod: expected an object");
  auto meta = pod.find("metadata");
  if (meta == pod.end() || !meta->is_object()) return InvalidArgumentError("pod: no metadata");
  PodOnNode p;
  p.uid = Str(*meta, "uid");
  p.ns = Str(*meta, "namespace");
  p.name = Str(*meta, "name");
  if (p.uid.empty() || p.name.empty()) return InvalidArgumentError("pod: metadata.uid and name are required");
  p.created = ParseTime(Str(*meta, "creationTimestamp"));
  p.resource_version = ParseCount(Str(*meta, "resourceVersion")).value_or(0);
  p.deleting = meta->contains("deletionTimestamp") && !(*meta)["deletionTimestamp"].is_null();
  if (auto a = meta->find("annotations"); a != meta->end() && a->is_object()) {
    p.devices_annotation = Str(*a, std::string(kDevicesAnnotation).c_str());
    p.idle_since = Str(*a, std::string(kIdleSinceAnnotation).c_str());
  }
  if (auto l = meta->find("labels"); l != meta->end() && l->is_object()) {
    p.gang = Str(*l, "phalanx.io/gang");
    if (p.gang.empty()) p.gang = Str(*l, "scheduling.x-k8s.io/pod-group");
    p.job = Str(*l, "phalanx.io/job-name");
  }
  if (auto st = pod.find("status"); st != pod.end() && st->is_object()) p.phase = Str(*st, "phase");
  if (auto spec = pod.find("spec"); spec != pod.end() && spec->is_object()) {
    p.priority_class = Str(*spec, "priorityClassName");
    for (const char* list : {"initContainers", "containers"}) {
      auto cs = spec->find(list);
      if (cs == spec->end() || !cs->is_array()) continue;
      for (const auto& c : *cs) {
        if (!c.is_object()) continue;
        ContainerRequest request{.name = Str(c, "name"), .init = std::string_view(list) == "initContainers"};
        auto res = c.find("resources");
        if (res == c.end() || !res->is_object()) continue;
        // Extended resources: requests equal limits when both are set; either alone counts.
        for (const char* kind : {"requests", "limits"}) {
          auto amounts = res->find(kind);
          if (amounts == res->end() || !amounts->is_object()) continue;
          for (const auto& [name, amount] : amounts->items()) {
            if (std::find(p.resources.begin(), p.resources.end(), name) == p.resources.end()) {
              p.resources.push_back(name);
            }
            std::optional<uint64_t> n;
            if (amount.is_string()) n = ParseCount(amount.get<std::string>());
            if (amount.is_number_unsigned()) n = amount.get<uint64_t>();
            if (n && *n > 0 && *n < 1'000'000) request.counts[name] = static_cast<int>(*n);
          }
        }
        if (!request.counts.empty()) p.containers.push_back(std::move(request));
      }
    }
  }
  return p;
}

}  // namespace phalanx::device_plugin
