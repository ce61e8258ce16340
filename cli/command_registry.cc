#include "cli/command_registry.h"

#include <iostream>

#include "core/base/version.h"

namespace phalanx::cli {

void CommandRegistry::Add(Command command) { commands_.push_back(std::move(command)); }

int CommandRegistry::Run(int argc, char** argv) {
  CLI::App app{"phalanx: topology-aware, gang-atomic GPU scheduling for Kubernetes"};
  app.add_flag_callback(
      "--version",
      [] {
        std::cout << "phalanx " << kVersion << " (commit " << kGitCommit << ")\n";
        throw CLI::Success();
      },
      "Print the version and exit");
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App*, const Command*>> subs;
  for (const Command& c : commands_) {
    CLI::App* sub = app.add_subcommand(c.name, c.description);
    if (c.configure) c.configure(*sub);
    subs.emplace_back(sub, &c);
  }
  // CLI11 reports an unknown first word as "A subcommand is required"; say what is wrong.
  if (argc > 1 && argv[1][0] != '-') {
    std::string word = argv[1];
    bool known = false;
    for (const Command& c : commands_) known = known || c.name == word;
    if (!known) {
      std::cerr << "phalanx: unknown command \"" << word << "\" (run 'phalanx --help' for the list)\n";
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  for (auto& [sub, command] : subs) {
    if (sub->parsed()) return command->run();
  }
  return 2;  // unreachable: require_subcommand(1)
}

}  // namespace phalanx::cli
