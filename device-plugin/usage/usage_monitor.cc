#include "device-plugin/usage/usage_monitor.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "core/log/log.h"
#include "device-plugin/plugin/device_model.h"

namespace phalanx::device_plugin {
namespace {

std::string Duration(std::chrono::milliseconds d) {
  const auto s = std::chrono::duration_cast<std::chrono::seconds>(d).count();
  return s >= 60 ? fmt::format("{}m{}s", s / 60, s % 60) : fmt::format("{}s", s);
}

}  // namespace

UsageMonitor::UsageMonitor(UsageMonitorOptions options, nvml::NvmlApi& api, const nvml::GpuInventory& inventory,
                           UsageMonitorDeps deps, std::shared_ptr<spdlog::logger> logger, const Clock& clock)
    : options_(std::move(options)),
      deps_(deps),
      logger_(std::move(logger)),
      clock_(clock),
      sampler_(api, inventory),
      history_(options_.summary_window),
      tracker_(options_.idle),
      snapshot_(std::make_shared<const UsageSnapshot>()),
      summaries_(std::make_shared<const UsageSummaries>()) {}

UsageMonitor::~UsageMonitor() { Stop(); }

void UsageMonitor::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void UsageMonitor::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  sampler_.Release();  // while NVML is still loaded (the daemon stops us before letting go of it)
}

std::shared_ptr<const UsageSnapshot> UsageMonitor::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return snapshot_;
}

std::shared_ptr<const UsageSummaries> UsageMonitor::Summaries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return summaries_;
}

void UsageMonitor::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    const auto start = std::chrono::steady_clock::now();
    lock.unlock();
    SampleOnce();
    lock.lock();
    // Fixed rate: a slow pass shortens the wait instead of drifting.
    cv_.wait_until(lock, start + options_.interval, [this] { return stop_; });
  }
}

void UsageMonitor::LogNotices(const std::vector<nvml::SampleNotice>& notices) {
  for (const auto& n : notices) {
    const std::string query(nvml::SampleQueryName(n.query));
    if (n.unsupported) {
      PHX_LOG_INFO(logger_, "NVML query unsupported on this device; not asking it again", kv("device", n.device),
                   kv("query", query), kv("err", n.status));
    } else if (n.status.ok()) {
      PHX_LOG_INFO(logger_, "NVML query answers again", kv("device", n.device), kv("query", query));
    } else {
      PHX_LOG_WARN(logger_, "NVML query failed while sampling utilisation (device health unaffected)",
                   kv("device", n.device), kv("query", query), kv("err", n.status));
    }
    if (!n.unsupported && !n.status.ok() && deps_.counters && deps_.counters->errors) {
      if (auto c = deps_.counters->errors->WithLabels({query}); c.ok()) (*c)->Inc();
    }
  }
}

void UsageMonitor::Reconcile(const PodOnNode& pod, const IdleDecision& d, const std::vector<std::string>& devices) {
  if (deps_.api == nullptr) return;
  const std::string want = d.idle && d.idle_since ? FormatRfc3339(*d.idle_since) : "";
  if (want == pod.idle_since) return;  // the pod already says so (or a restarted plugin adopted it)
  nlohmann::json value = want.empty() ? nlohmann::json(nullptr) : nlohmann::json(want);
  const nlohmann::json patch = {{"metadata", {{"annotations", {{std::string(kIdleSinceAnnotation), value}}}}}};
  const Status s = deps_.api->PatchPod(pod.ns, pod.name, patch);
  if (deps_.counters && deps_.counters->idle_patches) {
    if (auto c = deps_.counters->idle_patches->WithLabels({s.ok() ? "ok" : "error"}); c.ok()) (*c)->Inc();
  }
  if (!s.ok() && s.code() == StatusCode::kPermissionDenied) {
    // A missing RBAC rule (a node's own identity may not patch pods): once, naming it.
    if (!patch_refused_logged_) {
      PHX_LOG_WARN(logger_, "Pod patches are refused (403): grant patch on pods to annotate phalanx.io/idle-since; "
                   "logged once", kv("pod", pod.ns + "/" + pod.name), kv("err", s));
      patch_refused_logged_ = true;
    }
    return;
  }
  if (!s.ok()) {
    // Retried by the next pass's reconcile (the pod still differs).
    PHX_LOG_WARN(logger_, "Failed to patch phalanx.io/idle-since", kv("pod", pod.ns + "/" + pod.name), kv("err", s));
    return;
  }
  // Events follow what the pod now says, so a patch that failed once still gets its Event when
  // the retry succeeds.
  const std::string list = fmt::format("{}", fmt::join(devices, ", "));
  if (!want.empty() && pod.idle_since.empty()) {
    PHX_LOG_INFO(logger_, "Pod's GPUs are idle", kv("pod", pod.ns + "/" + pod.name), kv("since", want));
    if (deps_.events) {
      deps_.events->PodEvent(pod.ns, pod.name, pod.uid, "Warning", "GpuIdle",
                             fmt::format("{} below {}% SM utilisation since {} (idle window {})", list,
                                         options_.idle.threshold_percent, want, Duration(options_.idle.window)));
    }
  } else if (want.empty()) {
    PHX_LOG_INFO(logger_, "Pod's GPUs are active again", kv("pod", pod.ns + "/" + pod.name));
    if (deps_.events) {
      deps_.events->PodEvent(pod.ns, pod.name, pod.uid, "Normal", "GpuActive",
                             fmt::format("{} at or above {}% SM utilisation again", list,
                                         options_.idle.threshold_percent));
    }
  }
}

