#include "device-plugin/publish/node_state.h"

#include <algorithm>
#include <cctype>

#include "core/topology/topology_codec.h"

namespace phalanx::device_plugin {

std::string LabelValue(std::string_view text) {
  std::string out;
  for (char c : text) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    const char v = ok ? c : '-';
    if (v == '-' && !out.empty() && out.back() == '-') continue;
    out.push_back(v);
  }
  if (out.size() > 63) out.resize(63);
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  while (!out.empty() && !alnum(out.back())) out.pop_back();
  size_t start = 0;
  while (start < out.size() && !alnum(out[start])) ++start;
  return out.substr(start);
}

std::map<std::string, std::string> NodeLabels(const topology::NodeTopology& t, bool mig_capable) {
  std::map<std::string, std::string> labels;
  if (t.gpus.empty()) return labels;
  labels[std::string(kProductLabel)] = LabelValue(t.gpus[0].product);
  labels[std::string(kCountLabel)] = std::to_string(t.gpus.size());
  uint64_t mem = t.gpus[0].memory_mib;
  for (const auto& g : t.gpus) mem = std::min(mem, g.memory_mib);
  labels[std::string(kMemoryLabel)] = std::to_string(mem);
  labels[std::string(kMigCapableLabel)] = mig_capable ? "true" : "false";
  if (!t.nvlink_domain.empty()) labels[std::string(kNvlinkDomainLabel)] = t.nvlink_domain;
  return labels;
}

topology::NodeTopology WithHealth(topology::NodeTopology t, const HealthTable& health) {
  for (auto& g : t.gpus) {
    DeviceHealth h = health.Get(g.uuid.str());
    if (!h.healthy) {
      g.health = topology::Health::kUnhealthy;
      g.health_reason = h.reason.substr(0, 200);
    } else if (g.health_reason.empty()) {
      g.health = topology::Health::kHealthy;
    }
  }
  return t;
}

nlohmann::json GpuStateDocument(const std::vector<ResourceSpec>& resources, const HealthTable& health,
                                const std::map<std::string, std::string>& allocations, const UsageSummaries& usage) {
  nlohmann::json devices = nlohmann::json::object();
  for (const auto& r : resources) {
    for (const auto& d : r.devices) {
      DeviceHealth h = health.Effective(d.physical.str(), d.parent_gpu.str());
      nlohmann::json e = {{"health", h.healthy ? "Healthy" : "Unhealthy"}};
      if (!h.healthy) {
        e["reason"] = h.reason;
        if (h.xid != 0) e["xid"] = h.xid;
      }
      auto it = allocations.find(d.id);
      e["podUID"] = it == allocations.end() ? nlohmann::json(nullptr) : nlohmann::json(it->second);
      if (auto u = usage.find(d.physical.str()); u != usage.end()) {
        if (u->second.sm_util_5m) e["smUtil5m"] = *u->second.sm_util_5m;
        if (u->second.memory_used_mib) e["memUsedMiB"] = *u->second.memory_used_mib;
      }
      devices[d.id] = std::move(e);
    }
  }
  return {{"version", 1}, {"devices", std::move(devices)}};
}

nlohmann::json NodePatch(const std::map<std::string, std::string>& labels, const std::string& topology_doc,
                         const std::string& state_doc) {
  nlohmann::json meta = nlohmann::json::object();
  if (!labels.empty()) {
    nlohmann::json l = nlohmann::json::object();
    for (const auto& [k, v] : labels) l[k] = v;
    meta["labels"] = std::move(l);
  }
  nlohmann::json a = nlohmann::json::object();
  if (!topology_doc.empty()) a[std::string(topology::kGpuTopologyAnnotation)] = topology_doc;
  if (!state_doc.empty()) a[std::string(kGpuStateAnnotation)] = state_doc;
  if (!a.empty()) meta["annotations"] = std::move(a);
  return {{"metadata", std::move(meta)}};
}

}  // namespace phalanx::device_plugin
