// ApplyManifest: what `kubectl apply -f` does with a manifest, for scenarios that install
// objects the way a user would (GpuQueues, the chart's CRDs, hand-made gang pods):
//  - the YAML (one or more `---` documents, each an object or a List) is converted to JSON;
//  - each object's resource comes from discovery (/api/v1 or /apis/<group>/<version>: the
//    resource whose kind matches, not a subresource), so a custom resource is known only once
//    its CRD is installed, as with kubectl ("no matches for kind");
//  - namespaced objects go to metadata.namespace, else `default_namespace`;
//  - the object carries kubectl.kubernetes.io/last-applied-configuration (the document itself);
//  - absent: POST (create); present: a merge patch with the document (simpler than kubectl's
//    three-way patch: a field deleted from the manifest is not deleted from the object).
// Objects are applied in document order; the first failure stops and is returned, naming the
// document. Returns the objects as the server answered them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"
#include "core/kube/client.h"

namespace phalanx::e2e {

Result<std::vector<kube::Json>> ApplyManifest(kube::KubeClient& client, std::string_view yaml,
                                              const std::string& default_namespace);

}  // namespace phalanx::e2e
