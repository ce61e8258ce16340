#include "tests/e2e/drivers/kubelet_driver.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "tests/e2e/drivers/pod_facts.h"
#include "tests/e2e/drivers/time_format.h"

namespace phalanx::e2e {
namespace {

using kube::Json;
using kube::resources::kNodes;
using kube::resources::kPods;
constexpr std::chrono::seconds kRpcTimeout{10};

Json ContainerNames(const Json& pod) {
  Json names = Json::array();
  for (const auto& c : pod["spec"]["containers"]) names.push_back(c.value("name", ""));
  return names;
}

}  // namespace

KubeletDriver::KubeletDriver(KubeletDriverOptions options, fake_kubelet::FakeKubelet& kubelet,
                             kube::KubeClient& client)
    : options_(std::move(options)), kubelet_(kubelet), client_(client) {}

KubeletDriver::~KubeletDriver() { Stop(); }

void KubeletDriver::Start() {
  stop_ = false;
  thread_ = std::thread([this] { Loop(); });
}

void KubeletDriver::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

std::optional<Allocation> KubeletDriver::AllocationOf(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [uid, state] : pods_) {
    if (state.key == key) return state.allocation;
  }
  return std::nullopt;
}

std::vector<std::string> KubeletDriver::errors() const {
  std::lock_guard<std::mutex> lock(mu_);
  return errors_;
}

void KubeletDriver::Error(std::string message) {
  std::lock_guard<std::mutex> lock(mu_);
  errors_.push_back(options_.node_name + ": " + std::move(message));
}

