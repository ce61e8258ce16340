// The gang-gate mutating admission webhook (issue 15 item 7, docs/user-guide.md §2): a Pod
// created with a gang label (phalanx.io/gang or its alias) but without the phalanx.io/gang
// scheduling gate gets the gate, so it waits for gang admission outside the scheduler queue
// instead of failing filter and sitting in kube-scheduler's backoff (~20 s). So does a pod
// that the extender treats as an implicit gang of one (k8s_objects.h FormsImplicitGang: a
// phalanx.io/queue label, whole nvidia.com/gpu requested, no MIG device, no gang label),
// so that its queue's quota admits it (docs/user-guide.md §7).
//
// admission.k8s.io/v1 AdmissionReview in, AdmissionReview out. Never blocks a pod: every
// well-formed review is answered `allowed: true`, with a JSONPatch only when the gate is added.
// Pods are left alone when they are not a CREATE of a Pod, not a gang member, already gated,
// already bound (spec.nodeName: the API server rejects gates on those) or meant for another
// scheduler (a gate nobody lifts would hold them forever). A malformed review gets 400 with
// what and where; it changes nothing.
// Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace phalanx::extender {

inline constexpr std::string_view kWebhookPath = "/mutate-pods";

struct WebhookOptions {
  // Only pods with this spec.schedulerName are gated (the chart's scheduler.schedulerName).
  std::string scheduler_name = "phalanx-scheduler";
};

struct WebhookReply {
  int status = 200;   // 200 with an AdmissionReview, or 400 with {"Error":"..."}
  std::string body;
  bool patched = false;  // the gate was added
};

WebhookReply ReviewPodAdmission(std::string_view request_body, const WebhookOptions& options);

}  // namespace phalanx::extender
