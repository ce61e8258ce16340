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

  // Whether `view` lies inside the text of the current document. simdjson's on-demand
  // raw_json_token()/raw_json() trust the structural index they walk; on malformed input
  // that index can hold entries left by an earlier, longer document, and the view they give
  // then points anywhere (fuzz/regressions/extender_filter_args; Iterate() now zeroes the
  // padding that led there). Check a raw view before reading it all the same.
  bool Contains(std::string_view view) const {
    const char* begin = buffer_.data();
    return view.data() >= begin && view.size() <= length_ &&
           static_cast<size_t>(view.data() - begin) <= length_ - view.size();
  }

 private:
  simdjson::ondemand::parser parser_;
  simdjson::padded_string buffer_;
  simdjson::ondemand::document doc_;
  size_t length_ = 0;  // of the current document's text in buffer_
};

// "<simdjson error text>" as an InvalidArgument status with context.
Status SimdjsonError(simdjson::error_code code, std::string_view context);

}  // namespace phalanx::json
