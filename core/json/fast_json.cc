#include "core/json/fast_json.h"

#include <cstring>

#include <fmt/format.h>

namespace phalanx::json {

Result<simdjson::ondemand::document*> FastJsonParser::Iterate(std::string_view text) {
  // Reuse the padded buffer when it is large enough: the hot path allocates nothing
  // once warmed up.
  // (A fresh parser has no buffer at all, not even padding: an empty text needs one too.)
  if (buffer_.data() == nullptr || buffer_.size() < text.size() || buffer_.size() > 4 * text.size() + 4096) {
    buffer_ = simdjson::padded_string(text.size());
  }
  // An empty view may have no data at all (memcpy wants a valid source even for 0 bytes:
  // UBSan, fuzz/regressions/watch_event/empty-input).
  if (!text.empty()) std::memcpy(buffer_.data(), text.data(), text.size());
  // simdjson reads the padding as if it were fresh (zeros): on a malformed document its
  // on-demand iterator can step onto the byte just past the text, and a reused buffer held the
  // previous, longer document there, from which it walked into that document's stale structural
  // indexes (raw views ~4 GB long; fuzz/regressions/extender_filter_args, FastJsonTest).
  std::memset(buffer_.data() + text.size(), 0, simdjson::SIMDJSON_PADDING);
  length_ = text.size();
  simdjson::padded_string_view view(buffer_.data(), text.size(), buffer_.size() + simdjson::SIMDJSON_PADDING);
  auto err = parser_.iterate(view).get(doc_);
  if (err) return SimdjsonError(err, "malformed JSON");
  return &doc_;
}

Status SimdjsonError(simdjson::error_code code, std::string_view context) {
  return InvalidArgumentError(fmt::format("{}: {}", context, simdjson::error_message(code)));
}

}  // namespace phalanx::json
