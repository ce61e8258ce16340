#include "device-plugin/publish/node_api.h"

#include <algorithm>
#include <ctime>

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
        auto res = c.find("resources");
        if (!c.is_object() || res == c.end() || !res->is_object()) continue;
        for (const char* kind : {"limits", "requests"}) {
          auto amounts = res->find(kind);
          if (amounts == res->end() || !amounts->is_object()) continue;
          for (const auto& [name, amount] : amounts->items()) {
            if (std::find(p.resources.begin(), p.resources.end(), name) == p.resources.end()) {
              p.resources.push_back(name);
            }
          }
        }
      }
    }
  }
  return p;
}

}  // namespace phalanx::device_plugin
