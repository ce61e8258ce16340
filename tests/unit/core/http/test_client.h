// Test helpers for the HTTP server tests: a raw Beast HTTP/1.1 client over one TCP connection
// (exact control of bytes, keep-alive and incremental reads) and WaitUntil for conditions.
// Every operation has a generous deadline so a server bug shows up as a failure, not a hang.
// Not thread-safe: one RawClient per thread.
#pragma once

#include <chrono>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>

#include "core/base/result.h"

namespace phalanx::http::testing {

// Generous: only catches hangs (tests wait for conditions, never for fixed times).
inline constexpr std::chrono::seconds kTestDeadline{20};

// Polls `condition` until true or `deadline` passes. The short sleep is a polling interval, not a
// timing assumption.
inline bool WaitUntil(const std::function<bool()>& condition,
                      std::chrono::milliseconds deadline = kTestDeadline) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

class RawClient {
 public:
  using Response = boost::beast::http::response<boost::beast::http::string_body>;

  Status Connect(uint16_t port, std::string_view host = "127.0.0.1") {
    boost::system::error_code ec;
    const auto address = boost::asio::ip::make_address(host, ec);
    if (ec) return InvalidArgumentError(ec.message());
    stream_.expires_after(kTestDeadline);
    ec = Run([&](auto done) {
      stream_.async_connect(boost::asio::ip::tcp::endpoint(address, port),
                            [done](boost::system::error_code e) mutable { done(e, 0); });
    });
    if (ec) return UnavailableError("connect: " + ec.message());
    return OkStatus();
  }

  Status Send(std::string_view bytes) {
    const auto ec = Run([&](auto done) {
      boost::asio::async_write(stream_, boost::asio::buffer(bytes.data(), bytes.size()), done);
    });
    if (ec) return UnavailableError("send: " + ec.message());
    return OkStatus();
  }

  // Reads one whole response (chunked bodies de-chunked). For a HEAD request pass head = true.
  Result<Response> ReadResponse(bool head = false) {
    boost::beast::http::response_parser<boost::beast::http::string_body> parser;
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());  // boost::none is broken in 1.74
    parser.skip(head);
    const auto ec = Run([&](auto done) { boost::beast::http::async_read(stream_, buffer_, parser, done); });
    if (ec) return UnavailableError("read response: " + ec.message());
    return parser.release();
  }

  // Streaming: reads the header of a response, then ReadBodyUntil() reads incrementally.
  Status ReadHeader() {
    stream_parser_.emplace();
    stream_parser_->body_limit(std::numeric_limits<std::uint64_t>::max());  // boost::none is broken in 1.74
    const auto ec = Run([&](auto done) {
      boost::beast::http::async_read_header(stream_, buffer_, *stream_parser_, done);
    });
    if (ec) return UnavailableError("read header: " + ec.message());
    return OkStatus();
  }
  const Response& streamed() const { return stream_parser_->get(); }
  bool stream_done() const { return stream_parser_->is_done(); }

  // Reads until the de-chunked body contains `text` (or the message ends, or an error).
  Result<std::string> ReadBodyUntil(std::string_view text) {
    while (stream_parser_->get().body().find(text) == std::string::npos) {
      if (stream_parser_->is_done()) return NotFoundError("stream ended before the text arrived");
      const auto ec = Run([&](auto done) {
        boost::beast::http::async_read_some(stream_, buffer_, *stream_parser_, done);
      });
      if (ec) return UnavailableError("read body: " + ec.message());
    }
    return stream_parser_->get().body();
  }

  // Reads until the message ends.
  Status ReadStreamEnd() {
    while (!stream_parser_->is_done()) {
      const auto ec = Run([&](auto done) {
        boost::beast::http::async_read_some(stream_, buffer_, *stream_parser_, done);
      });
      if (ec) return UnavailableError("read body: " + ec.message());
    }
    return OkStatus();
  }

  // True when the server closes the connection (EOF or reset) before the deadline; any bytes
  // that arrive first are discarded. Then closes our side too, as a real client would.
  bool WaitForClose() {
    for (;;) {
      char scratch[4096];
      const auto ec = Run([&](auto done) { stream_.async_read_some(boost::asio::buffer(scratch), done); });
      if (ec == boost::beast::error::timeout) return false;
      if (ec) {
        Close();
        return true;
      }
    }
  }

  void Close() {
    boost::system::error_code ec;
    stream_.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
    stream_.close();
  }

  uint16_t local_port() {
    boost::system::error_code ec;
    return stream_.socket().local_endpoint(ec).port();
  }

 private:
  // Starts an async operation and runs the io_context until it completes; the stream's
  // expiry turns a hang into error::timeout.
  template <class Initiate>
  boost::system::error_code Run(Initiate initiate) {
    boost::system::error_code result;
    bool finished = false;
    stream_.expires_after(kTestDeadline);
    initiate([&result, &finished](boost::system::error_code ec, size_t) {
      result = ec;
      finished = true;
    });
    io_.restart();
    while (!finished && io_.run_one() > 0) {
    }
    return result;
  }

  boost::asio::io_context io_;
  boost::beast::tcp_stream stream_{io_};
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::response_parser<boost::beast::http::string_body>> stream_parser_;
};

}  // namespace phalanx::http::testing

#include <mutex>
#include <vector>

#include "core/http/http_server.h"

namespace phalanx::http::testing {

// Collects the writers of held requests, so a test can answer them later from its own thread.
class HeldWriters {
 public:
  Handler Hold() {
    return [this](Request&& request, ResponseWriter&& writer) {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(std::move(request));
      writers_.push_back(std::move(writer));
    };
  }
  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return writers_.size();
  }
  // Moves the writers (and their requests) out, leaving the box empty.
  std::vector<ResponseWriter> Take(std::vector<Request>* requests = nullptr) {
    std::lock_guard<std::mutex> lock(mu_);
    if (requests != nullptr) *requests = std::move(requests_);
    requests_.clear();
    return std::move(writers_);
  }

 private:
  mutable std::mutex mu_;
  std::vector<Request> requests_;
  std::vector<ResponseWriter> writers_;
};

inline std::string GetRequest(std::string_view target, std::string_view extra_headers = "") {
  return "GET " + std::string(target) + " HTTP/1.1\r\nHost: test\r\n" + std::string(extra_headers) +
         "\r\n";
}

}  // namespace phalanx::http::testing
