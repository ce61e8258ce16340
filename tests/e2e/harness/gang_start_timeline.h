// Gang start timeline (issue 23 item 7): where the time from `kubectl apply` of a TrainingJob to
// all of its members bound goes, from the objects' own history.
//  - WatchRecorder keeps every watch event of a resource (pods, TrainingJobs) in one namespace
//    from a resourceVersion on, stamped with the steady clock when it arrived (loopback: the
//    API server's write time plus well under a millisecond);
//  - GangStartMilestones reads, for one job, the first and last member to reach each step
//    (created, ungated, filtered, bind asked, devices written, bound, running) from those
//    events and the SchedulerDriver's recorded extender calls (sent/answered);
//  - GangStartStages turns milestones into the critical path: each stage is the gap between
//    the last member of one step and the first (or last) of the next, so the stages add up
//    to apply -> all bound.
// Pure apart from WatchRecorder (a thread per resource).
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/kube/client.h"
#include "tests/e2e/drivers/scheduler_driver.h"

namespace phalanx::e2e {

using SteadyTime = std::chrono::steady_clock::time_point;

struct TimedEvent {
  SteadyTime at;
  std::string type;  // ADDED, MODIFIED, DELETED
  kube::Json object;
};

class WatchRecorder {
 public:
  // Watches `resource` in `ns` from `resource_version` (events after it) until Stop().
  WatchRecorder(kube::KubeClient& client, const kube::Resource& resource, std::string ns, uint64_t resource_version);
  ~WatchRecorder();
  WatchRecorder(const WatchRecorder&) = delete;
  WatchRecorder& operator=(const WatchRecorder&) = delete;

  void Stop();
  std::vector<TimedEvent> events() const;
  std::string error() const;

 private:
  void Run();

  kube::KubeClient& client_;
  mutable std::mutex mu_;
  std::vector<TimedEvent> events_;
  std::string error_;
  std::unique_ptr<kube::ResponseStream> stream_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// First and last member to reach a step, in ms since the apply started; nullopt: none did.
struct Span {
  std::optional<double> first, last;
  int count = 0;
  void Add(double ms);
};

struct GangStartMilestones {
  int members = 0;
  std::optional<double> job_created;  // the TrainingJob's ADDED event
  Span created, ungated, filtered, bind_asked, devices, bound, bind_answered, running;
  // Per member: gate lifted -> first filter sent (the scheduler's queueing, its poll or
  // watch delay included), and first filter sent -> bind asked (its scheduling cycles).
  std::vector<double> queue_wait_ms, cycle_ms;
};

// `pods` are the watch events of the job's pods; `calls` the scheduler driver's; `apply` when
// the apply started.
GangStartMilestones ReadMilestones(const std::string& job, const std::vector<TimedEvent>& jobs,
                                   const std::vector<TimedEvent>& pods, const std::vector<ExtenderCall>& calls,
                                   SteadyTime apply);

struct Stage {
  std::string name;  // what the interval is
  std::optional<double> ms;
};

// The critical path: apply -> job stored -> first pod -> last pod -> first gate lifted ->
// last gate lifted -> last filter -> last bind asked -> first devices -> last devices ->
// last bound. The stages sum to the last member bound.
std::vector<Stage> CriticalPath(const GangStartMilestones& m);

// The p-th percentile (0..100) of `values` (nearest rank); nullopt when empty.
std::optional<double> Percentile(std::vector<double> values, double p);

}  // namespace phalanx::e2e
