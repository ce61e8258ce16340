// Installs or upgrades CustomResourceDefinitions with server-side apply, the way
// `kubectl apply --server-side --force-conflicts` does, and waits until each is Established.
//
// Why: `helm upgrade` never touches a chart's crds/ directory, so a release that adds a CRD
// (GpuQueue) or a field to one would run against the old definitions. The chart's pre-upgrade
// hook runs `phalanx-operator apply-crds`, which calls this (docs/install.md "Upgrading").
//
// Every manifest is checked before anything is written (bad input changes nothing). Server-side
// apply with one field manager removes fields an older release applied and this one does not;
// fields other managers own (e.g. a caBundle written by a conversion webhook's injector) stay.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "core/base/result.h"
#include "core/kube/client.h"

namespace phalanx::kube {

struct CrdApplyOptions {
  std::string field_manager = "phalanx-crds";
  // How long to wait for Established (and NamesAccepted) after each apply.
  std::chrono::milliseconds established_timeout{60'000};
  std::chrono::milliseconds poll_interval{200};
};

struct CrdApplyOutcome {
  enum class Change { kCreated, kUpdated, kUnchanged };
  std::string name;  // e.g. "gpuqueues.phalanx.io"
  Change change = Change::kUnchanged;
  int64_t generation = 0;
};
std::string_view ChangeName(CrdApplyOutcome::Change change);

// A manifest's metadata.name after checking it is one apiextensions.k8s.io/v1
// CustomResourceDefinition; kInvalidArgument naming what is wrong otherwise.
Result<std::string> CheckCrdManifest(std::string_view yaml);

// Checks every manifest, then applies them in order. Stops at the first failure (the error names
// the CRD; the ones before it are applied, which is safe: each is complete on its own).
Result<std::vector<CrdApplyOutcome>> ApplyCrds(KubeClient& client, const std::vector<std::string>& manifests,
                                               const CrdApplyOptions& options = {});

}  // namespace phalanx::kube