void KubeletDriver::Loop() {
  while (!stop_) {
    SyncOnce();
    const auto until = std::chrono::steady_clock::now() + options_.poll;
    while (!stop_ && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
}

void KubeletDriver::SyncOnce() {
  SyncNodeStatus();
  kube::ListOptions list;
  list.field_selector = "spec.nodeName=" + options_.node_name;
  auto pods = client_.List(kPods, "", list);
  if (!pods.ok()) return Error("list pods: " + pods.status().message());
  std::set<std::string> seen;
  // Kubelet admits pods in the order they arrived (its watch's order, i.e. the Bindings' commit
  // order); a pod not modified since its Binding still has that Binding's resourceVersion.
  std::vector<Json> items((*pods)["items"].begin(), (*pods)["items"].end());
  const auto version = [](const Json& pod) {
    const std::string rv = Str(pod, "metadata", "resourceVersion");
    return rv.empty() || rv.find_first_not_of("0123456789") != std::string::npos || rv.size() > 18 ? 0ull
                                                                                                   : std::stoull(rv);
  };
  std::stable_sort(items.begin(), items.end(), [&](const Json& a, const Json& b) { return version(a) < version(b); });
  for (const auto& pod : items) {
    const std::string uid = Uid(pod);
    seen.insert(uid);
    bool known = false, terminated = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = pods_.find(uid);
      known = it != pods_.end();
      terminated = known && it->second.terminated;
    }
    if (Terminating(pod)) {
      if (!terminated) Terminate(pod);
      continue;
    }
    if (!known && !Finished(pod)) Admit(pod);
  }
  std::lock_guard<std::mutex> lock(mu_);
  bool changed = false;
  for (auto it = pods_.begin(); it != pods_.end();) {
    if (seen.count(it->first) == 0) {
      it = pods_.erase(it);
      changed = true;
    } else {
      ++it;
    }
  }
  if (changed) PublishPodResources();
}

void KubeletDriver::Admit(const Json& pod) {
  const std::string key = Key(pod), uid = Uid(pod);
  PodState state;
  state.key = key;
  state.uid = uid;
  state.allocation.pod_uid = uid;
  for (const auto& container : pod["spec"]["containers"]) {
    const int64_t n = ContainerGpus(container);
    if (n == 0) continue;
    const std::string cname = container.value("name", "");
    fake_kubelet::DevicePluginClient* plugin = kubelet_.Plugin(kGpuResource);
    if (plugin == nullptr) return;  // not registered (yet): kubelet would wait too
    std::vector<std::string> available;
    {
      std::lock_guard<std::mutex> lock(mu_);
      std::set<std::string> held;
      for (const auto& [u, s] : pods_) {
        if (s.terminated) continue;
        for (const auto& [c, ids] : s.allocation.devices) held.insert(ids.begin(), ids.end());
      }
      for (const auto& [c, ids] : state.allocation.devices) held.insert(ids.begin(), ids.end());
      for (const auto& d : plugin->devices()) {
        if (d.health() == "Healthy" && held.count(d.id()) == 0) available.push_back(d.id());
      }
    }
    if (static_cast<int64_t>(available.size()) < n) {
      Json status = {{"status",
                      {{"phase", "Failed"},
                       {"reason", "UnexpectedAdmissionError"},
                       {"message", fmt::format("Allocate failed due to requested number of devices unavailable "
                                               "for {}. Requested: {}, Available: {}",
                                               kGpuResource, n, available.size())}}}};
      auto r = client_.Patch(kPods, Namespace(pod), Name(pod), kube::PatchType::kMerge, status,
                             kube::PatchOptions{.subresource = "status"});
      if (!r.ok()) Error("admission failure status: " + r.status().message());
      std::lock_guard<std::mutex> lock(mu_);
      state.terminated = true;
      pods_[uid] = state;
      return;
    }
    std::vector<std::string> chosen;
    if (plugin->options().get_preferred_allocation_available()) {
      v1beta1::PreferredAllocationRequest request;
      auto* cr = request.add_container_requests();
      for (const auto& id : available) cr->add_available_deviceids(id);
      cr->set_allocation_size(static_cast<int32_t>(n));
      auto preferred = plugin->GetPreferredAllocation(request, kRpcTimeout);
      if (!preferred.ok()) return Error("GetPreferredAllocation " + key + ": " + preferred.status().message());
      if (preferred->container_responses_size() == 1) {
        for (const auto& id : preferred->container_responses(0).deviceids()) chosen.push_back(id);
      }
      state.allocation.preferred_allocation_used = true;
    }
    if (static_cast<int64_t>(chosen.size()) != n) {  // no preference: kubelet takes any n
      chosen.assign(available.begin(), available.begin() + n);
    }
    v1beta1::AllocateRequest request;
    auto* cr = request.add_container_requests();
    for (const auto& id : chosen) cr->add_devices_ids(id);
    auto allocated = plugin->Allocate(request, kRpcTimeout);
    if (!allocated.ok()) return Error("Allocate " + key + ": " + allocated.status().message());
    if (allocated->container_responses_size() == 1) {
      const auto& envs = allocated->container_responses(0).envs();
      auto it = envs.find("NVIDIA_VISIBLE_DEVICES");
      if (it != envs.end()) state.allocation.visible_devices[cname] = it->second;
    }
    state.allocation.devices[cname] = chosen;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    pods_[uid] = state;
    PublishPodResources();
  }
  auto r = client_.Patch(kPods, Namespace(pod), Name(pod), kube::PatchType::kMerge,
                         Json{{"status", RunningStatus(pod)}}, kube::PatchOptions{.subresource = "status"});
  if (!r.ok()) Error("running status " + key + ": " + r.status().message());
}

Json KubeletDriver::RunningStatus(const Json& pod) const {
  const std::string now = NowRfc3339();
  Json statuses = Json::array();
  for (const auto& name : ContainerNames(pod)) {
    statuses.push_back({{"name", name},
                        {"ready", true},
                        {"started", true},
                        {"restartCount", 0},
                        {"image", "trainer"},
                        {"state", {{"running", {{"startedAt", now}}}}}});
  }
  return {{"phase", "Running"},
          {"startTime", now},
          {"hostIP", "10.0.0.1"},
          {"podIP", "10.1.0.1"},
          {"conditions", Json::array({{{"type", "Ready"}, {"status", "True"}, {"lastTransitionTime", now}},
                                      {{"type", "ContainersReady"}, {"status", "True"}, {"lastTransitionTime", now}},
                                      {{"type", "Initialized"}, {"status", "True"}, {"lastTransitionTime", now}}})},
          {"containerStatuses", statuses}};
}

Status KubeletDriver::Finish(const std::string& ns, const std::string& name, int exit_code,
                             const std::string& message) {
  auto pod = client_.Get(kPods, ns, name);
  if (!pod.ok()) return pod.status();
  const std::string now = NowRfc3339();
  Json statuses = Json::array();
  for (const auto& cname : ContainerNames(*pod)) {
    statuses.push_back({{"name", cname},
                        {"ready", false},
                        {"started", false},
                        {"restartCount", 0},
                        {"image", "trainer"},
                        {"state",
                         {{"terminated",
                           {{"exitCode", exit_code},
                            {"reason", exit_code == 0 ? "Completed" : "Error"},
                            {"message", message},
                            {"startedAt", now},
                            {"finishedAt", now}}}}}});
  }
  Json status = {{"status", {{"phase", exit_code == 0 ? "Succeeded" : "Failed"}, {"containerStatuses", statuses}}}};
  auto r = client_.Patch(kube::resources::kPods, ns, name, kube::PatchType::kMerge, status,
                         kube::PatchOptions{.subresource = "status"});
  if (!r.ok()) return r.status();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pods_.find(Uid(*pod));
  if (it != pods_.end()) {
    it->second.terminated = true;
    PublishPodResources();
  }
  return OkStatus();
}

void KubeletDriver::Terminate(const Json& pod) {
  const std::string key = Key(pod), uid = Uid(pod);
  std::string message;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++terminations_;
    message = options_.termination_message
                  ? options_.termination_message(pod)
                  : fmt::format(R"({{"step":{},"path":"/ckpt/{}/step-{}","committed":true}})", 100 + terminations_,
                                Name(pod), 100 + terminations_);
  }
  if (!Finished(pod)) {
    const std::string now = NowRfc3339();
    Json statuses = Json::array();
    for (const auto& cname : ContainerNames(pod)) {
      statuses.push_back({{"name", cname},
                          {"ready", false},
                          {"started", false},
                          {"restartCount", 0},
                          {"image", "trainer"},
                          {"state",
                           {{"terminated",
                             {{"exitCode", 143}, {"reason", "Error"}, {"message", message},
                              {"startedAt", now}, {"finishedAt", now}}}}}});
    }
    auto r = client_.Patch(kPods, Namespace(pod), Name(pod), kube::PatchType::kMerge,
                           Json{{"status", {{"phase", "Failed"}, {"containerStatuses", statuses}}}},
                           kube::PatchOptions{.subresource = "status"});
    if (!r.ok()) return Error("terminated status " + key + ": " + r.status().message());
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    PodState& state = pods_[uid];
    state.key = key;
    state.uid = uid;
    state.terminated = true;
    PublishPodResources();
  }
  kube::DeleteOptions gone;
  gone.grace_period_seconds = 0;
  gone.precondition_uid = uid;
  auto r = client_.Delete(kPods, Namespace(pod), Name(pod), gone);
  if (!r.ok() && !IsNotFound(r.status())) Error("delete " + key + ": " + r.status().message());
}

