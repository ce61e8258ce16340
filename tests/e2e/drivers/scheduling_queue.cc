// kube-scheduler v1.26's scheduling queue rules (see scheduling_queue.h).
#include "tests/e2e/drivers/scheduling_queue.h"

#include <algorithm>

#include "core/json/json.h"
#include "tests/e2e/drivers/pod_facts.h"

namespace phalanx::e2e {
namespace {

using kube::Json;

// isPodUpdated: the pod without what does not make it more schedulable.
std::string Stripped(const Json& pod) {
  Json p = pod;
  if (p.contains("metadata") && p["metadata"].is_object()) {
    for (const char* k : {"resourceVersion", "generation", "managedFields", "finalizers"}) p["metadata"].erase(k);
  }
  p.erase("status");
  return json::Dump(p);
}

// nodeSchedulingPropertiesChange (v1.26): spec.unschedulable, allocatable, labels, taints and the
// conditions' statuses. Annotations and heartbeats are not events.
std::string SchedulingProperties(const Json& node) {
  Json props = Json::object();
  if (node.contains("spec")) {
    props["unschedulable"] = node["spec"].value("unschedulable", false);
    props["taints"] = node["spec"].value("taints", Json::array());
  }
  props["labels"] = node.contains("metadata") ? node["metadata"].value("labels", Json::object()) : Json::object();
  if (node.contains("status")) {
    props["allocatable"] = node["status"].value("allocatable", Json::object());
    Json conditions = Json::object();
    for (const auto& c : node["status"].value("conditions", Json::array())) {
      conditions[c.value("type", "")] = c.value("status", "");
    }
    props["conditions"] = conditions;
  }
  return json::Dump(props);
}

}  // namespace

std::chrono::milliseconds SchedulingQueueModel::Backoff(const Queued& q) const {
  std::chrono::milliseconds d = options_.initial_backoff;
  for (int i = 1; i < q.attempts; ++i) {
    if (d > options_.max_backoff - d) return options_.max_backoff;
    d += d;
  }
  return d;
}

void SchedulingQueueModel::MoveToActiveOrBackoff(Queued& q, Time now) {
  q.where = q.timestamp + Backoff(q) > now ? Where::kBackoff : Where::kActive;
}

void SchedulingQueueModel::MoveAll(Time now, const std::string& event) {
  events_.push_back(event);
  for (auto& [uid, q] : pods_) {
    if (q.where == Where::kUnschedulable) MoveToActiveOrBackoff(q, now);
  }
  move_request_cycle_ = scheduling_cycle_;
}

void SchedulingQueueModel::Observe(const std::vector<const Json*>& pending, const Json& nodes, const Json& pods,
                                   Time now) {
  // Cluster events since the last look.
  std::map<std::string, std::string> node_props;
  for (const auto& n : nodes["items"]) node_props[Name(n)] = SchedulingProperties(n);
  std::set<std::string> bound;
  for (const auto& p : pods["items"]) {
    if (!NodeName(p).empty()) bound.insert(Uid(p));
  }
  if (!first_) {
    for (const auto& [name, props] : node_props) {
      auto it = nodes_.find(name);
      if (it == nodes_.end()) {
        MoveAll(now, "NodeAdd");
      } else if (it->second != props) {
        MoveAll(now, "NodeUpdate");
      }
    }
    for (const auto& uid : bound_) {
      if (!bound.count(uid)) {
        MoveAll(now, "AssignedPodDelete");
        break;
      }
    }
  }
  first_ = false;
  nodes_ = std::move(node_props);
  bound_ = std::move(bound);

  // The pending pods: new ones join activeQ; an updated object leaves unschedulablePods.
  std::set<std::string> seen;
  for (const Json* p : pending) {
    const std::string uid = Uid(*p);
    seen.insert(uid);
    const std::string stripped = Stripped(*p);
    auto [it, added] = pods_.try_emplace(uid);
    Queued& q = it->second;
    q.priority = Priority(*p);
    q.created = Str(*p, "metadata", "creationTimestamp");
    if (added) {
      q.timestamp = now;
      q.stripped = stripped;
      continue;
    }
    if (q.stripped != stripped) {
      q.stripped = stripped;
      if (q.where == Where::kUnschedulable) {
        events_.push_back("PodUpdate");
        MoveToActiveOrBackoff(q, now);
      }
    }
  }
  for (auto it = pods_.begin(); it != pods_.end();) {
    // Bound, deleted or gated: out of the queue.
    it = seen.count(it->first) ? std::next(it) : pods_.erase(it);
  }
}

std::vector<std::string> SchedulingQueueModel::PopReady(Time now) {
  if (now - last_backoff_flush_ >= options_.flush_backoff_period) {
    last_backoff_flush_ = now;
    for (auto& [uid, q] : pods_) {
      if (q.where == Where::kBackoff && q.timestamp + Backoff(q) <= now) q.where = Where::kActive;
    }
  }
  if (now - last_unschedulable_flush_ >= options_.flush_unschedulable_period) {
    last_unschedulable_flush_ = now;
    bool moved = false;
    for (auto& [uid, q] : pods_) {
      if (q.where == Where::kUnschedulable && now - q.timestamp > options_.max_in_unschedulable) {
        MoveToActiveOrBackoff(q, now);
        moved = true;
      }
    }
    if (moved) events_.push_back("UnschedulableTimeout");
  }
  std::vector<std::pair<const std::string*, const Queued*>> ready;
  for (const auto& [uid, q] : pods_) {
    if (q.where == Where::kActive) ready.emplace_back(&uid, &q);
  }
  std::stable_sort(ready.begin(), ready.end(), [](const auto& a, const auto& b) {
    if (a.second->priority != b.second->priority) return a.second->priority > b.second->priority;
    return a.second->created < b.second->created;
  });
  std::vector<std::string> out;
  for (const auto& [uid, q] : ready) {
    Queued& mq = pods_[*uid];
    mq.where = Where::kInFlight;
    mq.attempts++;
    mq.cycle = ++scheduling_cycle_;
    out.push_back(*uid);
  }
  return out;
}

void SchedulingQueueModel::Failed(const std::string& uid, Time now) {
  auto it = pods_.find(uid);
  if (it == pods_.end()) return;
  Queued& q = it->second;
  q.timestamp = now;
  q.where = move_request_cycle_ >= q.cycle ? Where::kBackoff : Where::kUnschedulable;
}

void SchedulingQueueModel::Scheduled(const std::string& uid) {
  if (auto it = pods_.find(uid); it != pods_.end()) it->second.where = Where::kAssumed;
}

SchedulingQueueModel::Where SchedulingQueueModel::where(const std::string& uid) const {
  auto it = pods_.find(uid);
  return it == pods_.end() ? Where::kActive : it->second.where;
}

}  // namespace phalanx::e2e
