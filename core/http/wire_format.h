// HTTP/1.1 response framing (RFC 9112): status line + headers, chunk framing, and the JSON error
// bodies the server itself produces. Response heads are formatted here rather than through
// Beast's serializer so that a head and its body can be queued as two buffers of one gather
// write, with no copy of the (often 100 KB) body. Pure functions. Thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/http/http_server.h"

namespace phalanx::http::internal {

// "OK", "Not Found", ...; "Unknown" for codes without a registered phrase.
std::string_view ReasonPhrase(int status);

// 1xx, 204 and 304 responses never carry a body (nor Content-Length for 1xx/204).
bool StatusAllowsBody(int status);

enum class Framing { kContentLength, kChunked, kUntilClose };

struct HeadOptions {
  Framing framing = Framing::kContentLength;
  size_t content_length = 0;  // kContentLength only
  bool close = false;         // "Connection: close"
  bool http10_keep_alive = false;  // "Connection: keep-alive" for an HTTP/1.0 client that asked
};

// The status line and headers, ending with the blank line. Headers the server owns
// (Content-Length, Transfer-Encoding, Connection) are dropped from `headers`; header names that
// are not RFC 9110 tokens are dropped and CR/LF/NUL in values become spaces, so a handler
// cannot split the response.
std::string FormatResponseHead(int status, std::string_view content_type,
                               const std::vector<Header>& headers, const HeadOptions& options);

// "<hex size>\r\n<data>\r\n". `data` must not be empty (an empty chunk ends the stream).
std::string FrameChunk(std::string_view data);
inline constexpr std::string_view kLastChunk = "0\r\n\r\n";

// Appends `text` as a JSON string literal (quotes included, RFC 8259 escaping).
void AppendJsonString(std::string* out, std::string_view text);

// A Kubernetes-style Status object, so Kubernetes clients decode the server's own errors:
// {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"...",
//  "reason":"NotFound","code":404}
Response ErrorResponse(int status, std::string_view message);

}  // namespace phalanx::http::internal
