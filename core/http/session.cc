// Session<Stream>: one HTTP/1.1 connection, plain or TLS, driven on its own strand.
//
// State machine (all on the strand, so no locks):
//   read request (idle deadline) -> dispatch to handler -> await reply/stream (no deadline; a
//   1-byte "monitor" read watches for the client leaving) -> write (stall deadline) -> next
//   request, or "Connection: close" -> linger -> close.
// The monitor read only runs while the read buffer is empty: bytes it receives (a pipelined
// request) stay in the buffer for the next parse, and it never has to be cancelled, which Asio's
// TLS stream does not support cleanly.
// After a response that closes the connection we shut down our sending side and keep reading
// (discarding) for a short while before closing: closing with unread input makes the kernel
// send RST, which can destroy the response (e.g. a 413 sent before the body was read) before
// the client reads it.
#include "core/http/session.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http.hpp>

#include "core/http/dispatch.h"
#include "core/http/request_target.h"
#include "core/http/server_core.h"
#include "core/http/wire_format.h"

namespace phalanx::http::internal {
namespace {

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using boost::system::error_code;
using TlsStream = asio::ssl::stream<tcp::socket>;

constexpr size_t kMonitorReadBytes = 4096;
// Beast reads at most 64 KiB a call; a buffer that small from the first (monitor) read would
// take a 67 KB request (kube-scheduler's 5,000 names) in 17 reads of 4 KiB, each a syscall and a
// parser call. Grown to this once a request's body is larger, and kept for the connection.
constexpr size_t kLargeReadBytes = 64 * 1024;
constexpr size_t kMaxGatherBuffers = 64;
constexpr std::chrono::seconds kLingerTime{2};

// asio::transfer_all without its 64 KiB cap per write call: a 215 KB reply goes to the kernel in
// one sendmsg, not four (each a reactor round and, with two io threads, a hand-off between them).
struct TransferAll {
  size_t operator()(const error_code& ec, size_t) const { return ec ? 0 : std::numeric_limits<size_t>::max(); }
};

std::string FormatEndpoint(const tcp::endpoint& endpoint) {
  const auto address = endpoint.address();
  std::string out = address.is_v6() ? "[" + address.to_string() + "]" : address.to_string();
  return out + ":" + std::to_string(endpoint.port());
}

template <class Stream>
class Session final : public Connection {
 public:
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

  Session(std::shared_ptr<ServerCore> core, tcp::socket socket, Strand strand,
          std::shared_ptr<asio::ssl::context> tls)
      : Connection(strand),
        core_(std::move(core)),
        tls_(std::move(tls)),
        stream_(MakeStream(std::move(socket), tls_.get())),
        timer_(strand) {}

  ~Session() override {
    if (exchange_) exchange_->client_gone.store(true, std::memory_order_release);
    core_->Unregister(this);
  }

  void Start() override {
    error_code ec;
    const tcp::endpoint remote = Lowest().remote_endpoint(ec);
    remote_ = ec ? std::string("unknown") : FormatEndpoint(remote);
    Lowest().set_option(tcp::no_delay(true), ec);  // best effort: latency, not correctness
    timer_.expires_at(Clock::time_point::max());
    WaitDeadline();
    if (core_->draining.load()) {
      Close();
      return;
    }
    if constexpr (kTls) {
      SetDeadline(Clock::now() + core_->options.idle_timeout);
      stream_.async_handshake(asio::ssl::stream_base::server,
                              [self = Self()](error_code e) { self->OnHandshake(e); });
    } else {
      ReadRequest();
    }
  }

