// phalanx_build_info{version,commit} = 1: which build is running, joinable onto any
// other series (STYLE §2.5). Callers pass phalanx::kVersion and phalanx::kGitCommit from
// core/base/version.h (generated at configure time). Thread-safe (via Registry).
#pragma once

#include <string>

#include "core/base/status.h"
#include "core/metrics/registry.h"

namespace phalanx::metrics {

inline constexpr std::string_view kBuildInfoName = "phalanx_build_info";

// Registers the gauge and sets {version, commit} to 1. Errors only if the name is
// already taken by a family of another shape (kAlreadyExists).
Status RegisterBuildInfo(Registry& registry, std::string version, std::string commit);

}  // namespace phalanx::metrics
