// MIG requests of a Pod (`nvidia.com/mig-<profile>`, the device plugin's mixed strategy),
// parsed from the Pod spec by ParsePod (k8s_objects.cc) into PodInfo::mig.
// Pure; thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/base/result.h"
#include "core/json/json.h"
#include "core/placement/mig.h"

namespace phalanx::extender {

// Profile -> devices, effective request (containers summed, init containers' max).
using MigRequests = std::map<std::string, int, std::less<>>;

struct ParsedMigRequests {
  MigRequests requests;
  std::string container;  // first container requesting MIG devices (devices annotation key)
};

// From a Pod's `spec`. Quantities as ParseCountQuantity; InvalidArgument with a JSON path
// for a malformed or out-of-range one.
Result<ParsedMigRequests> ParseMigRequests(const json::Json& pod_spec);

// The single MIG request the extender schedules: nullopt without MIG requests;
// InvalidArgument for a pod asking for several profiles (not supported).
Result<std::optional<placement::MigRequest>> SingleMigRequest(const MigRequests& requests);

}  // namespace phalanx::extender