  void OnWriterEvent(uint64_t seq, WriterEvent event) override {
    if (closed_ || exchange_ == nullptr || seq != seq_) return;  // stale or connection closed
    switch (event.kind) {
      case WriterEvent::Kind::kReply:
        if (response_ == ResponseState::kAwaiting) WriteResponse(std::move(event.response));
        break;
      case WriterEvent::Kind::kStreamStart:
        if (response_ == ResponseState::kAwaiting) StartStream(std::move(event.response));
        break;
      case WriterEvent::Kind::kChunk:
        if (response_ == ResponseState::kStreaming && !head_request_) {
          const size_t size = event.chunk.size();
          Enqueue(chunked_ ? FrameChunk(event.chunk) : std::move(event.chunk), size);
        }
        break;
      case WriterEvent::Kind::kStreamEnd:
        EndStream();
        break;
      case WriterEvent::Kind::kAbandoned:
        if (response_ == ResponseState::kAwaiting) {
          WriteResponse(ErrorResponse(500, "handler did not reply"));
        } else if (response_ == ResponseState::kStreaming) {
          close_after_response_ = true;  // the stream was cut short: don't reuse the connection
          EndStream();
        }
        break;
      case WriterEvent::Kind::kOverflow:
        Close();
        break;
      case WriterEvent::Kind::kReset: {
        error_code ec;
        Lowest().set_option(asio::socket_base::linger(true, 0), ec);  // close() sends RST
        Close();
        break;
      }
    }
  }

  void BeginDrain() override {
    draining_ = true;
    if (closed_) return;
    switch (response_) {
      case ResponseState::kNone: {
        const bool request_arriving =
            in_request_ && ((parser_ && parser_->got_some()) || buffer_.size() > 0);
        if (!request_arriving) Close();  // idle (or still in the TLS handshake)
        break;                           // else answered with "Connection: close"
      }
      case ResponseState::kStreaming:
        exchange_->client_gone.store(true, std::memory_order_release);
        close_after_response_ = true;
        EndStream();
        break;
      case ResponseState::kAwaiting:
      case ResponseState::kComplete:
        break;  // the reply goes out with "Connection: close"
    }
  }

  void ForceClose() override { Close(); }

 private:
  enum class ResponseState { kNone, kAwaiting, kStreaming, kComplete };
  struct OutItem {
    std::string bytes;
    size_t backlog = 0;  // stream bytes counted in Exchange::backlog_bytes
    std::shared_ptr<const std::string> shared;  // written instead of `bytes` when set
    const std::string& data() const { return shared ? *shared : bytes; }
  };

  static Stream MakeStream(tcp::socket socket, asio::ssl::context* tls) {
    if constexpr (kTls) {
      return Stream(std::move(socket), *tls);
    } else {
      (void)tls;
      return socket;
    }
  }

  std::shared_ptr<Session> Self() { return std::static_pointer_cast<Session>(shared_from_this()); }

  tcp::socket& Lowest() {
    if constexpr (kTls) {
      return stream_.next_layer();
    } else {
      return stream_;
    }
  }

  spdlog::logger& log() { return *core_->logger; }

  // --- Reading requests -------------------------------------------------------------------

  void OnHandshake(error_code ec) {
    if (closed_) return;
    if (ec) {
      log().debug("Rejected TLS handshake remote={} err=\"{}\"", remote_, ec.message());
      Close();
      return;
    }
    if (draining_) {
      Close();
      return;
    }
    ReadRequest();
  }

  void ReadRequest() {
    in_request_ = true;
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(
        std::min<size_t>(core_->options.max_header_bytes, UINT32_MAX)));
    parser_->body_limit(static_cast<std::uint64_t>(core_->options.max_body_bytes));
    SetDeadline(Clock::now() + core_->options.idle_timeout);
    reading_ = true;
    bhttp::async_read_header(stream_, buffer_, *parser_,
                             [self = Self()](error_code ec, size_t) { self->OnHeader(ec); });
  }

  void OnHeader(error_code ec) {
    reading_ = false;
    if (closed_) return;
    if (ec) {
      OnRequestReadError(ec);
      return;
    }
    if (parser_->is_done()) {
      OnRequest();
      return;
    }
    const auto& header = parser_->get();
    if (header.version() >= 11 &&
        boost::beast::iequals(header[bhttp::field::expect], "100-continue")) {
      // curl and others wait for this before sending a large body.
      Enqueue("HTTP/1.1 100 Continue\r\n\r\n");
    }
    if (const auto length = parser_->content_length(); length && *length > buffer_.capacity() - buffer_.size()) {
      buffer_.reserve(std::min<size_t>(buffer_.size() + *length, kLargeReadBytes));
    }
    reading_ = true;
    bhttp::async_read(stream_, buffer_, *parser_,
                      [self = Self()](error_code e, size_t) { self->OnBody(e); });
  }

