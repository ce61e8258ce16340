// `phalanx-operator apply-crds`: installs or upgrades this release's CRDs with server-side
// apply and exits (the chart's pre-upgrade hook; docs/install.md "Upgrading").
#pragma once

#include <chrono>
#include <string>

namespace phalanx::op {

struct ApplyCrdsFlags {
  std::string kubeconfig;
  std::chrono::seconds timeout{60};  // per CRD, until Established
};

// Exit status: 0 applied (each CRD's outcome logged), 1 the API server refused or timed out,
// 2 bad configuration (no kubeconfig).
int RunApplyCrds(const ApplyCrdsFlags& flags);

}  // namespace phalanx::op
