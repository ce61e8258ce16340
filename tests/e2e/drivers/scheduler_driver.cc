#include "tests/e2e/drivers/scheduler_driver.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/json/json.h"
#include "core/kube/cpprest_transport.h"
#include "tests/e2e/drivers/pod_facts.h"
#include "tests/e2e/drivers/time_format.h"

namespace phalanx::e2e {
namespace {

using kube::Json;
using kube::resources::kNodes;
using kube::resources::kPods;

// GPUs in use on each node by bound pods that still hold them.
std::map<std::string, int64_t> UsedGpus(const Json& pods) {
  std::map<std::string, int64_t> used;
  for (const auto& p : pods["items"]) {
    if (HoldsNodeResources(p)) used[NodeName(p)] += PodGpus(p);
  }
  return used;
}

std::string CreationTime(const Json& pod) { return Str(pod, "metadata", "creationTimestamp"); }

}  // namespace

SchedulerDriver::SchedulerDriver(SchedulerDriverOptions options, kube::KubeClient& client)
    : options_(std::move(options)), client_(client), extender_url_(options_.extender_url), queue_(options_.queue) {}

SchedulerDriver::~SchedulerDriver() { Stop(); }

void SchedulerDriver::Start() {
  stop_ = false;
  thread_ = std::thread([this] { Loop(); });
}

void SchedulerDriver::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  std::vector<std::future<void>> binds;
  {
    std::lock_guard<std::mutex> lock(mu_);
    binds.swap(binds_);
  }
  for (auto& b : binds) b.wait();
}

void SchedulerDriver::SetExtenderUrl(std::string url) {
  std::lock_guard<std::mutex> lock(mu_);
  extender_url_ = std::move(url);
}

void SchedulerDriver::Hold(std::string label, std::string value) {
  std::lock_guard<std::mutex> lock(mu_);
  hold_label_ = std::move(label);
  hold_value_ = std::move(value);
}

void SchedulerDriver::Release() { Hold("", ""); }

std::vector<ExtenderCall> SchedulerDriver::calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_;
}

std::vector<std::string> SchedulerDriver::errors() const {
  std::lock_guard<std::mutex> lock(mu_);
  return errors_;
}

std::vector<std::string> SchedulerDriver::queue_events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.events();
}

void SchedulerDriver::AttemptFailed(const std::string& uid) {
  std::lock_guard<std::mutex> lock(mu_);
  if (options_.kube_scheduler_queue) {
    queue_.Failed(uid, std::chrono::steady_clock::now());
  } else {
    retry_after_[uid] = std::chrono::steady_clock::now() + options_.retry_unschedulable;
  }
}

std::vector<std::string> SchedulerDriver::victims() const {
  std::lock_guard<std::mutex> lock(mu_);
  return victims_;
}

void SchedulerDriver::Error(std::string message) {
  std::lock_guard<std::mutex> lock(mu_);
  errors_.push_back(std::move(message));
}