  void OnBody(error_code ec) {
    reading_ = false;
    if (closed_) return;
    if (ec) {
      OnRequestReadError(ec);
      return;
    }
    OnRequest();
  }

  void OnRequestReadError(error_code ec) {
    in_request_ = false;
    const auto& http_category = bhttp::make_error_code(bhttp::error::bad_method).category();
    if (ec == bhttp::error::body_limit) {
      SendErrorAndClose(413, "request body exceeds the limit of " +
                                 std::to_string(core_->options.max_body_bytes) + " bytes");
    } else if (ec == bhttp::error::header_limit || ec == bhttp::error::buffer_overflow) {
      SendErrorAndClose(431, "request headers exceed the limit of " +
                                 std::to_string(core_->options.max_header_bytes) + " bytes");
    } else if (ec.category() == http_category && ec != bhttp::error::end_of_stream &&
               ec != bhttp::error::partial_message) {
      SendErrorAndClose(400, "malformed HTTP request: " + ec.message());
    } else {
      Close();  // the client closed, reset or timed out: nobody to answer
    }
  }

  void SendErrorAndClose(int status, std::string message) {
    log().debug("Rejected request remote={} status={} err=\"{}\"", remote_, status, message);
    parser_.reset();
    close_after_response_ = true;
    head_request_ = false;
    http10_ = false;
    WriteResponse(ErrorResponse(status, message));
  }

  void OnRequest() {
    in_request_ = false;
    SetDeadline(Clock::time_point::max());  // the handler may hold the request for long
    auto message = parser_->release();
    parser_.reset();

    Request request;
    request.method = std::string(message.method_string());
    request.target = std::string(message.target());
    ParseTarget(request.target, &request.path, &request.query);
    for (const auto& field : message) {
      request.headers.push_back(Header{std::string(field.name_string()), std::string(field.value())});
    }
    request.body = std::move(message.body());
    request.remote_address = remote_;

    keep_alive_ = message.keep_alive();
    http10_ = message.version() < 11;
    head_request_ = message.method() == bhttp::verb::head;
    close_after_response_ = !keep_alive_;
    ++seq_;
    exchange_ = std::make_shared<Exchange>(core_, weak_from_this(), seq_);
    response_ = ResponseState::kAwaiting;
    MaybeMonitor();
    DispatchRequest(*core_, exchange_, std::move(request));
  }

  // --- Watching for the client leaving; lingering ------------------------------------------

  void MaybeMonitor() {
    if (closed_ || reading_ || peer_eof_ || buffer_.size() != 0) return;
    reading_ = true;
    // All the room the buffer has: the next request's first bytes arrive in one read.
    const size_t room = std::max(kMonitorReadBytes, buffer_.capacity() - buffer_.size());
    stream_.async_read_some(buffer_.prepare(room),
                            [self = Self()](error_code ec, size_t n) { self->OnMonitorRead(ec, n); });
  }

  void OnMonitorRead(error_code ec, size_t bytes) {
    reading_ = false;
    if (closed_) return;
    buffer_.commit(bytes);
    if (lingering_) {
      buffer_.consume(buffer_.size());
      if (ec) {
        Close();
      } else {
        MaybeMonitor();
      }
      return;
    }
    if (ec) {
      peer_eof_ = true;
      if (exchange_) exchange_->client_gone.store(true, std::memory_order_release);
      const bool orderly = ec == asio::error::eof || ec == asio::ssl::error::stream_truncated;
      // A client that only shut down its sending side still gets its pending reply; any other
      // case has nobody left to read.
      if (!(orderly && response_ == ResponseState::kAwaiting)) Close();
      return;
    }
    if (response_ == ResponseState::kNone) ReadRequest();  // idle: the next request has begun
    // else a pipelined request: it waits in buffer_ until this response is written
  }

