// Helpers shared by the Store's source files. Not part of the fake's API.
#pragma once

#include <string>
#include <string_view>

#include "core/json/json.h"

namespace phalanx::fakes::apiserver::internal {

// object["metadata"], created (as an object) when missing or not an object.
json::Json& Meta(json::Json& object);
// The object without metadata and status: what metadata.generation tracks.
json::Json SpecPart(const json::Json& object);
// metadata.<field> when it is a string, else "".
std::string MetaString(const json::Json& object, const char* field);
bool HasFinalizers(const json::Json& object);
std::string HexEncode(std::string_view text);
bool HexDecode(std::string_view hex, std::string* out);

// The version a CRD stores (the one marked storage: true; RegisterCrd accepted the object).
std::string StorageVersionOf(const json::Json& crd);

}  // namespace phalanx::fakes::apiserver::internal
