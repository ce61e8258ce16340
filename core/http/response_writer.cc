// ResponseWriter and Exchange::Deliver (see exchange.h for the threading and lifetime model).
#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>

#include <utility>

#include "core/http/exchange.h"
#include "core/http/http_server.h"
#include "core/http/server_core.h"

namespace phalanx::http {
namespace internal {

Exchange::Exchange(std::shared_ptr<ServerCore> core, std::weak_ptr<Connection> connection,
                   uint64_t seq)
    : core_(std::move(core)), connection_(std::move(connection)), seq_(seq) {}

bool Exchange::Deliver(WriterEvent event) {
  std::shared_ptr<Connection> connection;
  {
    std::lock_guard<std::mutex> lock(core_->lifeline_mu);
    if (!core_->alive) return false;
    connection = connection_.lock();
    if (connection == nullptr) return false;
    if (!connection->strand().running_in_this_thread()) {
      boost::asio::post(connection->strand(),
                        [connection, seq = seq_, event = std::move(event)]() mutable {
                          connection->OnWriterEvent(seq, std::move(event));
                        });
      // Drop our reference while the io_context is guaranteed alive (see exchange.h).
      connection.reset();
      return true;
    }
  }
  // Already on the connection's strand (a handler replying before it returns): run inline,
  // saving a trip through the scheduler. The io_context is alive: we are running on it.
  connection->OnWriterEvent(seq_, std::move(event));
  return true;
}

}  // namespace internal

using internal::Exchange;
using internal::WriterEvent;
using WriterState = Exchange::WriterState;

ResponseWriter::ResponseWriter(std::shared_ptr<Exchange> exchange) : exchange_(std::move(exchange)) {}

ResponseWriter& ResponseWriter::operator=(ResponseWriter&& other) noexcept {
  if (this != &other) {
    Abandon();
    exchange_ = std::move(other.exchange_);
  }
  return *this;
}

ResponseWriter::~ResponseWriter() { Abandon(); }

void ResponseWriter::Abandon() {
  if (exchange_ == nullptr) return;
  const WriterState state = exchange_->writer_state;
  if (state == WriterState::kFresh || state == WriterState::kStreaming) {
    // The handler dropped the request: answer 500 (or end the stream) instead of leaving the
    // client waiting until its timeout.
    exchange_->writer_state = WriterState::kDone;
    exchange_->Deliver(WriterEvent{WriterEvent::Kind::kAbandoned, {}, {}});
  }
  exchange_.reset();
}

void ResponseWriter::Reply(Response response) {
  if (exchange_ == nullptr) return;
  if (exchange_->writer_state != WriterState::kFresh) {
    exchange_->core().logger->error("Ignored second reply to one request status={}",
                                    response.status);
    return;
  }
  exchange_->writer_state = WriterState::kReplied;
  exchange_->Deliver(WriterEvent{WriterEvent::Kind::kReply, std::move(response), {}});
}

void ResponseWriter::StartStream(int status, std::string content_type, std::vector<Header> headers) {
  if (exchange_ == nullptr) return;
  if (exchange_->writer_state != WriterState::kFresh) {
    exchange_->core().logger->error("Ignored StartStream after a reply status={}", status);
    return;
  }
  exchange_->writer_state = WriterState::kStreaming;
  Response head;
  head.status = status;
  head.content_type = std::move(content_type);
  head.headers = std::move(headers);
  exchange_->Deliver(WriterEvent{WriterEvent::Kind::kStreamStart, std::move(head), {}});
}

bool ResponseWriter::WriteChunk(std::string data) {
  if (exchange_ == nullptr || exchange_->writer_state != WriterState::kStreaming) return false;
  if (exchange_->Gone()) return false;
  if (data.empty()) return true;  // an empty chunk would end the stream
  const size_t size = data.size();
  const size_t limit = exchange_->core().options.max_stream_backlog_bytes;
  if (exchange_->backlog_bytes.fetch_add(size, std::memory_order_acq_rel) + size > limit) {
    // The client reads slower than we produce: cut it off rather than buffer without bound
    // (a Kubernetes watch client reconnects and resumes from its last resourceVersion).
    exchange_->client_gone.store(true, std::memory_order_release);
    exchange_->Deliver(WriterEvent{WriterEvent::Kind::kOverflow, {}, {}});
    exchange_->core().logger->warn("Closed stream of a slow client backlogBytes={}", limit);
    return false;
  }
  if (!exchange_->Deliver(WriterEvent{WriterEvent::Kind::kChunk, {}, std::move(data)})) {
    exchange_->client_gone.store(true, std::memory_order_release);
    return false;
  }
  return true;
}

void ResponseWriter::EndStream() {
  if (exchange_ == nullptr || exchange_->writer_state != WriterState::kStreaming) return;
  exchange_->writer_state = WriterState::kDone;
  exchange_->Deliver(WriterEvent{WriterEvent::Kind::kStreamEnd, {}, {}});
}

void ResponseWriter::Abort() {
  if (exchange_ == nullptr) return;
  const WriterState state = exchange_->writer_state;
  if (state != WriterState::kFresh && state != WriterState::kStreaming) return;  // already answered
  exchange_->writer_state = WriterState::kDone;
  exchange_->client_gone.store(true, std::memory_order_release);
  exchange_->Deliver(WriterEvent{WriterEvent::Kind::kReset, {}, {}});
}

bool ResponseWriter::ClientGone() const {
  return exchange_ == nullptr || exchange_->Gone();
}

}  // namespace phalanx::http