  void StartLinger() {
    lingering_ = true;
    error_code ec;
    Lowest().shutdown(tcp::socket::shutdown_send, ec);
    if (peer_eof_ || ec) {
      Close();
      return;
    }
    SetDeadline(Clock::now() + std::min<Clock::duration>(core_->options.idle_timeout, kLingerTime));
    buffer_.consume(buffer_.size());
    MaybeMonitor();  // when a monitor read is already pending, its completion continues here
  }

  // --- Writing responses --------------------------------------------------------------------

  void WriteResponse(Response response) {
    if (response.status < 200 || response.status > 999) {
      log().error("Handler replied with an invalid status status={}", response.status);
      response = ErrorResponse(500, "handler replied with invalid status " +
                                        std::to_string(response.status));
    }
    if (draining_) close_after_response_ = true;
    const bool body_allowed = StatusAllowsBody(response.status);
    HeadOptions options;
    options.framing = Framing::kContentLength;
    const std::string& body = response.shared_body ? *response.shared_body : response.body;
    options.content_length = body_allowed ? body.size() : 0;
    options.close = close_after_response_;
    options.http10_keep_alive = http10_ && !close_after_response_;
    // Head and body leave in one gather write (one sendmsg): a head sent alone is a segment of
    // its own that wakes the client for 75 bytes before the body follows.
    Push(FormatResponseHead(response.status, body_allowed ? response.content_type : "",
                            response.headers, options));
    if (body_allowed && !head_request_ && !body.empty()) {
      if (response.shared_body) {
        if (!closed_) out_.push_back(OutItem{{}, 0, std::move(response.shared_body)});
      } else {
        Push(std::move(response.body));
      }
    }
    Flush();
    CompleteResponse();
  }

  void StartStream(Response head) {
    if (head.status < 200 || head.status > 999 || !StatusAllowsBody(head.status)) {
      log().error("Handler started a stream with an invalid status status={}", head.status);
      WriteResponse(ErrorResponse(500, "handler started a stream with invalid status " +
                                           std::to_string(head.status)));
      return;
    }
    chunked_ = !http10_;  // HTTP/1.0 has no chunked encoding: the body ends at close
    if (!chunked_ || draining_) close_after_response_ = true;
    HeadOptions options;
    options.framing = chunked_ ? Framing::kChunked : Framing::kUntilClose;
    options.close = close_after_response_;
    Enqueue(FormatResponseHead(head.status, head.content_type, head.headers, options));
    response_ = ResponseState::kStreaming;
    if (draining_ || head_request_) EndStream();
  }

  void EndStream() {
    if (response_ != ResponseState::kStreaming) return;
    if (chunked_ && !head_request_) Enqueue(std::string(kLastChunk));
    CompleteResponse();
  }

  void CompleteResponse() {
    response_ = ResponseState::kComplete;
    if (!writing_) FinishResponse();  // else OnWrite finishes once the queue is empty
  }

  void FinishResponse() {
    exchange_.reset();
    response_ = ResponseState::kNone;
    if (close_after_response_ || peer_eof_ || draining_) {
      StartLinger();
    } else if (reading_) {
      // A monitor read is pending on an empty buffer: it becomes the wait for the next request.
      SetDeadline(Clock::now() + core_->options.idle_timeout);
    } else {
      ReadRequest();
    }
  }

  void Enqueue(std::string bytes, size_t backlog = 0) {
    Push(std::move(bytes), backlog);
    Flush();
  }
  void Push(std::string bytes, size_t backlog = 0) {
    if (closed_) return;
    out_.push_back(OutItem{std::move(bytes), backlog});
  }
  void Flush() {
    if (!closed_ && !writing_ && !out_.empty()) DoWrite();
  }

