// Facts about pod and node objects that both drivers need (pure functions over their JSON):
// GPU requests, phase, priority, gates, whether a pod still holds its node's resources.
#pragma once

#include <cstdint>
#include <string>

#include "core/kube/client.h"

namespace phalanx::e2e {

inline constexpr const char* kGpuResource = "nvidia.com/gpu";

// Parses a resource quantity as an integer count ("8"); 0 when absent or not a count.
inline int64_t Count(const kube::Json& quantity) {
  if (quantity.is_number_integer()) return quantity.get<int64_t>();
  if (!quantity.is_string()) return 0;
  try {
    return std::stoll(quantity.get<std::string>());
  } catch (...) {
    return 0;
  }
}

inline std::string Str(const kube::Json& object, const char* a, const char* b) {
  if (!object.contains(a) || !object[a].is_object()) return "";
  const auto& inner = object[a];
  return inner.contains(b) && inner[b].is_string() ? inner[b].get<std::string>() : "";
}

inline std::string Name(const kube::Json& o) { return Str(o, "metadata", "name"); }
inline std::string Namespace(const kube::Json& o) { return Str(o, "metadata", "namespace"); }
inline std::string Uid(const kube::Json& o) { return Str(o, "metadata", "uid"); }
inline std::string Key(const kube::Json& o) { return Namespace(o) + "/" + Name(o); }
inline std::string NodeName(const kube::Json& pod) { return Str(pod, "spec", "nodeName"); }
inline std::string Phase(const kube::Json& pod) { return Str(pod, "status", "phase"); }
inline bool Terminating(const kube::Json& o) {
  return o.contains("metadata") && o["metadata"].contains("deletionTimestamp");
}
inline bool Finished(const kube::Json& pod) { return Phase(pod) == "Succeeded" || Phase(pod) == "Failed"; }
inline bool Gated(const kube::Json& pod) {
  return pod.contains("spec") && pod["spec"].contains("schedulingGates") &&
         pod["spec"]["schedulingGates"].is_array() && !pod["spec"]["schedulingGates"].empty();
}
inline int64_t Priority(const kube::Json& pod) {
  return pod.contains("spec") && pod["spec"].contains("priority") && pod["spec"]["priority"].is_number_integer()
             ? pod["spec"]["priority"].get<int64_t>()
             : 0;
}
inline std::string Label(const kube::Json& o, const std::string& key) {
  if (!o.contains("metadata") || !o["metadata"].contains("labels")) return "";
  const auto& labels = o["metadata"]["labels"];
  return labels.contains(key) && labels[key].is_string() ? labels[key].get<std::string>() : "";
}
inline std::string Annotation(const kube::Json& o, const std::string& key) {
  if (!o.contains("metadata") || !o["metadata"].contains("annotations")) return "";
  const auto& a = o["metadata"]["annotations"];
  return a.contains(key) && a[key].is_string() ? a[key].get<std::string>() : "";
}

// The GPUs a container asks for: limits win (extended resources must have requests == limits).
inline int64_t ContainerGpus(const kube::Json& container) {
  if (!container.contains("resources")) return 0;
  const auto& r = container["resources"];
  for (const char* k : {"limits", "requests"}) {
    if (r.contains(k) && r[k].contains(kGpuResource)) return Count(r[k][kGpuResource]);
  }
  return 0;
}

inline int64_t PodGpus(const kube::Json& pod) {
  int64_t total = 0;
  if (!pod.contains("spec") || !pod["spec"].contains("containers")) return 0;
  for (const auto& c : pod["spec"]["containers"]) total += ContainerGpus(c);
  return total;
}

inline int64_t NodeAllocatableGpus(const kube::Json& node) {
  if (!node.contains("status") || !node["status"].contains("allocatable")) return 0;
  const auto& a = node["status"]["allocatable"];
  return a.contains(kGpuResource) ? Count(a[kGpuResource]) : 0;
}

// A pod bound to a node uses its resources until it finished or is gone (terminating pods
// still hold them, as in kube-scheduler's cache).
inline bool HoldsNodeResources(const kube::Json& pod) { return !NodeName(pod).empty() && !Finished(pod); }

}  // namespace phalanx::e2e
