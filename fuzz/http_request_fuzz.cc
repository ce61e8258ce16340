// An HTTP/1.1 request as every daemon's server reads it (core/http/session.cc): Beast's request
// parser with the server's limits, then the request-target split and percent-decoding
// (core/http/request_target.h) and the header lookup handlers use.
#include <boost/beast/http.hpp>

#include "core/http/http_server.h"
#include "core/http/request_target.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace bhttp = boost::beast::http;
  const phalanx::http::ServerOptions options;
  bhttp::request_parser<bhttp::string_body> parser;
  parser.eager(true);
  parser.header_limit(static_cast<std::uint32_t>(options.max_header_bytes));
  parser.body_limit(static_cast<std::uint64_t>(options.max_body_bytes));
  boost::asio::const_buffer input(data, size);
  boost::beast::error_code ec;
  while (input.size() > 0 && !parser.is_done()) {
    const size_t used = parser.put(input, ec);
    if (ec || used == 0) break;
    input += used;
  }
  // As the server's read does at end of stream: Beast's put_eof asserts the parser got some
  // bytes (an empty input is "connection closed before a request", not a request).
  if (!ec && !parser.is_done() && parser.got_some()) parser.put_eof(ec);
  if (ec || !parser.is_done()) return 0;
  const auto& message = parser.get();
  phalanx::http::Request request;
  request.method = std::string(message.method_string());
  request.target = std::string(message.target());
  phalanx::http::ParseTarget(request.target, &request.path, &request.query);
  for (const auto& field : message) {
    request.headers.push_back(
        phalanx::http::Header{std::string(field.name_string()), std::string(field.value())});
  }
  request.body = message.body();
  FUZZ_CHECK(request.target.rfind(request.path, 0) == 0, request.target);
  (void)request.HeaderValue("Content-Type");
  return 0;
}
