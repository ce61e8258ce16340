#include "device-plugin/publish/node_events.h"

#include <map>

#include <fmt/format.h>

namespace phalanx::device_plugin {
namespace {

kube::ObjectReference NodeRef(const std::string& node) {
  kube::ObjectReference r;
  r.api_version = "v1";
  r.kind = "Node";
  r.name = node;
  r.uid = node;
  return r;
}

kube::EventRecorderOptions ForNode(kube::EventRecorderOptions o, const std::string& node) {
  o.reporting_controller = "phalanx.io/device-plugin";
  o.reporting_instance = "phalanx-device-plugin-" + node;
  return o;
}

}  // namespace

NodeEvents::NodeEvents(kube::KubeClient& client, const std::string& node, HealthTable& health,
                       kube::EventRecorderOptions options)
    : health_(health), node_(NodeRef(node)), recorder_(client, ForNode(std::move(options), node)) {}

NodeEvents::~NodeEvents() { Stop(); }

void NodeEvents::Start() {
  recorder_.Start();
  subscription_ = health_.Subscribe([this] { OnHealthChange(); });
  OnHealthChange();
}

void NodeEvents::Stop() {
  if (subscription_ != 0) {
    health_.Unsubscribe(subscription_);
    subscription_ = 0;
  }
  recorder_.Stop();
}

void NodeEvents::OnHealthChange() {
  const auto now = health_.Unhealthy();
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [uuid, h] : now) {
    auto it = unhealthy_.find(uuid);
    // A new reason (another XID) on a device already unhealthy is news too.
    if (it == unhealthy_.end() || it->second.reason != h.reason) {
      recorder_.Record(node_, "Warning", "GpuUnhealthy", "HealthCheck", fmt::format("{}: {}", uuid, h.reason));
    }
  }
  for (const auto& [uuid, h] : unhealthy_) {
    if (!now.count(uuid)) {
      recorder_.Record(node_, "Normal", "GpuRecovered", "HealthCheck", fmt::format("{} is healthy again", uuid));
    }
  }
  unhealthy_ = now;
}

void NodeEvents::Registration(const std::string& resource, size_t devices, const Status& result) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, first] = registration_ok_.try_emplace(resource, result.ok());
  if (result.ok()) {
    recorder_.Record(node_, "Normal", "Registered", "Register",
                     fmt::format("Registered {} ({} devices) with kubelet", resource, devices));
  } else if (first || it->second) {
    recorder_.Record(node_, "Warning", "RegistrationFailed", "Register",
                     fmt::format("{}: {}", resource, result.message()));
  }
  it->second = result.ok();
}

void NodeEvents::PodEvent(const std::string& ns, const std::string& name, const std::string& uid,
                          const std::string& type, const std::string& reason, const std::string& note) {
  kube::ObjectReference pod;
  pod.api_version = "v1";
  pod.kind = "Pod";
  pod.ns = ns;
  pod.name = name;
  pod.uid = uid;
  recorder_.Record(pod, type, reason, "MeasureUtilisation", note);
}

}  // namespace phalanx::device_plugin

namespace phalanx::device_plugin {

void NodeEvents::PlanMiss(const std::string& resource, const struct PlanMiss& m) {
  const auto join = [](const std::vector<std::string>& ids) {
    std::string out;
    for (const auto& id : ids) out += (out.empty() ? "" : ",") + id;
    return out.empty() ? std::string("none") : out;
  };
  static const std::map<std::string, std::string> kWhy = {
      {"unavailable", "planned devices are not available"},
      {"size", "the plan names another number of devices than the container requests"},
      {"must_include", "kubelet requires devices outside the plan"},
      {"not_planned", "phalanx.io/devices has no plan for this container"},
      {"kubelet_chose_other", "kubelet allocated other devices than the plan"},
  };
  auto why = kWhy.find(m.reason);
  const auto slash = m.pod.find('/');
  kube::ObjectReference pod;
  pod.api_version = "v1";
  pod.kind = "Pod";
  pod.ns = m.pod.substr(0, slash);
  pod.name = slash == std::string::npos ? m.pod : m.pod.substr(slash + 1);
  pod.uid = m.uid;
  recorder_.Record(pod, "Warning", "GpuPlanNotHonoured", "Allocate",
           fmt::format("{}container {} got {} {} instead of the planned {} ({}){}", m.gang ? "gang member: " : "",
                       m.container, resource, join(m.given), join(m.planned),
                       why == kWhy.end() ? m.reason : why->second,
                       m.gang ? "; the gang's topology plan is not met" : ""));
}

}  // namespace phalanx::device_plugin