  void DoWrite() {
    writing_ = true;
    write_count_ = std::min(out_.size(), kMaxGatherBuffers);
    write_buffers_.clear();
    for (size_t i = 0; i < write_count_; ++i) write_buffers_.push_back(asio::buffer(out_[i].data()));
    SetDeadline(Clock::now() + core_->options.idle_timeout);  // a stalled client is cut off
    asio::async_write(stream_, write_buffers_, TransferAll{},
                      [self = Self()](error_code ec, size_t) { self->OnWrite(ec); });
  }

  void OnWrite(error_code ec) {
    writing_ = false;
    if (closed_) return;
    if (ec) {
      log().debug("Failed to write response remote={} err=\"{}\"", remote_, ec.message());
      if (exchange_) exchange_->client_gone.store(true, std::memory_order_release);
      Close();
      return;
    }
    for (size_t i = 0; i < write_count_; ++i) {
      if (out_.front().backlog != 0 && exchange_) {
        exchange_->backlog_bytes.fetch_sub(out_.front().backlog, std::memory_order_acq_rel);
      }
      out_.pop_front();
    }
    if (!out_.empty()) {
      DoWrite();
    } else if (response_ == ResponseState::kComplete) {
      FinishResponse();
    } else if (response_ != ResponseState::kNone) {
      SetDeadline(Clock::time_point::max());  // waiting for the handler's next move
    }
  }

  // --- Deadline and close -------------------------------------------------------------------

  // One timer per connection; deadline_ can move freely and the timer only needs resetting
  // when the deadline moves earlier (see WaitDeadline).
  void SetDeadline(Clock::time_point deadline) {
    if (closed_) return;
    deadline_ = deadline;
    if (deadline < timer_.expiry()) timer_.expires_at(deadline);  // wakes WaitDeadline early
  }

  void WaitDeadline() {
    timer_.async_wait([self = Self()](error_code) {
      if (self->closed_) return;
      if (self->deadline_ <= Clock::now()) {
        self->log().debug("Closed connection on timeout remote={}", self->remote_);
        self->Close();
        return;
      }
      self->timer_.expires_at(self->deadline_);
      self->WaitDeadline();
    });
  }

  void Close() {
    if (closed_) return;
    closed_ = true;
    if (exchange_) exchange_->client_gone.store(true, std::memory_order_release);
    timer_.cancel();
    error_code ec;
    Lowest().close(ec);  // pending operations complete with operation_aborted
  }

  const std::shared_ptr<ServerCore> core_;
  // The context this session started with (null when plain), kept for its whole life: a reload
  // (ServerCore::SetTls) gives only later sessions the new certificate. Declared before stream_.
  const std::shared_ptr<asio::ssl::context> tls_;
  Stream stream_;
  asio::steady_timer timer_;
  Clock::time_point deadline_ = Clock::time_point::max();
  std::string remote_;

  boost::beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  bool reading_ = false;     // a read (parse, monitor or linger) is pending
  bool in_request_ = false;  // between ReadRequest and the complete request
  bool peer_eof_ = false;

  ResponseState response_ = ResponseState::kNone;
  uint64_t seq_ = 0;
  std::shared_ptr<Exchange> exchange_;  // the request being answered
  bool keep_alive_ = true;
  bool http10_ = false;
  bool head_request_ = false;
  bool chunked_ = true;
  bool close_after_response_ = false;

  std::deque<OutItem> out_;  // deque: elements don't move while a write references them
  std::vector<asio::const_buffer> write_buffers_;
  size_t write_count_ = 0;
  bool writing_ = false;

  bool draining_ = false;
  bool lingering_ = false;
  bool closed_ = false;
};

}  // namespace

std::shared_ptr<Connection> MakeSession(std::shared_ptr<ServerCore> core, tcp::socket socket,
                                        Connection::Strand strand) {
  if (auto tls = core->tls()) {
    return std::make_shared<Session<TlsStream>>(std::move(core), std::move(socket), strand, std::move(tls));
  }
  return std::make_shared<Session<tcp::socket>>(std::move(core), std::move(socket), strand, nullptr);
}

}  // namespace phalanx::http::internal