void UsageMonitor::SampleOnce() {
  const auto started = std::chrono::steady_clock::now();
  const SystemTime now = clock_.WallNow();
  std::vector<nvml::SampleNotice> notices;
  auto samples = sampler_.SampleAll(&notices);
  LogNotices(notices);

  // Holders by physical device: pod-resources names devices as advertised (replicas "<uuid>::<n>").
  std::map<std::string, std::vector<std::pair<PodKey, std::string>>> held;  // uuid -> (pod, container)
  if (deps_.pod_resources != nullptr) {
    auto listed = deps_.pod_resources->ListHolders();
    if (listed.ok()) {
      if (!attribution_error_.empty()) PHX_LOG_INFO(logger_, "Utilisation attribution restored (pod-resources answers)");
      attribution_error_.clear();
      for (const auto& h : *listed) {
        auto& v = held[StripReplica(h.device_id)];
        const std::pair<PodKey, std::string> entry{h.pod, h.container};
        if (std::find(v.begin(), v.end(), entry) == v.end()) v.push_back(entry);
      }
    } else if (attribution_error_ != listed.status().message()) {
      attribution_error_ = listed.status().message();
      PHX_LOG_WARN(logger_, "Cannot attribute utilisation to pods; sampling devices only", kv("err", listed.status()));
    }
  }
  std::map<std::string, const PodOnNode*> pod_by_key;  // "ns/name"
  PodCache::Snapshot pods;
  if (deps_.pods != nullptr && deps_.pods->Synced()) {
    pods = deps_.pods->Pods();
    for (const auto& p : *pods) pod_by_key[p.ns + "/" + p.name] = &p;
  }

  auto snapshot = std::make_shared<UsageSnapshot>();
  snapshot->taken = now;
  // Pod UID -> its pod and the devices it holds (for the idle decision).
  std::map<std::string, std::pair<const PodOnNode*, std::vector<const DeviceUsage*>>> by_pod;
  snapshot->devices.reserve(samples.size());
  for (auto& s : samples) {
    DeviceUsage& d = snapshot->devices.emplace_back();
    d.sample = std::move(s);
    history_.Add(d.sample.uuid, now, d.sample.sm_util);
    d.sm_util_5m = history_.Mean(d.sample.uuid, now);
    for (const auto& [key, container] : held[d.sample.uuid]) {
      Holder h{.ns = key.ns, .name = key.name, .container = container};
      if (auto p = pod_by_key.find(key.ns + "/" + key.name); p != pod_by_key.end()) {
        const PodOnNode& pod = *p->second;
        h.uid = pod.uid;
        h.job = pod.job;
        h.gang = pod.gang;
        h.tier = pod.priority_class;
        if (!pod.deleting) by_pod[pod.uid].first = &pod;
      }
      d.holders.push_back(std::move(h));
    }
  }
  history_.Trim(now);
  for (const DeviceUsage& d : snapshot->devices) {
    for (const Holder& h : d.holders) {
      auto it = by_pod.find(h.uid);
      if (it == by_pod.end()) continue;
      auto& devs = it->second.second;
      if (std::find(devs.begin(), devs.end(), &d) == devs.end()) devs.push_back(&d);
    }
  }

  // Idle detection over pods the API knows (a UID to annotate) and that are not going away.
  std::vector<PodUsage> usage;
  std::vector<std::pair<const PodOnNode*, std::vector<std::string>>> subjects;
  for (const auto& [uid, entry] : by_pod) {
    if (entry.first == nullptr) continue;
    PodUsage u{.uid = uid};
    std::vector<std::string> names;
    for (const DeviceUsage* d : entry.second) {
      u.sm_util.push_back(d->sample.sm_util);
      names.push_back(d->sample.uuid);
    }
    if (!entry.first->idle_since.empty()) u.annotated_since = ParseRfc3339(entry.first->idle_since);
    usage.push_back(std::move(u));
    subjects.emplace_back(entry.first, std::move(names));
  }
  const auto decisions = tracker_.Update(usage, now);
  std::map<std::string, const IdleDecision*> decision_of;
  for (size_t i = 0; i < decisions.size(); ++i) {
    decision_of[decisions[i].uid] = &decisions[i];
    Reconcile(*subjects[i].first, decisions[i], subjects[i].second);
  }
  for (DeviceUsage& d : snapshot->devices) {
    for (Holder& h : d.holders) {
      auto it = decision_of.find(h.uid);
      if (it == decision_of.end()) continue;
      h.idle = it->second->idle;
      h.idle_since = it->second->idle_since;
    }
  }

  auto summaries = std::make_shared<const UsageSummaries>(Summarise(*snapshot));
  {
    std::lock_guard<std::mutex> lock(mu_);
    snapshot_ = std::move(snapshot);
    summaries_ = std::move(summaries);
  }
  ++passes_;
  if (deps_.counters) {
    if (deps_.counters->samples) deps_.counters->samples->Inc();
    if (deps_.counters->sample_seconds) {
      deps_.counters->sample_seconds->Observe(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    }
  }
}

}  // namespace phalanx::device_plugin
