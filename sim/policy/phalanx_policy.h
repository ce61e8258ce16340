// Factory of the `phalanx` policy (policies.h).
#pragma once

#include <memory>

#include "sim/policy/policies.h"

namespace phalanx::sim {

std::unique_ptr<Policy> MakePhalanxPolicy(const PolicyOptions& options);

}  // namespace phalanx::sim
