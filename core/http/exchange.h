// Internal: the link between one request's ResponseWriter (any thread) and its connection (an
// Asio strand). Not part of the public API.
//
// A writer never touches the connection directly: it delivers WriterEvents, which run on the
// connection's strand (inline when the writer is already on that strand, e.g. a handler replying
// synchronously; posted otherwise). The connection ignores events whose sequence number is not
// the request it is currently answering, so a stale writer cannot corrupt a later response.
//
// Lifetime: the exchange holds the connection weakly and the ServerCore strongly. Events are
// posted only while ServerCore::alive is true, checked under ServerCore::lifeline_mu; the server
// sets it false (under that mutex) after joining its io threads and before destroying its
// io_context, so a writer outliving the server never posts to a destroyed executor.
//
// Thread-safety: client_gone and backlog_bytes are atomics shared with the connection;
// writer_state belongs to whoever holds the ResponseWriter (one thread at a time).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>

#include "core/http/http_server.h"

namespace phalanx::http::internal {

struct ServerCore;

struct WriterEvent {
  enum class Kind { kReply, kStreamStart, kChunk, kStreamEnd, kAbandoned, kOverflow, kReset };
  Kind kind = Kind::kReply;
  Response response;  // kReply; kStreamStart uses status, content_type and headers
  std::string chunk;  // kChunk
};

// One client connection, as seen by exchanges and by the server's shutdown. Implemented by
// Session<Stream> (plain TCP or TLS). All virtual methods run on strand().
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  using Strand = boost::asio::strand<boost::asio::io_context::executor_type>;

  explicit Connection(Strand strand) : strand_(std::move(strand)) {}
  virtual ~Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  const Strand& strand() const { return strand_; }

  virtual void Start() = 0;
  virtual void OnWriterEvent(uint64_t seq, WriterEvent event) = 0;
  // Shutdown, phase 1: close if idle, end streams, let a pending reply finish then close.
  virtual void BeginDrain() = 0;
  // Shutdown, phase 2 (grace elapsed): close the socket now.
  virtual void ForceClose() = 0;

 private:
  Strand strand_;
};

class Exchange {
 public:
  enum class WriterState { kFresh, kReplied, kStreaming, kDone };

  Exchange(std::shared_ptr<ServerCore> core, std::weak_ptr<Connection> connection, uint64_t seq);

  // Runs the event on the connection's strand. False when the connection or server is gone.
  bool Deliver(WriterEvent event);

  ServerCore& core() const { return *core_; }
  // The client went away or the connection no longer exists.
  bool Gone() const {
    return client_gone.load(std::memory_order_acquire) || connection_.expired();
  }

  std::atomic<bool> client_gone{false};
  std::atomic<size_t> backlog_bytes{0};  // chunk bytes handed over but not yet written
  WriterState writer_state = WriterState::kFresh;

 private:
  const std::shared_ptr<ServerCore> core_;
  const std::weak_ptr<Connection> connection_;
  const uint64_t seq_;
};

}  // namespace phalanx::http::internal
