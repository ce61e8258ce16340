// The four PATCH content types of the real API server, applied to a JSON object:
//   application/merge-patch+json            RFC 7386 (null deletes a key, lists replace)
//   application/json-patch+json             RFC 6902 (add/remove/replace/move/copy/test)
//   application/strategic-merge-patch+json  merge patch, except that a few well-known lists of
//                                           objects merge by their key (conditions by type,
//                                           containers/volumes/env by name, ownerReferences by
//                                           uid) and `finalizers` merges as a set; no $patch,
//                                           $retainKeys or $setElementOrder directives
//   application/apply-patch+yaml            server-side apply, simplified: the YAML/JSON body is
//                                           merged like a strategic merge patch, after removing
//                                           the fields the same field manager applied last time
//                                           and no longer applies (RemoveDroppedFields; no
//                                           managedFields, no ownership conflicts between managers)
// Pure functions. Thread-safe.
#pragma once

#include <string_view>
#include <vector>

#include "core/base/result.h"
#include "core/json/json.h"

namespace phalanx::fakes::apiserver {

enum class PatchType { kMerge, kJson, kStrategic, kApply };

// From a Content-Type header (parameters ignored); kInvalidArgument for anything else.
Result<PatchType> PatchTypeFromContentType(std::string_view content_type);

// Parses `body` for `type` (YAML allowed for apply) and applies it to `target`.
// kInvalidArgument: malformed patch (HTTP 400); kFailedPrecondition: a json-patch operation
// failed, including a `test` (HTTP 422).
Result<json::Json> ApplyPatch(const json::Json& target, PatchType type, std::string_view body);

// RFC 7386 with the strategic list merges described above when `strategic`.
void MergeInto(json::Json& target, const json::Json& patch, bool strategic);

// Server-side apply's "a manager that stops applying a field removes it": erases from `target`
// every field that `before` (the manager's previous applied configuration) set and `now` (its
// new one) does not; recurses through objects present in both. Lists are atomic.
void RemoveDroppedFields(json::Json& target, const json::Json& before, const json::Json& now);

// YAML (a superset of JSON) to JSON; kInvalidArgument with the parser's position on error.
Result<json::Json> YamlToJson(std::string_view text);
// Every document of a multi-document (`---`) YAML stream.
Result<std::vector<json::Json>> YamlDocumentsToJson(std::string_view text);

}  // namespace phalanx::fakes::apiserver
