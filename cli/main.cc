// phalanx: the user CLI. Subcommands register themselves (cli/commands.h).
#include "cli/commands.h"
#include "sim/cli/simulate_command.h"

int main(int argc, char** argv) {
  phalanx::cli::CommandRegistry registry;
  phalanx::cli::RegisterVersionCommand(registry);
  phalanx::cli::RegisterTopologyCommand(registry);
  phalanx::sim::RegisterSimulateCommand(registry);
  phalanx::cli::RegisterExplainCommand(registry);
  phalanx::cli::RegisterReportCommand(registry);
  return registry.Run(argc, argv);
}
