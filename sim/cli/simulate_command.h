// `phalanx simulate`: replays a trace on a described cluster under one or more
// policies and prints the comparison (docs/simulator.md).
#pragma once

#include "cli/command_registry.h"

namespace phalanx::sim {

void RegisterSimulateCommand(cli::CommandRegistry& registry);

}  // namespace phalanx::sim
