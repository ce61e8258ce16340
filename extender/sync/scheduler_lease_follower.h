// SchedulerLeaseFollower: with scheduler.replicas > 1, the active extender must be the one in
// the pod whose kube-scheduler is active, because kube-scheduler sends its verbs (and binds)
// to the sidecar on localhost. kube-scheduler holds Lease `phalanx-scheduler` with
// holderIdentity "<hostname>_<uuid>" (hostname = pod name), so the extender
// (--follow-scheduler-lease NAMESPACE/NAME) reads that Lease every retry period and:
//   held by its own pod            -> campaigns for / keeps Lease `phalanx-extender`;
//   held by another pod, or unheld -> deactivates and releases `phalanx-extender`;
//   unreadable (API server away)   -> keeps what it has (its own renewals decide).
// The extender Lease is still taken through kube::LeaderElector, so two extenders never
// both lead even while the followed Lease moves. A LeaderElector runs once: each campaign
// gets a new one; stopped ones are kept until the follower goes (handovers are rare and
// ElectorLeadership may still be reading the previous one).
//
// DecideFollow/HeldByPod are pure; the follower is thread-safe (Run on one thread, Stop from any).
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/kube/client.h"
#include "core/kube/leader_election.h"
#include "extender/sync/kube_leadership.h"

namespace phalanx::extender {

enum class FollowAction { kCampaign, kRelease, kKeep };
std::string_view FollowActionName(FollowAction action);

// True when `holder` (a holderIdentity) is `pod`'s: "<pod>_<anything>" or exactly "<pod>".
bool HeldByPod(std::string_view holder, std::string_view pod);

// `holder`: the followed Lease's holderIdentity ("" = unheld or no Lease); nullopt when it
// could not be read.
FollowAction DecideFollow(const std::optional<std::string>& holder, std::string_view pod);

// "NAMESPACE/NAME" -> both parts; InvalidArgument otherwise.
Status ParseLeaseRef(std::string_view text, std::string* ns, std::string* name);

struct FollowerOptions {
  std::string lease_namespace;  // the followed Lease (kube-scheduler's)
  std::string lease_name;
  std::string pod;  // this pod's name: the prefix of its kube-scheduler's identity
  kube::LeaderElectionConfig election;  // our own Lease (phalanx-extender)
};

struct FollowerCallbacks {
  // Before our Lease is released: stop acting as the active extender.
  std::function<void()> on_release;
  // Our Lease could not be renewed (LeaderElector::Run failed): the daemon must exit.
  std::function<void(const Status&)> on_lost;
  // The followed Lease changed hands (logging).
  std::function<void(const std::string& holder, FollowAction action)> on_follow;
};

class SchedulerLeaseFollower {
 public:
  SchedulerLeaseFollower(kube::KubeClient& client, ElectorLeadership& leadership, FollowerOptions options,
                         FollowerCallbacks callbacks);
  ~SchedulerLeaseFollower();
  SchedulerLeaseFollower(const SchedulerLeaseFollower&) = delete;
  SchedulerLeaseFollower& operator=(const SchedulerLeaseFollower&) = delete;

  // Polls every election.retry_period until Stop(); then releases our Lease if held.
  void Run();
  void Stop();
  // One poll: read the followed Lease, decide, start or stop campaigning.
  FollowAction Step();
  bool campaigning() const;

 private:
  std::optional<std::string> ReadHolder();
  void StartCampaign();  // mu_ held
  void StopCampaign();   // mu_ held

  kube::KubeClient& client_;
  ElectorLeadership& leadership_;
  const FollowerOptions options_;
  const FollowerCallbacks callbacks_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;
  std::string last_holder_;
  std::vector<std::unique_ptr<kube::LeaderElector>> electors_;  // back() = current; never run before the first campaign
  std::thread campaign_;  // runs electors_.back()->Run() while campaigning
};

}  // namespace phalanx::extender
