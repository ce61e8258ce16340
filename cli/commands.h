// Every subcommand's registration function; main.cc calls each once.
#pragma once

#include "cli/command_registry.h"

namespace phalanx::cli {

void RegisterVersionCommand(CommandRegistry& registry);
void RegisterExplainCommand(CommandRegistry& registry);
void RegisterTopologyCommand(CommandRegistry& registry);
void RegisterReportCommand(CommandRegistry& registry);

}  // namespace phalanx::cli
