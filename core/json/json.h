// JSON helpers. nlohmann::json for general use, called only through these functions so
// its exceptions never escape into logic; simdjson (see fast_json.h) for hot paths such
// as the extender's filter request. Thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/base/result.h"

namespace phalanx::json {

using Json = nlohmann::json;

// Parses `text`; on failure the status says where ("line 3, column 7: ...").
// Rejects documents larger than `max_bytes` before parsing them.
Result<Json> Parse(std::string_view text, size_t max_bytes = 64u << 20);

// Serialises compactly (or indented when indent >= 0). Invalid UTF-8 is replaced with
// U+FFFD rather than throwing.
std::string Dump(const Json& value, int indent = -1);

// Typed field access that explains failures with a JSON path, e.g.
// `gpus[3].memoryMiB: expected unsigned integer, got string`.
// `path` is the caller's location of `object` (used only in messages).
Result<std::string> GetString(const Json& object, std::string_view key, std::string_view path);
Result<int64_t> GetInt(const Json& object, std::string_view key, std::string_view path);
Result<uint64_t> GetUint(const Json& object, std::string_view key, std::string_view path);
Result<double> GetNumber(const Json& object, std::string_view key, std::string_view path);
Result<bool> GetBool(const Json& object, std::string_view key, std::string_view path);
// Present-and-of-type, or a clear error; `nullptr` if the key is absent or null.
Result<const Json*> GetOptional(const Json& object, std::string_view key, std::string_view path,
                                Json::value_t type);
Result<const Json*> GetArray(const Json& object, std::string_view key, std::string_view path);
Result<const Json*> GetObject(const Json& object, std::string_view key, std::string_view path);

// Lenient lookup for objects whose fields are all optional (Kubernetes objects): the member,
// or nullptr when `object` is not an object, lacks `key`, or holds null there.
const Json* Member(const Json& object, std::string_view key);

// "string", "unsigned integer", ... for messages.
std::string_view TypeName(const Json& value);
// Joins a path and a key: JoinPath("gpus[3]", "uuid") == "gpus[3].uuid".
std::string JoinPath(std::string_view path, std::string_view key);

}  // namespace phalanx::json
