#include "device-plugin/publish/publisher.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/log/log.h"
#include "core/topology/topology_codec.h"
#include "device-plugin/publish/node_state.h"

namespace phalanx::device_plugin {
namespace {

constexpr std::string_view kPodsNotListed = "the node's pods are not listed yet";

}  // namespace

Result<std::map<std::string, std::vector<std::string>>> ParseDevicePlan(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return InvalidArgumentError("phalanx.io/devices: expected {\"<container>\": [ids]}");
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& [container, ids] : j.items()) {
    if (!ids.is_array()) return InvalidArgumentError(fmt::format("phalanx.io/devices.{}: expected a list", container));
    auto& mine = out[container];
    for (const auto& id : ids) {
      if (!id.is_string()) return InvalidArgumentError(fmt::format("phalanx.io/devices.{}: expected strings", container));
      mine.push_back(id.get<std::string>());
    }
  }
  return out;
}

Result<std::vector<std::string>> ParseDevicesAnnotation(const std::string& text) {
  PHX_ASSIGN_OR_RETURN(auto plan, ParseDevicePlan(text));
  std::vector<std::string> out;
  for (const auto& [container, ids] : plan) out.insert(out.end(), ids.begin(), ids.end());
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

PendingPodSource::View Publisher::PendingPods(const std::string& resource) {
  std::shared_ptr<const Allocations> alloc;
  {
    std::lock_guard<std::mutex> lock(mu_);
    alloc = allocations_;
  }
  View view;
  view.version = pods_.version();  // before the snapshot: a change after it wakes WaitForChange
  view.synced = pods_.Synced();
  const PodCache::Snapshot pods = pods_.Pods();
  const ResourceSpec* spec = nullptr;
  for (const auto& r : resources_) {
    if (r.name == resource) spec = &r;
  }
  for (const auto& p : *pods) {
    if (p.deleting || !(p.phase.empty() || p.phase == "Pending")) continue;
    PendingPod pending{.key = p.ns + "/" + p.name, .uid = p.uid, .gang = !p.gang.empty()};
    std::map<std::string, std::vector<std::string>> plan;
    if (!p.devices_annotation.empty()) {
      if (auto parsed = ParseDevicePlan(p.devices_annotation); parsed.ok()) plan = std::move(*parsed);
    }
    // Planned for this resource: the annotation names one of its devices (a plan in another
    // plugin's IDs, e.g. GPU UUIDs for time-sliced replicas, is not one to miss).
    for (const auto& [container, ids] : plan) {
      for (const auto& id : ids) pending.annotated = pending.annotated || (spec != nullptr && spec->Find(id) != nullptr);
    }
    const auto held = alloc->by_container.find(PodKey{p.ns, p.name});
    for (const auto& c : p.containers) {
      auto count = c.counts.find(resource);
      if (count == c.counts.end()) continue;
      if (held != alloc->by_container.end() && spec != nullptr) {
        auto mine = held->second.find(c.name);
        const bool holds = mine != held->second.end() &&
                           std::any_of(mine->second.begin(), mine->second.end(),
                                       [&](const std::string& id) { return spec->Find(id) != nullptr; });
        if (holds) continue;  // admitted already
      }
      PendingContainer pc{.name = c.name, .count = count->second};
      if (auto it = plan.find(c.name); it != plan.end()) {
        for (const auto& id : it->second) {
          if (spec == nullptr || spec->Find(id) != nullptr) pc.plan.push_back(id);
        }
        pc.planned = !pc.plan.empty();
      }
      pending.containers.push_back(std::move(pc));
    }
    if (!pending.containers.empty()) view.pods.push_back(std::move(pending));
  }
  return view;
}

bool Publisher::WaitForChange(uint64_t version, std::chrono::steady_clock::time_point deadline) {
  return pods_.WaitForChange(version, deadline);
}

void Publisher::CountMismatches(const std::vector<PodOnNode>& pods, const Allocations& alloc) {
  for (const auto& p : pods) {
    if (p.devices_annotation.empty()) continue;
    auto held = alloc.by_container.find(PodKey{p.ns, p.name});
    if (held == alloc.by_container.end()) continue;
    auto plan = ParseDevicePlan(p.devices_annotation);
    if (!plan.ok()) continue;
    bool differs = false;
    std::string resource;  // the resource of the planned devices, for the metric label
    for (const auto& [container, ids] : *plan) {
      std::set<std::string> mine;  // the planned IDs this plugin advertises
      for (const auto& id : ids) {
        for (const auto& r : resources_) {
          if (r.Find(id) == nullptr) continue;
          mine.insert(id);
          if (resource.empty()) resource = r.name;
        }
      }
      if (mine.empty()) continue;  // another plugin's devices
      std::set<std::string> got;
      if (auto c = held->second.find(container); c != held->second.end()) {
        for (const auto& id : c->second) {
          for (const auto& r : resources_) {
            if (r.Find(id) != nullptr) got.insert(id);
          }
        }
      }
      // Per container: the same devices under another container of the pod is a difference.
      if (got != mine) differs = true;
    }
    if (resource.empty()) continue;
    std::lock_guard<std::mutex> lock(mu_);
    if (differs && mismatched_.insert(p.uid).second) {
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
  if (!pods_.Synced()) return UnavailableError(std::string(kPodsNotListed));
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
  // Before the pod watch's first list the state simply waits (/readyz says so); not a failure.
  const bool waiting_for_pods = write.ok() && !state.ok() && state.status().message() == kPodsNotListed;
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
    if (degraded_ != reason && waiting_for_pods) {
      PHX_LOG_DEBUG(logger_, "Waiting for the node's pod list before publishing the GPU state",
                    kv("node", options_.node_name));
    } else if (degraded_ != reason) {
      PHX_LOG_WARN(logger_, "Failed to publish node GPU state, will retry", kv("node", options_.node_name),
                   kv("err", status), kv("topology_published", !written_topology_.empty()));
    }
    degraded_ = reason;
  }
  return status;
}

}  // namespace phalanx::device_plugin
