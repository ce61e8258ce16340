// Seed documents for the fake API server: JSON (an object, an array of objects, or a List with
// items) or YAML (one or more `---`-separated documents, each an object or a List).
// Pure. Thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"
#include "core/json/json.h"

namespace phalanx::fakes::apiserver {

Result<std::vector<json::Json>> ParseSeedDocument(std::string_view text);
Result<std::vector<json::Json>> LoadSeedFile(const std::string& path);

}  // namespace phalanx::fakes::apiserver