void SchedulerDriver::Loop() {
  while (!stop_) {
    ScheduleOnce();
    const auto until = std::chrono::steady_clock::now() + options_.poll;
    while (!stop_ && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
}

void SchedulerDriver::ScheduleOnce() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    binds_.erase(std::remove_if(binds_.begin(), binds_.end(),
                                [](std::future<void>& f) {
                                  return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
                                }),
                 binds_.end());
  }
  auto nodes = client_.List(kNodes, "");
  auto pods = client_.List(kPods, "");
  if (!nodes.ok() || !pods.ok()) {
    return Error("list: " + (nodes.ok() ? pods.status() : nodes.status()).message());
  }
  std::vector<const Json*> queue;
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& p : (*pods)["items"]) {
      if (Str(p, "spec", "schedulerName") != options_.scheduler_name) continue;
      if (!NodeName(p).empty() || Terminating(p) || Finished(p)) continue;
      if (options_.respect_scheduling_gates && Gated(p)) continue;
      if (!hold_label_.empty() && Label(p, hold_label_) == hold_value_) continue;
      if (options_.kube_scheduler_queue) {
        queue.push_back(&p);  // the model decides (assumed pods included: it tracks their binds)
        continue;
      }
      if (assumed_.count(Uid(p))) continue;
      auto r = retry_after_.find(Uid(p));
      if (r != retry_after_.end() && now < r->second) continue;
      queue.push_back(&p);
    }
    if (options_.kube_scheduler_queue) {
      queue_.Observe(queue, *nodes, *pods, now);
      std::map<std::string, const Json*> by_uid;
      for (const Json* p : queue) by_uid[Uid(*p)] = p;
      queue.clear();
      for (const auto& uid : queue_.PopReady(now)) queue.push_back(by_uid.at(uid));
    }
    // Forget assumptions the API server now reflects (bound) or that vanished.
    for (auto it = assumed_.begin(); it != assumed_.end();) {
      bool pending = false;
      for (const auto& p : (*pods)["items"]) {
        if (Uid(p) == it->first) pending = NodeName(p).empty() && !Terminating(p);
      }
      it = pending ? std::next(it) : assumed_.erase(it);
    }
  }
  if (!options_.kube_scheduler_queue) std::stable_sort(queue.begin(), queue.end(), [](const Json* a, const Json* b) {
    if (Priority(*a) != Priority(*b)) return Priority(*a) > Priority(*b);
    return CreationTime(*a) < CreationTime(*b);
  });
  for (const Json* pod : queue) {
    if (stop_) return;
    TrySchedule(*pod, *nodes, *pods);
  }
}

