// `phalanx version`: what this binary is (also printed by --version).
#include <iostream>

#include "cli/commands.h"
#include "core/base/version.h"

namespace phalanx::cli {

void RegisterVersionCommand(CommandRegistry& registry) {
  registry.Add({
      .name = "version",
      .description = "Print the version and commit of this build",
      .configure = nullptr,
      .run = [] {
        std::cout << "phalanx " << kVersion << " (commit " << kGitCommit << ")\n";
        return 0;
      },
  });
}

}  // namespace phalanx::cli
