// MutatingAdmission: kube-apiserver's MutatingAdmissionWebhook plugin, for CREATE of core/v1
// Pods (the one request Phalanx's webhook takes). For each MutatingWebhookConfiguration (sorted
// by name) and each of its webhooks, in order:
//  - matches `rules` (operations CREATE or *, apiGroups ""/*, apiVersions v1/*, resources
//    pods/*, scope Namespaced/*), `namespaceSelector` against the namespace's labels (which, as
//    on a real server, always include kubernetes.io/metadata.name=<name>) and `objectSelector`
//    against the pod's labels (metav1.LabelSelector: matchLabels, matchExpressions In, NotIn,
//    Exists, DoesNotExist; absent = everything);
//  - needs `admissionReviewVersions` to contain v1 and `sideEffects` None/NoneOnDryRun, like
//    the real server's validation (otherwise the call counts as failed);
//  - POSTs an admission.k8s.io/v1 AdmissionReview over HTTPS to clientConfig.url or to
//    clientConfig.service (name, namespace, port default 443, path), resolved through the
//    Service's port to its Endpoints (first address, the port of the same name), verifying the
//    server certificate against `caBundle` for the name <service>.<namespace>.svc (SNI too), as
//    kube-apiserver does; an empty caBundle means the system roots (which trust nothing here);
//  - waits at most `timeoutSeconds` (default 10);
//  - a failed call (TLS, connection, timeout, non-200, malformed or mismatched uid) is skipped
//    under failurePolicy Ignore and rejects the create (500 InternalError "failed calling
//    webhook") under Fail (the default); `allowed: false` rejects it with the webhook's status
//    (default 403); a JSONPatch (patchType JSONPatch, base64) is applied to the pod before the
//    next webhook sees it.
// Not modelled: reinvocationPolicy (webhooks run once), matchPolicy Equivalent conversions,
// matchConditions, validating webhooks, updates and other resources. Calls run on the request's
// thread (a hanging webhook holds one of the fake's io threads up to its timeout).
// Thread-safe (reads the Store; keeps no state).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/json/json.h"
#include "tests/fakes/apiserver/api_error.h"
#include "tests/fakes/apiserver/kind_registry.h"
#include "tests/fakes/apiserver/store.h"

namespace phalanx::fakes::apiserver {

// One call made, for assertions and the README's request log.
struct WebhookCall {
  std::string webhook;  // the webhook's name
  std::string outcome;  // "patched", "allowed", "denied", "failed: <why>", "ignored: <why>"
};

class MutatingAdmission {
 public:
  MutatingAdmission(Store& store, KindRegistry& kinds) : store_(store), kinds_(kinds) {}

  // Runs the matching webhooks on `pod` (created in `namespace_`), patching it in place.
  // nullopt = admitted; otherwise the error the API server answers. `on_call` (may be null)
  // sees every call.
  std::optional<ApiError> AdmitPodCreate(const std::string& namespace_, json::Json& pod,
                                         const std::function<void(const WebhookCall&)>& on_call = nullptr) const;

 private:
  std::vector<json::Json> Objects(const std::string& storage_key, const std::string& namespace_) const;
  json::Json Find(const std::string& storage_key, const std::string& namespace_, const std::string& name) const;

  Store& store_;
  KindRegistry& kinds_;
};

// metav1.LabelSelector against a labels object; a malformed selector matches nothing.
bool LabelSelectorMatches(const json::Json& selector, const json::Json& labels);

}  // namespace phalanx::fakes::apiserver
