#include "extender/writes/kube_cluster_writer.h"

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "core/kube/api_error.h"
#include "core/log/log.h"
#include "extender/objects/k8s_objects.h"

namespace phalanx::extender {
namespace {

using kube::Json;
using kube::resources::kPods;
using kube::resources::kTrainingJobs;

constexpr int kUngateAttempts = 5;
constexpr std::chrono::milliseconds kUngateRetryDelay{100};  // doubled per attempt: 1.5 s in all

}  // namespace

KubeClusterWriter::KubeClusterWriter(kube::KubeClient& client, metrics::Registry* registry,
                                     std::shared_ptr<spdlog::logger> logger)
    : client_(client), logger_(std::move(logger)) {
  if (registry) {
    auto family = registry->AddCounter("phalanx_extender_api_writes_total",
                                       "API writes of the extender by verb (devices, bind, ungate, evict, "
                                       "preempt-request) and result (ok, error).",
                                       {"verb", "result"});
    if (family.ok()) writes_ = *family;
  }
}

Status KubeClusterWriter::Done(const char* verb, const std::string& target, Status status) {
  if (writes_) {
    if (auto c = writes_->WithLabels({verb, status.ok() ? "ok" : "error"}); c.ok()) (*c)->Inc();
  }
  if (!status.ok()) {
    PHX_LOG_WARN(logger_, "API write failed", kv("verb", verb), kv("target", target), kv("err", status.message()));
  } else {
    PHX_LOG_DEBUG(logger_, "API write", kv("verb", verb), kv("target", target));
  }
  return status;
}

Status KubeClusterWriter::PatchPodDevices(const PodRef& pod, const std::string& devices_json) {
  const Json value = devices_json.empty() ? Json(nullptr) : Json(devices_json);  // null removes it
  const Json patch = {{"metadata", {{"annotations", {{std::string(kDevicesAnnotation), value}}}}}};
  return Done(devices_json.empty() ? "devices-undo" : "devices", pod.Key(), client_.Patch(kPods, pod.ns, pod.name, kube::PatchType::kMerge, patch).status());
}

Status KubeClusterWriter::BindPod(const PodRef& pod, const std::string& node) {
  // The Binding carries the pod's uid: a pod deleted and re-created under the same name since
  // the scheduler saw it gets 409 instead of being bound in the old one's place.
  Status st = client_.Bind(pod.ns, pod.name, node, pod.uid);
  if (kube::IsConflict(st)) {
    auto current = client_.Get(kPods, pod.ns, pod.name);
    if (current.ok()) {
      const Json& meta = (*current)["metadata"];
      const std::string uid = meta.is_object() ? meta.value("uid", "") : "";
      const Json& spec = (*current)["spec"];
      if (!pod.uid.empty() && uid != pod.uid) {
        // Not retryable: the pod this bind was for is gone; the new one is scheduled afresh.
        st = FailedPreconditionError(fmt::format(
            "pod {} was replaced (uid {} expected, {} found): not bound; the scheduler schedules the new pod",
            pod.Key(), pod.uid, uid));
      } else if (spec.is_object() && spec.value("nodeName", "") == node) {
        st = OkStatus();  // "already assigned": a retried Binding whose first attempt landed is done
      }
    } else if (IsNotFound(current.status())) {
      st = FailedPreconditionError(fmt::format("pod {} no longer exists: not bound", pod.Key()));
    }
  }
  return Done("bind", pod.Key(), std::move(st));
}

Status KubeClusterWriter::RequeuePod(const PodRef& pod, const std::string& stamp) {
  // The uid is a precondition: a pod re-created under the same name is not touched.
  Json patch = {{"metadata", {{"annotations", {{std::string(kRequeueAnnotation), stamp}}}}}};
  if (!pod.uid.empty()) patch["metadata"]["uid"] = pod.uid;
  Status st = client_.Patch(kPods, pod.ns, pod.name, kube::PatchType::kMerge, patch).status();
  if (IsNotFound(st) || kube::IsConflict(st)) st = OkStatus();  // gone or replaced: nothing to requeue
  return Done("requeue", pod.Key(), std::move(st));
}

Status KubeClusterWriter::LiftGangGate(const PodRef& pod) {
  Status st = OkStatus();
  for (int attempt = 0; attempt < kUngateAttempts; ++attempt) {
    auto current = client_.Get(kPods, pod.ns, pod.name);
    if (!current.ok()) {
      st = current.status();
      if (IsNotFound(st)) st = OkStatus();  // gone: nothing to lift
      break;
    }
    const Json& meta = (*current)["metadata"];
    if (!pod.uid.empty() && meta.is_object() && meta.value("uid", "") != pod.uid) {
      st = OkStatus();  // a different pod of the same name: not ours to ungate
      break;
    }
    const Json* spec = current->contains("spec") ? &(*current)["spec"] : nullptr;
    Json gates = spec && spec->contains("schedulingGates") ? (*spec)["schedulingGates"] : Json::array();
    if (!gates.is_array()) gates = Json::array();
    Json remaining = Json::array();
    for (const Json& g : gates) {
      if (!(g.is_object() && g.value("name", "") == kGangGate)) remaining.push_back(g);
    }
    if (remaining.size() == gates.size()) {
      st = OkStatus();  // already lifted
      break;
    }
    Json ops = Json::array();
    ops.push_back({{"op", "test"}, {"path", "/spec/schedulingGates"}, {"value", gates}});
    if (remaining.empty()) {
      ops.push_back({{"op", "remove"}, {"path", "/spec/schedulingGates"}});
    } else {
      ops.push_back({{"op", "replace"}, {"path", "/spec/schedulingGates"}, {"value", remaining}});
    }
    st = client_.Patch(kPods, pod.ns, pod.name, kube::PatchType::kJsonPatch, ops).status();
    // A failed `test` (the gates changed under us: 422, or 409 on some servers) re-reads. So does
    // a transient failure (5xx, timeout, reset, 429): the client retries a PATCH only on 503, and
    // nothing else lifts an admitted gang's gates again (the ledger already counts them lifted),
    // so giving up here left the gang gated until its plan expired. Re-reading first makes the
    // retry safe when the lost patch was applied.
    if (st.ok()) break;
    if (st.code() == StatusCode::kUnavailable || kube::IsTooManyRequests(st)) {
      std::this_thread::sleep_for(kUngateRetryDelay * (1 << attempt));
      continue;
    }
    if (!(kube::IsInvalid(st) || kube::IsConflict(st))) break;
  }
  return Done("ungate", pod.Key(), std::move(st));
}

Status KubeClusterWriter::EvictPod(const PodRef& pod, const std::string& reason) {
  // Nothing is written before the eviction: a PodDisruptionBudget refusal (429) must change
  // nothing. The API server adds DisruptionTarget (EvictionByEvictionAPI) itself when it evicts;
  // the preemptor is named in the extender's Event on the pod.
  (void)reason;
  kube::DeleteOptions options;
  if (!pod.uid.empty()) options.precondition_uid = pod.uid;
  Status st = client_.Evict(pod.ns, pod.name, options);
  if (IsNotFound(st)) st = OkStatus();  // already gone
  return Done("evict", pod.Key(), std::move(st));
}

Status KubeClusterWriter::DeletePod(const PodRef& pod, const std::string& reason) {
  // As kube-scheduler's preemption: the condition says why, then the pod is deleted.
  // "PreemptionByScheduler: <preemptor>" -> condition reason + message.
  const auto colon = reason.find(':');
  const std::string cond_reason = colon == std::string::npos ? reason : reason.substr(0, colon);
  const std::string message = colon == std::string::npos ? reason : reason.substr(colon + 1 + (reason.size() > colon + 1 && reason[colon + 1] == ' '));
  const Json condition = {{"type", "DisruptionTarget"},
                          {"status", "True"},
                          {"reason", cond_reason.empty() ? "PreemptionByScheduler" : cond_reason},
                          {"message", fmt::format("phalanx-extender: {}", message)},
                          {"lastTransitionTime", FormatRfc3339(std::chrono::system_clock::now())}};
  const Json patch = {{"status", {{"conditions", Json::array({condition})}}}};
  kube::PatchOptions status_only;
  status_only.subresource = "status";
  Status cond = client_.Patch(kPods, pod.ns, pod.name, kube::PatchType::kStrategicMerge, patch, status_only).status();
  if (!cond.ok() && !IsNotFound(cond)) (void)Done("disruption-condition", pod.Key(), cond);  // it only explains
  kube::DeleteOptions options;
  if (!pod.uid.empty()) options.precondition_uid = pod.uid;
  Status st = client_.Delete(kPods, pod.ns, pod.name, options).status();
  if (IsNotFound(st)) st = OkStatus();
  return Done("delete", pod.Key(), std::move(st));
}

Status KubeClusterWriter::RequestGracefulPreemption(const std::string& ns, const std::string& job,
                                                    const std::string& request_json) {
  const Json patch = {{"metadata", {{"annotations", {{std::string(kPreemptRequestAnnotation), request_json}}}}}};
  return Done("preempt-request", ns + "/" + job,
              client_.Patch(kTrainingJobs, ns, job, kube::PatchType::kMerge, patch).status());
}

}  // namespace phalanx::extender
