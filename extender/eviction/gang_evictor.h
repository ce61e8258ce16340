// GangEvictor: evicts the members of preempted gangs that the extender itself must remove
// (those not on the node kube-scheduler deletes victims from), on its own thread so a
// PodDisruptionBudget retry never delays binds on the I/O worker (issue 15 item 5).
//
// A gang is never left partly evicted:
//   - the extender checks every member's budgets before accepting a victim set
//     (extender/eviction/pod_disruption_budgets.h), so a refusal here is a race with another disruption;
//   - a 429 on the first eviction of a set that nothing else disrupted yet (no member handed to
//     kube-scheduler) abandons the whole set: nothing changed, a Warning Event says why;
//   - once any member is gone, the gang cannot run anyway: a refused eviction is retried with
//     exponential backoff until `deadline`, then the remaining members are deleted (condition
//     DisruptionTarget PreemptionByScheduler, then DELETE: what kube-scheduler does to its own
//     victims) and a Warning Event names the budget that was overridden.
// Outcomes are reported through `report` (Events, counters). Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "extender/writes/cluster_writer.h"

namespace phalanx::extender {

struct EvictionJob {
  std::string group;       // "ns/gang", or "ns/pod" for a pod outside any gang
  std::string preemptor;   // "ns/name" (or "gang ns/name")
  std::vector<PodRef> pods;
  bool others_disrupted = false;  // some member was handed to kube-scheduler to delete
};

struct EvictionReport {
  enum class Outcome { kEvicted, kRefused, kForced };
  Outcome outcome = Outcome::kEvicted;
  EvictionJob job;
  std::string message;       // in words
  std::vector<PodRef> done;  // evicted (or deleted, kForced) members
  int write_errors = 0;
};

struct GangEvictorOptions {
  std::chrono::milliseconds deadline{60'000};       // per job, for retries of refused evictions
  std::chrono::milliseconds initial_backoff{500};
  std::chrono::milliseconds max_backoff{8'000};
};

class GangEvictor {
 public:
  using ReportFn = std::function<void(const EvictionReport&)>;

  explicit GangEvictor(ClusterWriter& writer, GangEvictorOptions options = {});
  ~GangEvictor();  // finishes queued jobs (retries end early), then joins
  GangEvictor(const GangEvictor&) = delete;
  GangEvictor& operator=(const GangEvictor&) = delete;

  void SetReport(ReportFn report);
  void SetOptions(GangEvictorOptions options);
  void Submit(EvictionJob job);
  void Drain();  // waits until every submitted job has finished

 private:
  void Loop();
  EvictionReport Run(const EvictionJob& job);
  bool SleepFor(std::chrono::milliseconds d);  // false when stopping

  ClusterWriter& writer_;
  std::mutex mu_;
  std::condition_variable cv_, idle_cv_;
  GangEvictorOptions options_;  // guarded by mu_
  ReportFn report_;             // guarded by mu_
  std::deque<EvictionJob> jobs_;
  bool busy_ = false, stop_ = false;
  std::thread thread_;  // last
};

}  // namespace phalanx::extender