void KubeletDriver::PublishPodResources() {
  std::vector<v1::PodResources> list;
  for (const auto& [uid, state] : pods_) {
    if (state.terminated) continue;
    for (const auto& [container, ids] : state.allocation.devices) {
      const auto slash = state.key.find('/');
      list.push_back(fake_kubelet::FakePodResources::MakePod(state.key.substr(0, slash), state.key.substr(slash + 1),
                                                             container, kGpuResource, ids));
    }
  }
  kubelet_.pod_resources().SetPods(std::move(list));
}

void KubeletDriver::SyncNodeStatus() {
  fake_kubelet::DevicePluginClient* plugin = kubelet_.Plugin(kGpuResource);
  if (plugin == nullptr) return;
  const auto devices = plugin->devices();
  const int64_t capacity = static_cast<int64_t>(devices.size());
  const int64_t healthy = std::count_if(devices.begin(), devices.end(),
                                        [](const v1beta1::Device& d) { return d.health() == "Healthy"; });
  if (capacity == published_capacity_ && healthy == published_allocatable_) return;
  Json patch = {{"status",
                 {{"capacity", {{kGpuResource, std::to_string(capacity)}}},
                  {"allocatable", {{kGpuResource, std::to_string(healthy)}}}}}};
  auto r = client_.Patch(kNodes, "", options_.node_name, kube::PatchType::kMerge, patch,
                         kube::PatchOptions{.subresource = "status"});
  if (!r.ok()) return Error("node status: " + r.status().message());
  published_capacity_ = capacity;
  published_allocatable_ = healthy;
}

}  // namespace phalanx::e2e
