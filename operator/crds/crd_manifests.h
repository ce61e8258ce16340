// The CustomResourceDefinitions the chart ships (helm/phalanx/crds), compiled in at build time
// so `phalanx-operator apply-crds` (the chart's pre-upgrade hook) applies exactly the
// definitions of this release. Generated from the YAML files by operator/CMakeLists.txt.
#pragma once

#include <string>
#include <vector>

namespace phalanx::op {

struct CrdManifest {
  std::string file;  // e.g. "phalanx.io_gpuqueues.yaml"
  std::string yaml;
};

const std::vector<CrdManifest>& ChartCrdManifests();

}  // namespace phalanx::op
