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

Publisher::Publisher(PublisherOptions options, NodeApi& api, const PodCache& pods, PodResourcesClient* pod_resources,
                     std::optional<topology::NodeTopology> topology, bool mig_capable,
                     std::vector<ResourceSpec> resources, HealthTable& health, const PluginMetrics* metrics,
                     std::shared_ptr<spdlog::logger> logger)
    : options_(std::move(options)),
      api_(api),
      pods_(pods),
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
    dirty_ = false;
    lock.unlock();
    (void)PublishOnce();
    lock.lock();
    // Only a failed write backs off: the other sources are local and cheap to read again.
    delay = write_failed_ ? std::min(options_.max_backoff, delay * 2) : options_.interval;
    const auto attempt = std::chrono::steady_clock::now();
    // Debounce: never sooner than `interval` after this attempt, whatever changes meanwhile.
    cv_.wait_until(lock, attempt + options_.interval, [this] { return stop_; });
    // During a backoff, a health change is worth an early retry.
    cv_.wait_until(lock, attempt + delay, [this] { return stop_ || dirty_; });
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

bool Publisher::AnyAdmissible(const std::vector<PodOnNode>& pods, const Allocations& alloc,
                              const std::string& resource, const std::vector<std::string>& available) const {
  const ResourceSpec* spec = nullptr;
  for (const auto& r : resources_) {
    if (r.name == resource) spec = &r;
  }
  const std::set<std::string> offered(available.begin(), available.end());
  for (const auto& p : pods) {
    if (p.deleting || !(p.phase.empty() || p.phase == "Pending")) continue;
    if (std::find(p.resources.begin(), p.resources.end(), resource) == p.resources.end()) continue;
    if (alloc.by_pod.count(PodKey{p.ns, p.name})) continue;
    if (p.devices_annotation.empty() || spec == nullptr) return true;
    auto ids = ParseDevicesAnnotation(p.devices_annotation);
    if (!ids.ok()) return true;
    // Annotated devices of this resource already taken: this pod was admitted before.
    const bool taken = std::any_of(ids->begin(), ids->end(),
                                   [&](const std::string& id) { return spec->Find(id) && !offered.count(id); });
    if (!taken) return true;
  }
  return false;
}

std::vector<AnnotatedPod> Publisher::PendingPods(const std::string& resource,
                                                 const std::vector<std::string>& available) {
  std::shared_ptr<const Allocations> alloc;
  {
    std::lock_guard<std::mutex> lock(mu_);
    alloc = allocations_;
  }
  const auto deadline = std::chrono::steady_clock::now() + options_.pod_wait;
  for (;;) {
    const uint64_t seen = pods_.version();
    const PodCache::Snapshot pods = pods_.Pods();
    if (!pods_.Synced() || AnyAdmissible(*pods, *alloc, resource, available)) return Annotated(*pods, *alloc);
    if (std::chrono::steady_clock::now() >= deadline) {
      PHX_LOG_DEBUG(logger_, "No pod on the node can be the one kubelet admits; the pod watch may be behind",
                    kv("resource", resource), kv("waited_ms", options_.pod_wait.count()));
      return Annotated(*pods, *alloc);
    }
    pods_.WaitForChange(seen, deadline);
  }
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

Result<std::string> Publisher::StateDocument() {
  auto alloc = std::make_shared<Allocations>();
  if (pod_resources_ != nullptr) {
    auto listed = pod_resources_->List(resource_names_);
    if (!listed.ok()) return listed.status();
    *alloc = std::move(listed).value();
  }
  if (!pods_.Synced()) return UnavailableError("the node's pods are not listed yet");
  const PodCache::Snapshot pods = pods_.Pods();
  std::map<std::string, std::string> uid_of;  // "ns/name" -> uid
  for (const auto& p : *pods) uid_of[p.ns + "/" + p.name] = p.uid;
  std::map<std::string, std::string> device_to_uid;
  for (const auto& [id, key] : alloc->by_device) {
    auto it = uid_of.find(key.ns + "/" + key.name);
    // A pod kubelet still reports but the API no longer has is gone: the device is free.
    if (it != uid_of.end()) device_to_uid[id] = it->second;
  }
  CountMismatches(*pods, *alloc);
  {
    std::lock_guard<std::mutex> lock(mu_);
    allocations_ = std::move(alloc);
  }
  std::shared_ptr<const UsageSummaries> usage = options_.usage ? options_.usage() : nullptr;
  return GpuStateDocument(resources_, health_, device_to_uid, usage ? *usage : UsageSummaries{}).dump();
}

Status Publisher::PublishOnce() {
  // Labels and topology first: they need neither kubelet nor the pod list.
  std::string topo_doc;
  if (topology_) {
    auto encoded = topology::EncodeTopology(WithHealth(*topology_, health_));
    if (encoded.ok()) {
      topo_doc = std::move(encoded).value();
    } else {
      PHX_LOG_WARN(logger_, "Failed to encode the GPU topology; not publishing it", kv("err", encoded.status()));
    }
  }
  const auto labels = topology_ ? NodeLabels(*topology_, mig_capable_) : std::map<std::string, std::string>{};
  const std::string labels_text = nlohmann::json(labels).dump();
  auto state = StateDocument();
  const std::string state_doc = state.ok() ? *state : std::string();

  // Only the parts whose content changed since the last write.
  std::map<std::string, std::string> send_labels;
  std::string send_topology, send_state;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (labels_text != written_labels_) send_labels = labels;
    if (topo_doc != written_topology_) send_topology = topo_doc;
    if (!state_doc.empty() && state_doc != written_state_) send_state = state_doc;
  }
  Status write = OkStatus();
  if (!send_labels.empty() || !send_topology.empty() || !send_state.empty()) {
    write = api_.PatchNode(options_.node_name, NodePatch(send_labels, send_topology, send_state));
    if (metrics_) metrics_->Inc(metrics_->publish_writes, {write.ok() ? "ok" : "error"});
    if (!write.ok()) write = write.WithContext(fmt::format("patch node {}", options_.node_name));
  }

  const Status status = !write.ok() ? write : state.ok() ? OkStatus() : state.status();
  std::lock_guard<std::mutex> lock(mu_);
  write_failed_ = !write.ok();
  if (write.ok() && (!send_labels.empty() || !send_topology.empty() || !send_state.empty())) {
    written_labels_ = labels_text;
    if (!send_topology.empty()) written_topology_ = send_topology;
    if (!send_state.empty()) written_state_ = send_state;
    ++writes_;
  }
  if (status.ok()) {
    if (!degraded_.empty()) PHX_LOG_INFO(logger_, "Published node GPU state", kv("node", options_.node_name));
    degraded_.clear();
  } else {
    const std::string reason = "publishing degraded: " + status.message();
    if (degraded_ != reason) {
      PHX_LOG_WARN(logger_, "Failed to publish node GPU state, will retry", kv("node", options_.node_name),
                   kv("err", status), kv("topology_published", !written_topology_.empty()));
    }
    degraded_ = reason;
  }
  return status;
}

}  // namespace phalanx::device_plugin
