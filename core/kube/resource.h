// Resource addressing: {group, version, resource (plural)} plus namespace/name/subresource ->
// the REST path a real kube-apiserver serves:
//   core group ("")  /api/v1[/namespaces/<ns>]/<resource>[/<name>[/<subresource>]]
//   named groups     /apis/<group>/<version>[/namespaces/<ns>]/<resource>[/<name>[/<sub>]]
// A namespaced resource with an empty namespace addresses all namespaces (list/watch only).
// Custom resources work the same once their CRD exists: {"phalanx.io", "v1alpha1", "trainingjobs"}.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace phalanx::kube {

struct Resource {
  std::string group;     // "" = core
  std::string version;   // "v1"
  std::string resource;  // lower-case plural: "pods", "leases", "trainingjobs"
  bool namespaced = true;
  std::string kind;      // "Pod"; used when building objects (apply, events), optional otherwise

  std::string ApiVersion() const { return group.empty() ? version : group + "/" + version; }
};

namespace resources {
inline const Resource kPods{"", "v1", "pods", true, "Pod"};
inline const Resource kNodes{"", "v1", "nodes", false, "Node"};
inline const Resource kNamespaces{"", "v1", "namespaces", false, "Namespace"};
inline const Resource kServices{"", "v1", "services", true, "Service"};
inline const Resource kConfigMaps{"", "v1", "configmaps", true, "ConfigMap"};
inline const Resource kSecrets{"", "v1", "secrets", true, "Secret"};
inline const Resource kCoreEvents{"", "v1", "events", true, "Event"};
inline const Resource kEvents{"events.k8s.io", "v1", "events", true, "Event"};
inline const Resource kLeases{"coordination.k8s.io", "v1", "leases", true, "Lease"};
inline const Resource kPriorityClasses{"scheduling.k8s.io", "v1", "priorityclasses", false, "PriorityClass"};
inline const Resource kCustomResourceDefinitions{"apiextensions.k8s.io", "v1", "customresourcedefinitions",
                                                 false, "CustomResourceDefinition"};
inline const Resource kTokenReviews{"authentication.k8s.io", "v1", "tokenreviews", false, "TokenReview"};
inline const Resource kTrainingJobs{"phalanx.io", "v1alpha1", "trainingjobs", true, "TrainingJob"};
}  // namespace resources

// The path (no query). Segments are percent-escaped.
std::string ResourcePath(const Resource& resource, std::string_view ns, std::string_view name = {},
                         std::string_view subresource = {});

// Percent-encodes a query value or path segment (RFC 3986 unreserved characters kept).
std::string UrlEscape(std::string_view text);

// "?a=1&b=x%3Dy" from ordered pairs (empty values are kept: "a="); "" when there are none.
std::string QueryString(const std::vector<std::pair<std::string, std::string>>& params);

}  // namespace phalanx::kube
