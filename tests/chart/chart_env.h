// Where the chart tests find the source tree, the build tree, helm and the daemons, and a small
// process runner. Source and build paths are compiled in (never read from the environment);
// PHALANX_HELM may point at another helm binary (an external tool, not a Phalanx binary).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace phalanx::chart_test {

struct CommandResult {
  int exit_code = -1;   // -1: could not be started or killed by a signal
  std::string out;      // stdout
  std::string err;      // stderr
};

// Runs argv[0] with arguments (no shell interpretation of the arguments), capturing both streams.
CommandResult RunCommand(const std::vector<std::string>& argv);

std::string SourceDir();
std::string BinaryDir();
std::string ReadFile(const std::string& path);  // "" if missing
bool FileExists(const std::string& path);

// The pinned helm binary: PHALANX_HELM if set, else <build>/tools/helm/helm, fetched with
// scripts/fetch-helm.sh when missing. On failure, `error` says why (fetch output included) and
// the caller must FAIL, never skip: a chart that was not checked is not a passing chart.
struct HelmLocation {
  std::string path;
  std::string error;
};
const HelmLocation& Helm();

// A built daemon binary (<build>/<dir>/<name>) or nullopt when it has not been built.
std::optional<std::string> DaemonBinary(const std::string& dir, const std::string& name);

}  // namespace phalanx::chart_test
