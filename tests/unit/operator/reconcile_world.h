// The reconcile tests' tiny in-memory world: applies each plan the way the daemon and the
// cluster would (kubelet and garbage collection played by the test), then reconciles again.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "operator/reconcile/reconcile.h"
#include "tests/unit/operator/test_builders.h"

namespace phalanx::op::testing {

class World {
 public:
  explicit World(json::Json job_json) : job_json_(std::move(job_json)) { job_ = DecodeOrDie(job_json_); }

  // One reconcile, applied. Returns the plan.
  ReconcilePlan Step() {
    ReconcilePlan plan = Reconcile(job_, PodList(), service_, now_, options_);
    last_plan_ = plan;
    if (plan.status) job_.status = *plan.status;
    if (plan.create_service) service_ = true;
    for (const auto& p : plan.create_pods) {
      auto pod = DecodeObservedPod(p);
      EXPECT_TRUE(pod.ok());
      ++created_;
      if (!pods_.count(pod->name)) {
        pod->uid = "uid-" + pod->name;
        pod->phase = "Pending";
        pod_env_[pod->name] = p["spec"]["containers"][0]["env"];
        pods_[pod->name] = *pod;
      }
    }
    for (const auto& a : plan.annotate_pods) pods_[a.name].annotations[a.key] = a.value;
    for (const auto& d : plan.delete_pods) {
      auto it = pods_.find(d.name);
      if (it == pods_.end()) continue;
      if (d.mark_disruption) it->second.disruption_reason = d.disruption_reason;
      if (!it->second.deletion_timestamp) it->second.deletion_timestamp = now_;
      if (d.force) it->second.finalizers.clear();
    }
    for (const auto& f : plan.remove_finalizers) {
      auto it = pods_.find(f.name);
      if (it != pods_.end()) it->second.finalizers.clear();
    }
    if (plan.delete_job) job_deleted_ = true;
    Collect();
    return plan;
  }

  // Steps until a reconcile changes nothing (at most 20).
  void Settle() {
    for (int i = 0; i < 20; ++i) {
      ReconcilePlan p = Step();
      if (p.empty()) return;
    }
    ADD_FAILURE() << "did not settle";
  }

  // Kubelet: a deleting pod with running containers terminates (optionally leaving a message).
  void KubeletTerminate(const std::string& name, int exit_code, const std::string& message = "") {
    ObservedPod& p = pods_.at(name);
    p.phase = exit_code == 0 ? "Succeeded" : "Failed";
    p.containers = {ObservedContainer{"trainer", false, true, exit_code, exit_code == 0 ? "Completed" : "Error", message, now_}};
    Collect();
  }
  void TerminateAllDeleting(const std::string& message = "") {
    for (auto& [name, p] : pods_) {
      if (p.deleting() && !p.terminal()) KubeletTerminate(name, 143, message);
    }
  }
  void ScheduleAndRunAll() {
    for (auto& [name, p] : pods_) {
      if (p.deleting() || p.terminal()) continue;
      p.gated = false;
      p.node_name = "gpu-" + std::to_string(p.index);
      p.phase = "Running";
      p.containers = {ObservedContainer{"trainer", true, false, 0, "", "", std::nullopt}};
    }
  }

  std::vector<ObservedPod> PodList() const {
    std::vector<ObservedPod> out;
    for (const auto& [_, p] : pods_) out.push_back(p);
    return out;
  }
  std::vector<std::string> LivePodNames() const {
    std::vector<std::string> out;
    for (const auto& [n, p] : pods_) {
      if (!p.deleting()) out.push_back(n);
    }
    return out;
  }
  std::string EnvOf(const std::string& pod, const std::string& name) {
    for (const auto& e : pod_env_.at(pod)) {
      if (e["name"] == name) return e["value"];
    }
    return "<missing>";
  }

  void Advance(Duration d) { now_ += std::chrono::duration_cast<SystemTime::duration>(d); }
  void SetSpec(const std::string& pointer, const json::Json& value) {
    job_json_[json::Json::json_pointer(pointer)] = value;
    TrainingJobStatus status = job_.status;
    job_ = DecodeOrDie(job_json_);
    job_.status = status;
  }
  void Annotate(const std::string& key, const std::string& value) {
    job_.meta.annotations[key] = value;
  }

  TrainingJob job_;
  json::Json job_json_;
  std::map<std::string, ObservedPod> pods_;
  std::map<std::string, json::Json> pod_env_;
  bool service_ = false;
  bool job_deleted_ = false;
  int created_ = 0;
  SystemTime now_ = SystemTime(std::chrono::seconds(1'795'000'000));
  ReconcileOptions options_;
  ReconcilePlan last_plan_;

 private:
  // Garbage collection: a deleting pod without finalizers disappears once it is not running.
  void Collect() {
    for (auto it = pods_.begin(); it != pods_.end();) {
      const ObservedPod& p = it->second;
      bool running = false;
      for (const auto& c : p.containers) running = running || c.running;
      if (p.deleting() && p.finalizers.empty() && !running) {
        it = pods_.erase(it);
      } else {
        ++it;
      }
    }
  }
};

}  // namespace phalanx::op::testing
