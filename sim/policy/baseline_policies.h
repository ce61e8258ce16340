// Factories of the baseline policies (policies.h describes them).
#pragma once

#include <memory>

#include "sim/engine/simulator.h"

namespace phalanx::sim {

std::unique_ptr<Policy> MakeGangFifoPolicy();
std::unique_ptr<Policy> MakeGangBinpackPolicy();
std::unique_ptr<Policy> MakeK8sDefaultPolicy();

}  // namespace phalanx::sim
