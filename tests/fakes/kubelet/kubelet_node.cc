#include "tests/fakes/kubelet/kubelet_node.h"

#include <fmt/format.h>

#include "core/kube/resource.h"

namespace phalanx::fake_kubelet {
namespace {

using kube::Json;

std::string Meta(const Json& o, const char* field) {
  auto m = o.find("metadata");
  if (m == o.end() || !m->is_object()) return "";
  auto f = m->find(field);
  return f != m->end() && f->is_string() ? f->get<std::string>() : "";
}

int CountOf(const Json& q) {
  if (q.is_number_integer()) return q.get<int>();
  if (!q.is_string()) return 0;
  try {
    return std::stoi(q.get<std::string>());
  } catch (...) {
    return 0;
  }
}

// The extended-resource requests of the pod's containers (limits, else requests).
PodSpec SpecOf(const Json& pod) {
  PodSpec spec{.ns = Meta(pod, "namespace"), .name = Meta(pod, "name"), .uid = Meta(pod, "uid")};
  const Json& s = pod.contains("spec") ? pod["spec"] : Json::object();
  for (const char* list : {"initContainers", "containers"}) {
    if (!s.contains(list) || !s[list].is_array()) continue;
    for (const Json& c : s[list]) {
      ContainerSpec cs{.name = c.value("name", ""), .init = std::string(list) == "initContainers"};
      if (c.contains("resources")) {
        for (const char* kind : {"requests", "limits"}) {
          if (!c["resources"].contains(kind)) continue;
          for (const auto& [name, q] : c["resources"][kind].items()) {
            if (name.find('/') != std::string::npos && CountOf(q) > 0) cs.requests[name] = CountOf(q);
          }
        }
      }
      spec.containers.push_back(std::move(cs));
    }
  }
  return spec;
}

}  // namespace

KubeletNode::KubeletNode(KubeletNodeOptions options, FakeKubelet& kubelet, kube::KubeClient& client)
    : options_(std::move(options)), kubelet_(kubelet), client_(client) {
  kube::InformerOptions o;
  o.resource = kube::resources::kPods;
  o.field_selector = "spec.nodeName=" + options_.node_name;
  o.name = "kubelet pods on " + options_.node_name;
  informer_ = std::make_unique<kube::JsonInformer>(client_, o, kube::JsonIdentity());
  informer_->AddHandlers({
      .on_add =
          [this](const Json& pod) {
            const std::string phase = pod.contains("status") ? pod["status"].value("phase", "") : "";
            if (phase == "Succeeded" || phase == "Failed") return;
            std::lock_guard<std::mutex> lock(mu_);
            arrivals_.push_back(pod);  // the watch's order is the admission order
            cv_.notify_all();
          },
      .on_update = nullptr,
      .on_delete = [this](const Json& pod) { kubelet_.devices().Release(Meta(pod, "uid")); },
  });
}

KubeletNode::~KubeletNode() { Stop(); }

void KubeletNode::Start() {
  informer_->Start();
  admit_thread_ = std::thread([this] { AdmitLoop(); });
  status_thread_ = std::thread([this] { StatusLoop(); });
}

void KubeletNode::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_ && !admit_thread_.joinable()) return;
    stop_ = true;
  }
  cv_.notify_all();
  informer_->Stop();
  if (admit_thread_.joinable()) admit_thread_.join();
  if (status_thread_.joinable()) status_thread_.join();
}

void KubeletNode::Hold() {
  std::lock_guard<std::mutex> lock(mu_);
  held_ = true;
}

void KubeletNode::Release() {
  std::lock_guard<std::mutex> lock(mu_);
  held_ = false;
  cv_.notify_all();
}

size_t KubeletNode::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return arrivals_.size();
}

void KubeletNode::AdmitLoop() {
  for (;;) {
    Json pod;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || (!held_ && !arrivals_.empty()); });
      if (stop_) return;
      pod = std::move(arrivals_.front());
      arrivals_.pop_front();
    }
    const PodSpec spec = SpecOf(pod);
    const std::string key = spec.ns + "/" + spec.name;
    auto admitted = kubelet_.devices().Admit(spec);
    Json status;
    if (admitted.ok()) {
      status = {{"status", {{"phase", "Running"}}}};
    } else {
      status = {{"status",
                 {{"phase", "Failed"}, {"reason", "UnexpectedAdmissionError"}, {"message", admitted.status().message()}}}};
    }
    (void)client_.Patch(kube::resources::kPods, spec.ns, spec.name, kube::PatchType::kMerge, status,
                        kube::PatchOptions{.subresource = "status"});
    std::lock_guard<std::mutex> lock(mu_);
    admitted_.push_back(key);
    if (!admitted.ok()) rejected_[key] = admitted.status().message();
    cv_.notify_all();
  }
}

void KubeletNode::StatusLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    lock.unlock();
    PostStatus();
    lock.lock();
    cv_.wait_for(lock, options_.status_interval, [this] { return stop_; });
  }
}

void KubeletNode::PostStatus() {
  std::map<std::string, std::pair<int, int>> now;  // resource -> capacity, allocatable
  for (const auto& r : kubelet_.registrations()) {
    if (r.result.ok()) checkpointed_.insert(r.request.resource_name());
  }
  for (const auto& resource : checkpointed_) {
    DevicePluginClient* plugin = kubelet_.Plugin(resource);
    if (plugin == nullptr) {
      now[resource] = {0, 0};  // checkpointed, not registered again yet
      continue;
    }
    int healthy = 0;
    const auto devices = plugin->devices();
    for (const auto& d : devices) healthy += d.health() == "Healthy";
    now[resource] = {static_cast<int>(devices.size()), healthy};
  }
  if (now.empty() || now == last_posted_) return;
  Json capacity = Json::object(), allocatable = Json::object();
  for (const auto& [resource, c] : now) {
    capacity[resource] = std::to_string(c.first);
    allocatable[resource] = std::to_string(c.second);
  }
  auto r = client_.Patch(kube::resources::kNodes, "", options_.node_name, kube::PatchType::kMerge,
                         Json{{"status", {{"capacity", capacity}, {"allocatable", allocatable}}}},
                         kube::PatchOptions{.subresource = "status"});
  if (!r.ok()) return;
  last_posted_ = now;
  std::lock_guard<std::mutex> lock(mu_);
  posted_.push_back(now);
}

std::vector<std::string> KubeletNode::admission_order() const {
  std::lock_guard<std::mutex> lock(mu_);
  return admitted_;
}

std::string KubeletNode::rejection(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = rejected_.find(key);
  return it == rejected_.end() ? "" : it->second;
}

::testing::AssertionResult KubeletNode::WaitForAdmissions(size_t n, std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  if (cv_.wait_for(lock, timeout, [&] { return admitted_.size() >= n; })) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << options_.node_name << ": wanted " << n << " admissions within "
                                       << timeout.count() << " ms, got " << admitted_.size();
}

std::vector<std::map<std::string, std::pair<int, int>>> KubeletNode::posted_statuses() const {
  std::lock_guard<std::mutex> lock(mu_);
  return posted_;
}

}  // namespace phalanx::fake_kubelet
