// The `phalanx` CLI's subcommand registry. Each subcommand lives in its own file and
// registers itself from a Register<Name>Command(CommandRegistry&) function listed in
// main.cc, so adding one (simulate, topology, explain, ...) touches no other command.
// Not thread-safe; used only from main.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace phalanx::cli {

// What a subcommand gives the registry: its CLI11 options (bound to state the command
// owns) and the function that runs it, returning the process exit code.
struct Command {
  std::string name;
  std::string description;
  // Adds flags/positionals to `app` (the subcommand's own CLI::App).
  std::function<void(CLI::App& app)> configure;
  std::function<int()> run;
};

class CommandRegistry {
 public:
  void Add(Command command);
  const std::vector<Command>& commands() const { return commands_; }

  // Parses argv, runs the chosen subcommand and returns its exit code. Usage errors
  // print CLI11's message and exit with 2 (as coreutils and kubectl do).
  int Run(int argc, char** argv);

 private:
  std::vector<Command> commands_;
};

}  // namespace phalanx::cli
