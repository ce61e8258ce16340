#include "device-plugin/publish/publisher.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/log/log.h"
#include "core/topology/topology_codec.h"
#include "device-plugin/publish/node_state.h"

namespace phalanx::device_plugin {

Result<std::vector<std::string>> ParseDevicesAnnotation(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return InvalidArgumentError("phalanx.io/devices: expected {\"<container>\": [ids]}");
  std::vector<std::string> out;
  for (const auto& [container, ids] : j.items()) {
    if (!ids.is_array()) return InvalidArgumentError(fmt::format("phalanx.io/devices.{}: expected a list", container));
    for (const auto& id : ids) {
      if (!id.is_string()) return InvalidArgumentError(fmt::format("phalanx.io/devices.{}: expected strings", container));
      out.push_back(id.get<std::string>());
    }
  }
  return out;
}

Publisher::Publisher(PublisherOptions options, NodeApi& api, PodResourcesClient* pod_resources,
                     std::optional<topology::NodeTopology> topology, bool mig_capable,
                     std::vector<ResourceSpec> resources, HealthTable& health, const PluginMetrics* metrics,
                     std::shared_ptr<spdlog::logger> logger)
    : options_(std::move(options)),
      api_(api),
      pod_resources_(pod_resources),
      topology_(std::move(topology)),
      mig_capable_(mig_capable),
      resources_(std::move(resources)),
      health_(health),
      metrics_(metrics),
      logger_(std::move(logger)) {
  for (const auto& r : resources_) resource_names_.insert(r.name);
}

Publisher::~Publisher() { Stop(); }

void Publisher::Start() {
  subscription_ = health_.Subscribe([this] {
    {
      std::lock_guard<std::mutex> lock(mu_);
      dirty_ = true;
    }
    cv_.notify_all();
  });
  thread_ = std::thread([this] { Loop(); });
}

void Publisher::Stop() {
  if (subscription_ != 0) {
    health_.Unsubscribe(subscription_);
    subscription_ = 0;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::string Publisher::DegradedReason() const {
  std::lock_guard<std::mutex> lock(mu_);
  return degraded_;
}

int Publisher::writes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return writes_;
}

void Publisher::Loop() {
  auto delay = options_.interval;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    lock.unlock();
    const Status s = PublishOnce();
    lock.lock();
    delay = s.ok() ? options_.interval : std::min(options_.max_backoff, delay * 2);
    // Never sooner than `delay` after this attempt, even when health changes meanwhile.
    const auto earliest = std::chrono::steady_clock::now() + delay;
    cv_.wait_until(lock, earliest, [this] { return stop_; });
    if (stop_) break;
    // A periodic pass keeps allocations fresh; a health change just makes it happen now.
    dirty_ = false;
  }
}

std::vector<AnnotatedPod> Publisher::Annotated(const std::vector<PodOnNode>& pods, const Allocations& alloc) const {
  std::vector<AnnotatedPod> out;
  for (const auto& p : pods) {
    if (p.phase != "Pending" || p.deleting || p.devices_annotation.empty()) continue;
    if (alloc.by_pod.count(PodKey{p.ns, p.name})) continue;  // already holds devices
    auto ids = ParseDevicesAnnotation(p.devices_annotation);
    if (!ids.ok()) continue;
    out.push_back(AnnotatedPod{.key = p.ns + "/" + p.name, .created = p.created, .device_ids = std::move(*ids)});
  }
  return out;
}

std::vector<AnnotatedPod> Publisher::PendingPods() {
  auto live = api_.ListPodsOnNode(options_.node_name, /*fast=*/true);
  std::lock_guard<std::mutex> lock(mu_);
  if (!live.ok()) {
    PHX_LOG_DEBUG(logger_, "Failed to list pods for preferred allocation; using the last list", kv("err", live.status()));
    return Annotated(pods_, allocations_);
  }
  return Annotated(*live, allocations_);
}

void Publisher::CountMismatches(const std::vector<PodOnNode>& pods, const Allocations& alloc) {
  for (const auto& p : pods) {
    if (p.devices_annotation.empty()) continue;
    auto it = alloc.by_pod.find(PodKey{p.ns, p.name});
    if (it == alloc.by_pod.end()) continue;
    auto wanted = ParseDevicesAnnotation(p.devices_annotation);
    if (!wanted.ok()) continue;
    std::set<std::string> mine;  // the annotated IDs this plugin advertises
    std::string resource;        // the resource they belong to, for the metric label
    for (const auto& id : *wanted) {
      for (const auto& r : resources_) {
        if (r.Find(id)) {
          mine.insert(id);
          if (resource.empty()) resource = r.name;
        }
      }
    }
    if (mine.empty()) continue;  // the annotation names no device of ours (another plugin's)
    std::lock_guard<std::mutex> lock(mu_);
    if (mine != it->second && mismatched_.insert(p.uid).second) {
      PHX_LOG_WARN(logger_, "Allocation differs from phalanx.io/devices", kv("pod", p.ns + "/" + p.name));
      if (metrics_) metrics_->Inc(metrics_->annotation_mismatches, {resource});
    }
  }
}

Status PublishOnce_(Publisher&);

Status Publisher::PublishOnce() {
  Allocations alloc;
  Status status = [&]() -> Status {
    if (pod_resources_ != nullptr) {
      PHX_ASSIGN_OR_RETURN(alloc, pod_resources_->List(resource_names_));
    }
    PHX_ASSIGN_OR_RETURN(auto pods, api_.ListPodsOnNode(options_.node_name, /*fast=*/false));
    std::map<std::string, std::string> uid_of;  // "ns/name" -> uid
    for (const auto& p : pods) uid_of[p.ns + "/" + p.name] = p.uid;
    std::map<std::string, std::string> device_to_uid;
    for (const auto& [id, key] : alloc.by_device) {
      auto it = uid_of.find(key.ns + "/" + key.name);
      // A pod kubelet still reports but the API no longer has is gone: the device is free.
      if (it != uid_of.end()) device_to_uid[id] = it->second;
    }
    CountMismatches(pods, alloc);
    {
      std::lock_guard<std::mutex> lock(mu_);
      pods_ = pods;
      allocations_ = alloc;
    }
    std::string topo_doc;
    if (topology_) {
      auto encoded = topology::EncodeTopology(WithHealth(*topology_, health_));
      if (encoded.ok()) {
        topo_doc = std::move(encoded).value();
      } else {
        PHX_LOG_WARN(logger_, "Failed to encode the GPU topology; not publishing it", kv("err", encoded.status()));
      }
    }
    const std::string state_doc = GpuStateDocument(resources_, health_, device_to_uid).dump();
    const auto labels = topology_ ? NodeLabels(*topology_, mig_capable_) : std::map<std::string, std::string>{};
    const nlohmann::json patch = NodePatch(labels, topo_doc, state_doc);
    const std::string text = patch.dump();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (text == last_written_) return OkStatus();
    }
    Status s = api_.PatchNode(options_.node_name, patch);
    if (metrics_) metrics_->Inc(metrics_->publish_writes, {s.ok() ? "ok" : "error"});
    if (!s.ok()) return s.WithContext(fmt::format("patch node {}", options_.node_name));
    std::lock_guard<std::mutex> lock(mu_);
    last_written_ = text;
    ++writes_;
    return OkStatus();
  }();
  std::lock_guard<std::mutex> lock(mu_);
  if (status.ok()) {
    if (!degraded_.empty()) PHX_LOG_INFO(logger_, "Published node GPU state", kv("node", options_.node_name));
    degraded_.clear();
  } else {
    if (degraded_ != "publishing degraded: " + status.message()) {
      PHX_LOG_WARN(logger_, "Failed to publish node GPU state, will retry", kv("node", options_.node_name),
                   kv("err", status));
    }
    degraded_ = "publishing degraded: " + status.message();
  }
  return status;
}

}  // namespace phalanx::device_plugin
