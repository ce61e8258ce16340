// LeaderElector: leader election on a coordination.k8s.io/v1 Lease (client-go's
// leaderelection with the Lease lock).
//
// Lease spec: holderIdentity, leaseDurationSeconds, acquireTime, renewTime (MicroTime),
// leaseTransitions. A candidate may take the lease when it is unheld, held by itself, or when the
// holder has not renewed for lease_duration *as observed on the candidate's own clock* (the time
// it last saw the record change; clocks of different machines are never compared). Every write is
// a PUT with the read resourceVersion, so two candidates never both win (one gets Conflict).
//
// Run(): try every retry_period until acquired; on_started_leading then runs on its own thread;
// renew every retry_period; if no renew succeeded for renew_deadline, leadership is lost:
// on_stopped_leading runs and Run() returns FailedPrecondition("lost leadership ...") — the
// daemon must then exit non-zero (work done without the lease is unsafe). Stop() ends Run() with
// OK, releasing the lease first when release_on_cancel (so a successor need not wait).
// Lease requests use renew_deadline/2 as timeout and no client retries.
// Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "core/kube/client.h"

namespace phalanx::kube {

struct LeaderElectionConfig {
  std::string lease_namespace;
  std::string lease_name;
  std::string identity;  // unique per candidate: pod name (+ random suffix)
  Duration lease_duration = std::chrono::seconds(15);
  Duration renew_deadline = std::chrono::seconds(10);
  Duration retry_period = std::chrono::seconds(2);
  bool release_on_cancel = true;
};

struct LeaderCallbacks {
  std::function<void()> on_started_leading;                  // own thread; start the work
  std::function<void()> on_stopped_leading;                  // Run()'s thread; stop the work
  std::function<void(const std::string& identity)> on_new_leader;  // a different holder was observed
};

// lease_duration > renew_deadline > retry_period * 1.2, all positive, names non-empty.
Status ValidateLeaderElectionConfig(const LeaderElectionConfig& config);

class LeaderElector {
 public:
  LeaderElector(KubeClient& client, LeaderElectionConfig config, LeaderCallbacks callbacks = {},
                const Clock* clock = nullptr);
  ~LeaderElector();

  // One attempt to acquire or renew; true when this candidate holds the lease afterwards.
  bool TryAcquireOrRenew();
  // Gives the lease up (holder "" and leaseDurationSeconds 1) if we hold it.
  Status Release();

  Status Run();
  void Stop();

  bool IsLeader() const { return leader_.load(); }
  std::string CurrentHolder() const;  // last observed holderIdentity

 private:
  struct Record {
    std::string holder;
    int lease_seconds = 0;
    std::string acquire_time, renew_time;
    int transitions = 0;
    bool operator==(const Record&) const = default;
  };
  Result<Json> GetLease();
  Status WriteLease(const Json* existing, const Record& record);
  Json RecordToSpec(const Record& r) const;
  std::string MicroTimeNow() const;
  bool Wait(Duration d);  // false when stopped

  KubeClient& client_;
  const LeaderElectionConfig config_;
  const LeaderCallbacks callbacks_;
  const Clock* clock_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;
  std::optional<Record> observed_;
  MonotonicTime observed_time_{};
  std::atomic<bool> leader_{false};
  std::thread work_thread_;
};

}  // namespace phalanx::kube
