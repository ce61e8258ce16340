// SchedulerDriver: plays kube-scheduler (v1.26) with the Phalanx extender configured as in the
// chart (helm/phalanx/templates/scheduler/configmap.yaml: urlPrefix .../v1, filter, prioritize,
// preempt, bind verbs, nodeCacheCapable, managedResources nvidia.com/gpu), for pods of
// `scheduler_name`:
//  - skips pods with scheduling gates (unless !respect_scheduling_gates), bound pods and
//    terminating pods; highest priority first,
//    then oldest;
//  - "in-tree" fit: the pod's nvidia.com/gpu against node allocatable minus the pods bound to
//    the node (terminating ones included), the pods it assumed (binds in flight) and the pods
//    of at least its priority nominated to the node (preemptors waiting for their victims);
//  - POST <prefix>/filter {Pod, Nodes:null, NodeNames} -> prioritize (only when >= 2 nodes
//    pass) -> assume the pod on the best node and POST <prefix>/bind {PodName, PodNamespace,
//    PodUID, Node} on its own thread (the extender may hold it: the gang barrier), so other pods
//    keep being scheduled meanwhile, as the real scheduler does;
//  - when no node passes: preemption as DefaultPreemption does it: per node, the lower-priority
//    pods whose removal makes the pod fit (reprieving the highest-priority ones that can stay),
//    POST <prefix>/preempt {Pod, NodeNameToMetaVictims}, pick the node among the answer (fewest,
//    then lowest-priority victims), add DisruptionTarget (PreemptionByScheduler) to each victim
//    and delete it, and set the preemptor's status.nominatedNodeName. A pod whose nominated node
//    still has terminating lower-priority pods waits instead of preempting again.
// Retries: with `kube_scheduler_queue`, kube-scheduler v1.26's queue (scheduling_queue.h:
// backoff 1-10 s, unschedulablePods left only on a pod update, a move event or after 5 min);
// without it (the default, which the older scenarios were written against), a fixed
// `retry_unschedulable` after every failure.
// Every request and answer to the extender is recorded (for assertions on the wire format).
// Polls the API server every `poll` on its own thread between Start() and Stop().
#pragma once

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/kube/client.h"
#include "tests/e2e/drivers/scheduling_queue.h"

namespace phalanx::e2e {

struct SchedulerDriverOptions {
  std::string scheduler_name = "phalanx-scheduler";
  std::string extender_url;  // "http://127.0.0.1:PORT/v1" (the chart's urlPrefix)
  std::chrono::milliseconds poll{50};
  bool kube_scheduler_queue = false;                   // model v1.26's queue (see above)
  // false: kube-scheduler v1.26 as it comes, with PodSchedulingReadiness (alpha) off, so
  // spec.schedulingGates mean nothing to it and gated pods are tried like any other.
  bool respect_scheduling_gates = true;
  SchedulingQueueOptions queue;
  std::chrono::milliseconds retry_unschedulable{250};  // without the queue model: retry after a failure
  std::chrono::seconds http_timeout{60};               // the chart's httpTimeout (>= 30 s)
};

struct ExtenderCall {
  std::string verb;  // filter, prioritize, preempt, bind
  std::string pod;   // "<ns>/<name>"
  int status = 0;    // HTTP status, 0 = transport error
  std::string request, response;
  // When the request was sent and the answer (or failure) came back: a held bind's answer
  // comes when the gang's barrier releases it.
  std::chrono::steady_clock::time_point sent, answered;
};

class SchedulerDriver {
 public:
  SchedulerDriver(SchedulerDriverOptions options, kube::KubeClient& client);
  ~SchedulerDriver();
  SchedulerDriver(const SchedulerDriver&) = delete;
  SchedulerDriver& operator=(const SchedulerDriver&) = delete;

  void Start();
  void Stop();
  // Points at another extender URL (an extender restarted on a new port).
  void SetExtenderUrl(std::string url);

  // Leaves pods with this label value alone (a slow scheduler) until Release(); "" = none.
  void Hold(std::string label, std::string value);
  void Release();

  std::vector<ExtenderCall> calls() const;
  std::vector<std::string> errors() const;
  // Pods deleted as preemption victims, in order ("<ns>/<name>").
  std::vector<std::string> victims() const;
  // The queue model's move events so far (empty without it).
  std::vector<std::string> queue_events() const;

 private:
  struct Assumed {
    std::string node;
    int64_t gpus = 0;
  };

  void Loop();
  void ScheduleOnce();
  void TrySchedule(const kube::Json& pod, const kube::Json& nodes, const kube::Json& pods);
  void Preempt(const kube::Json& pod, const kube::Json& nodes, const kube::Json& pods,
               const std::set<std::string>& unresolvable);
  // POSTs to the extender; the parsed answer or null on a transport/HTTP/JSON failure.
  kube::Json Call(const std::string& verb, const std::string& pod_key, const kube::Json& body);
  void Bind(kube::Json pod, std::string node, int64_t gpus);
  void AttemptFailed(const std::string& uid);  // back into the queue (or the fixed retry)
  void Error(std::string message);

  const SchedulerDriverOptions options_;
  kube::KubeClient& client_;

  mutable std::mutex mu_;
  std::string extender_url_;
  std::string hold_label_, hold_value_;
  std::map<std::string, Assumed> assumed_;                                    // uid -> node
  std::map<std::string, std::chrono::steady_clock::time_point> retry_after_;  // uid -> not before
  SchedulingQueueModel queue_;                                                // with kube_scheduler_queue
  std::vector<ExtenderCall> calls_;
  std::vector<std::string> errors_;
  std::vector<std::string> victims_;
  std::vector<std::future<void>> binds_;

  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace phalanx::e2e
