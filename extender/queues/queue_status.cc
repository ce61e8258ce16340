#include "extender/queues/queue_status.h"

#include <fmt/format.h>

#include "core/log/log.h"
#include "extender/objects/k8s_objects.h"
#include "extender/sync/queue_watch.h"

namespace phalanx::extender {
namespace {

using kube::Json;

struct Condition {
  std::string_view type;
  bool status = false;
  std::string reason, message;
};

double Gpus(scheduling::Milli m) { return static_cast<double>(m) / scheduling::kMilliGpu; }

Condition ActiveCondition(const QueueStatusInfo* standing, const QueueObjects::Object& object,
                          const std::string& set_error) {
  if (standing != nullptr) {
    if (!object.error.empty()) {
      return {kConditionActive, true, "PreviousSpecInForce", object.error + "; the last valid version stays in force"};
    }
    if (!set_error.empty()) {
      return {kConditionActive, true, "PreviousSpecInForce",
              "GpuQueues not applied (the queues in force are unchanged): " + set_error};
    }
    return {kConditionActive, true, "Enforced", "the extender enforces this queue's quotas"};
  }
  if (!object.error.empty()) return {kConditionActive, false, "InvalidSpec", object.error};
  return {kConditionActive, false, "QueueSetInvalid", "GpuQueues not applied: " + set_error};
}

Condition BelowNominalCondition(const QueueStatusInfo& q) {
  std::string below;
  for (const auto& p : q.pools) {
    if (p.usage >= p.nominal) continue;
    if (!below.empty()) below += "; ";
    below += fmt::format("{}: {}/{}", p.pool, Gpus(p.usage), Gpus(p.nominal));
  }
  if (q.pending_gangs == 0) return {kConditionBelowNominal, false, "NoPendingWork", "no gang of this queue waits"};
  if (below.empty()) {
    return {kConditionBelowNominal, false, "AtNominal", "gangs wait, but every pool is at or above its nominal quota"};
  }
  return {kConditionBelowNominal, true, "PendingBelowNominal",
          fmt::format("{} gang(s) ({} GPUs) wait while the queue is below its nominal quota ({} GPUs in use)",
                      q.pending_gangs, Gpus(q.pending), below)};
}

// The condition as the API shows it; lastTransitionTime kept from `previous` (the object's
// conditions) unless the status changed.
Json ConditionJson(const Condition& c, int64_t generation, const Json& previous, SystemTime wall) {
  const std::string status = c.status ? "True" : "False";
  std::string since = FormatRfc3339(wall);
  if (previous.is_array()) {
    for (const Json& p : previous) {
      if (p.is_object() && p.value("type", "") == std::string(c.type) && p.value("status", "") == status &&
          p.contains("lastTransitionTime") && p["lastTransitionTime"].is_string()) {
        since = p["lastTransitionTime"].get<std::string>();
      }
    }
  }
  return Json{{"type", std::string(c.type)},       {"status", status},          {"reason", c.reason},
              {"message", c.message}, {"lastTransitionTime", since}, {"observedGeneration", generation}};
}

}  // namespace

std::vector<QueueStatusPlan::Write> QueueStatusPlan::Due(const std::vector<QueueStatusInfo>& standing,
                                                         const QueueObjects& objects, Clock::time_point now,
                                                         SystemTime wall) {
  std::map<std::string_view, const QueueStatusInfo*> by_name;
  for (const QueueStatusInfo& q : standing) by_name.emplace(q.name, &q);
  std::vector<Write> out;
  for (const auto& [name, object] : objects.by_name) {
    auto s = by_name.find(name);
    const QueueStatusInfo* q = s == by_name.end() ? nullptr : s->second;
    if (q == nullptr && object.error.empty() && objects.set_error.empty()) continue;  // not applied yet
    auto last = last_.find(name);
    const Json empty = Json::object();
    const Json& was = last == last_.end() || !last->second.status.is_object() ? empty : last->second.status;
    const Json previous_conditions = was.contains("conditions") ? was["conditions"] : Json();

    Json status = q != nullptr ? QueueStatusJson(*q) : Json::object();
    status["observedGeneration"] = object.generation;
    Json conditions = Json::array();
    conditions.push_back(
        ConditionJson(ActiveCondition(q, object, objects.set_error), object.generation, previous_conditions, wall));
    if (q != nullptr) {
      conditions.push_back(ConditionJson(BelowNominalCondition(*q), object.generation, previous_conditions, wall));
    }
    status["conditions"] = std::move(conditions);

    if (last != last_.end()) {
      if (status == was) continue;                            // unchanged: no write at all
      if (now - last->second.at < min_interval_) continue;  // written lately
    }
    Json patch = status;
    for (const auto& [key, value] : was.items()) {
      if (!status.contains(key)) patch[key] = nullptr;  // a merge patch removes it (an inactive queue has no usage)
    }
    out.push_back({name, Json{{"status", std::move(patch)}}, std::move(status)});
  }
  std::erase_if(last_, [&](const auto& e) { return !objects.by_name.contains(e.first); });
  return out;
}

void QueueStatusPlan::Seed(const std::string& name, const Json& status) {
  last_[name] = Last{status.is_object() ? status : Json::object(), Clock::time_point{}};
}

void QueueStatusPlan::Written(const Write& write, Clock::time_point at) { last_[write.name] = Last{write.status, at}; }

QueueStatusWriter::QueueStatusWriter(kube::KubeClient& client, std::function<std::vector<QueueStatusInfo>()> statuses,
                                     std::function<QueueObjects()> objects, std::function<bool()> leading,
                                     std::shared_ptr<spdlog::logger> logger, QueueStatusWriterOptions options)
    : client_(client),
      statuses_(std::move(statuses)),
      objects_(std::move(objects)),
      leading_(std::move(leading)),
      logger_(std::move(logger)),
      options_(options),
      plan_(options.min_interval) {}

QueueStatusWriter::~QueueStatusWriter() { Stop(); }

void QueueStatusWriter::Start() { thread_ = std::thread([this] { Run(); }); }

void QueueStatusWriter::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void QueueStatusWriter::Run() {
  bool was_leading = false;
  std::unique_lock lock(mu_);
  while (!cv_.wait_for(lock, options_.period, [this] { return stopping_; })) {
    lock.unlock();
    const bool leading = leading_();
    // Another replica wrote while this one followed: read the objects afresh.
    if (leading && !was_leading) plan_.Reset();
    was_leading = leading;
    if (leading) Once();
    lock.lock();
  }
}

void QueueStatusWriter::Once() {
  QueueObjects objects = objects_();
  if (objects.by_name.empty()) return;
  const std::vector<QueueStatusInfo> statuses = statuses_();
  for (auto it = objects.by_name.begin(); it != objects.by_name.end();) {
    const std::string& name = it->first;
    if (plan_.Knows(name)) {
      ++it;
      continue;
    }
    // One read per queue per term as leader: its conditions' transition times, and no write
    // when the status there is already right.
    auto got = client_.Get(kGpuQueues, "", name);
    if (got.ok()) {
      plan_.Seed(name, got->contains("status") ? (*got)["status"] : Json::object());
    } else if (IsNotFound(got.status())) {
      it = objects.by_name.erase(it);  // deleted meanwhile: the informer will drop it
      continue;
    } else {
      PHX_LOG_WARN(logger_, "GpuQueue not read before its status write", kv("queue", name),
                   kv("err", got.status().message()));
      plan_.Seed(name, Json::object());
    }
    ++it;
  }
  const auto now = QueueStatusPlan::Clock::now();
  for (QueueStatusPlan::Write& w : plan_.Due(statuses, objects, now, std::chrono::system_clock::now())) {
    auto r = client_.Patch(kGpuQueues, "", w.name, kube::PatchType::kMerge, w.patch, {.subresource = "status"});
    if (!r.ok()) {
      PHX_LOG_WARN(logger_, "GpuQueue status not written", kv("queue", w.name), kv("err", r.status().message()));
      plan_.Failed(w.name, now);
      continue;
    }
    writes_++;
    plan_.Written(w, now);
  }
}

}  // namespace phalanx::extender