void SchedulerDriver::TrySchedule(const Json& pod, const Json& nodes, const Json& pods) {
  const std::string key = Key(pod), uid = Uid(pod);
  const int64_t want = PodGpus(pod);
  auto used = UsedGpus(pods);
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [u, a] : assumed_) used[a.node] += a.gpus;
  }
  // Nominated pods (preemptors waiting for their victims to go) of at least this pod's priority
  // keep their GPUs on the nominated node, as kube-scheduler's filters with nominated pods do.
  for (const auto& p : pods["items"]) {
    if (Uid(p) == uid || !NodeName(p).empty() || Terminating(p) || Finished(p)) continue;
    const std::string nominated = p.contains("status") ? p["status"].value("nominatedNodeName", std::string()) : "";
    if (!nominated.empty() && Priority(p) >= Priority(pod)) used[nominated] += PodGpus(p);
  }
  Json names = Json::array();
  for (const auto& n : nodes["items"]) {
    if (Terminating(n)) continue;
    if (want == 0 || NodeAllocatableGpus(n) - used[Name(n)] >= want) names.push_back(Name(n));
  }
  auto backoff = [&] { AttemptFailed(uid); };
  std::set<std::string> unresolvable;
  Json passed = Json::array();
  if (!names.empty()) {
    Json answer = Call("filter", key, Json{{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", names}});
    if (answer.is_null()) return backoff();
    if (answer.contains("Error") && answer["Error"].is_string() && !answer["Error"].get<std::string>().empty()) {
      return backoff();  // the scheduler treats this as a failed scheduling attempt
    }
    if (answer.contains("NodeNames") && answer["NodeNames"].is_array()) passed = answer["NodeNames"];
    if (answer.contains("FailedAndUnresolvableNodes") && answer["FailedAndUnresolvableNodes"].is_object()) {
      for (const auto& [n, why] : answer["FailedAndUnresolvableNodes"].items()) unresolvable.insert(n);
    }
  }
  if (passed.empty()) {
    Preempt(pod, nodes, pods, unresolvable);
    return backoff();
  }
  std::string best = passed[0].get<std::string>();
  if (passed.size() >= 2) {
    Json scores = Call("prioritize", key, Json{{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", passed}});
    if (scores.is_null()) return backoff();
    int64_t top = -1;
    for (const auto& s : scores) {
      const int64_t score = s.value("Score", int64_t{0});
      const std::string host = s.value("Host", std::string());
      if (score > top || (score == top && host < best)) {
        top = score;
        best = host;
      }
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (options_.kube_scheduler_queue) queue_.Scheduled(uid);
  assumed_[uid] = {best, want};
  binds_.push_back(std::async(std::launch::async, [this, pod, best, want] { Bind(pod, best, want); }));
}

void SchedulerDriver::Bind(Json pod, std::string node, int64_t gpus) {
  (void)gpus;
  const std::string uid = Uid(pod);
  Json answer = Call("bind", Key(pod),
                     Json{{"PodName", Name(pod)}, {"PodNamespace", Namespace(pod)}, {"PodUID", uid}, {"Node", node}});
  const bool ok = answer.is_object() &&
                  (!answer.contains("Error") || !answer["Error"].is_string() || answer["Error"].get<std::string>().empty());
  if (ok) return;  // stays assumed until the API server shows it bound
  {
    std::lock_guard<std::mutex> lock(mu_);
    assumed_.erase(uid);  // forget and retry, as the scheduler does after a failed bind
    // v1.26 handleBindingCycleError: forgetting the assumed pod frees room for others.
    if (options_.kube_scheduler_queue) queue_.MoveAll(std::chrono::steady_clock::now(), "AssignedPodDelete");
  }
  AttemptFailed(uid);
}

void SchedulerDriver::Preempt(const Json& pod, const Json& nodes, const Json& pods,
                              const std::set<std::string>& unresolvable) {
  const int64_t priority = Priority(pod), want = PodGpus(pod);
  if (pod.contains("spec") && pod["spec"].value("preemptionPolicy", std::string()) == "Never") return;
  // A pod already nominated waits while lower-priority pods on that node terminate.
  const std::string nominated = pod.contains("status") ? pod["status"].value("nominatedNodeName", std::string()) : "";
  if (!nominated.empty()) {
    for (const auto& p : pods["items"]) {
      if (NodeName(p) == nominated && Terminating(p) && !Finished(p) && Priority(p) < priority) return;
    }
  }
  auto used = UsedGpus(pods);
  Json meta_victims = Json::object();
  std::map<std::string, const Json*> by_uid;
  for (const auto& n : nodes["items"]) {
    const std::string node = Name(n);
    if (unresolvable.count(node) || Terminating(n)) continue;
    const int64_t alloc = NodeAllocatableGpus(n);
    std::vector<const Json*> lower;
    int64_t freed = 0;
    for (const auto& p : pods["items"]) {
      if (NodeName(p) != node || !HoldsNodeResources(p) || Terminating(p)) continue;
      if (Priority(p) < priority) {
        lower.push_back(&p);
        freed += PodGpus(p);
      }
    }
    if (alloc - used[node] + freed < want || lower.empty()) continue;
    // Reprieve the highest-priority victims that can stay.
    std::stable_sort(lower.begin(), lower.end(), [](const Json* a, const Json* b) { return Priority(*a) > Priority(*b); });
    int64_t free_now = alloc - used[node] + freed;
    Json victims = Json::array();
    for (const Json* p : lower) {
      if (free_now - PodGpus(*p) >= want) {
        free_now -= PodGpus(*p);  // stays
      } else {
        victims.push_back({{"UID", Uid(*p)}});
        by_uid[Uid(*p)] = p;
      }
    }
    if (!victims.empty()) meta_victims[node] = {{"Pods", victims}, {"NumPDBViolations", 0}};
  }
  if (meta_victims.empty()) return;
  Json answer = Call("preempt", Key(pod), Json{{"Pod", pod}, {"NodeNameToVictims", nullptr},
                                               {"NodeNameToMetaVictims", meta_victims}});
  if (!answer.is_object() || !answer.contains("NodeNameToMetaVictims") ||
      !answer["NodeNameToMetaVictims"].is_object() || answer["NodeNameToMetaVictims"].empty()) {
    return;  // the extender vetoed every candidate
  }
  // Fewest victims, then lowest highest-victim priority, then name.
  std::string chosen;
  size_t fewest = SIZE_MAX;
  int64_t lowest = INT64_MAX;
  Json victims_of_chosen;
  for (const auto& [node, v] : answer["NodeNameToMetaVictims"].items()) {
    const Json& list = v.contains("Pods") && v["Pods"].is_array() ? v["Pods"] : Json::array();
    int64_t top = INT64_MIN;
    for (const auto& victim : list) {
      auto it = by_uid.find(victim.value("UID", std::string()));
      if (it != by_uid.end()) top = std::max(top, Priority(*it->second));
    }
    if (list.size() < fewest || (list.size() == fewest && top < lowest)) {
      chosen = node;
      fewest = list.size();
      lowest = top;
      victims_of_chosen = list;
    }
  }
  // The extender may name victims the scheduler did not offer (other members of a gang).
  std::map<std::string, const Json*> all_by_uid;
  for (const auto& p : pods["items"]) all_by_uid[Uid(p)] = &p;
  for (const auto& victim : victims_of_chosen) {
    auto it = all_by_uid.find(victim.value("UID", std::string()));
    if (it == all_by_uid.end()) continue;
    const Json& p = *it->second;
    const Json condition = {{"type", "DisruptionTarget"},
                            {"status", "True"},
                            {"reason", "PreemptionByScheduler"},
                            {"message", fmt::format("{}: preempting to accommodate a higher priority pod",
                                                    options_.scheduler_name)},
                            {"lastTransitionTime", NowRfc3339()}};
    auto patched = client_.Patch(kPods, Namespace(p), Name(p), kube::PatchType::kStrategicMerge,
                                 Json{{"status", {{"conditions", Json::array({condition})}}}},
                                 kube::PatchOptions{.subresource = "status"});
    if (!patched.ok() && !IsNotFound(patched.status())) Error("victim condition: " + patched.status().message());
    kube::DeleteOptions del;
    del.precondition_uid = Uid(p);
    auto deleted = client_.Delete(kPods, Namespace(p), Name(p), del);
    if (!deleted.ok() && !IsNotFound(deleted.status())) Error("victim delete: " + deleted.status().message());
    std::lock_guard<std::mutex> lock(mu_);
    victims_.push_back(Key(p));
  }
  auto nominated_patch = client_.Patch(kPods, Namespace(pod), Name(pod), kube::PatchType::kMerge,
                                       Json{{"status", {{"nominatedNodeName", chosen}}}},
                                       kube::PatchOptions{.subresource = "status"});
  if (!nominated_patch.ok()) Error("nominate: " + nominated_patch.status().message());
}

Json SchedulerDriver::Call(const std::string& verb, const std::string& pod_key, const Json& body) {
  std::string url;
  {
    std::lock_guard<std::mutex> lock(mu_);
    url = extender_url_;
  }
  // "http://host:port/prefix" -> server "http://host:port", target "/prefix/<verb>".
  const auto scheme_end = url.find("://");
  const auto path_start = url.find('/', scheme_end == std::string::npos ? 0 : scheme_end + 3);
  kube::KubeConfig config;
  config.server = path_start == std::string::npos ? url : url.substr(0, path_start);
  const std::string prefix = path_start == std::string::npos ? "" : url.substr(path_start);
  ExtenderCall call{verb, pod_key, 0, json::Dump(body), "", std::chrono::steady_clock::now(), {}};
  Json answer;
  auto transport = kube::MakeCpprestTransport(config);
  if (transport.ok()) {
    kube::HttpRequest request;
    request.method = "POST";
    request.target = prefix + "/" + verb;
    request.content_type = "application/json";
    request.body = call.request;
    request.timeout = options_.http_timeout;
    auto response = (*transport)->Send(request);
    if (response.ok()) {
      call.status = response->status;
      call.response = response->body;
      if (response->status == 200) {
        auto parsed = json::Parse(response->body);
        if (parsed.ok()) answer = std::move(parsed).value();
      }
    } else {
      call.response = response.status().message();
    }
  } else {
    call.response = transport.status().message();
  }
  call.answered = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  calls_.push_back(std::move(call));
  return answer;
}

}  // namespace phalanx::e2e
