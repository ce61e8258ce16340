// Hot-path JSON reading with simdjson's on-demand parser (extender filter/prioritize).
// A FastJsonParser owns reusable buffers: keep one per thread. Not thread-safe.
#pragma once

#include <string>
#include <string_view>

#include <simdjson.h>

#include "core/base/result.h"

namespace phalanx::json {

class FastJsonParser {
 public:
  // Copies `text` into an internally padded buffer (simdjson needs SIMDJSON_PADDING bytes
  // of readable slack) and starts an on-demand document over it. The returned document
  // borrows this parser: use it before the next Iterate() call.
  Result<simdjson::ondemand::document*> Iterate(std::string_view text);

 private:
  simdjson::ondemand::parser parser_;
  simdjson::padded_string buffer_;
  simdjson::ondemand::document doc_;
};

// "<simdjson error text>" as an InvalidArgument status with context.
Status SimdjsonError(simdjson::error_code code, std::string_view context);

}  // namespace phalanx::json
