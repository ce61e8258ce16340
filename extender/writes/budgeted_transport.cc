#include "extender/writes/budgeted_transport.h"

#include <algorithm>

#include <fmt/format.h>

namespace phalanx::extender {

BudgetedTransport::BudgetedTransport(std::shared_ptr<kube::Transport> inner, WriteBudget& budget,
                                     std::chrono::milliseconds request_timeout)
    : inner_(std::move(inner)), budget_(budget), request_timeout_(request_timeout) {}

Result<kube::HttpResponse> BudgetedTransport::Send(const kube::HttpRequest& request) {
  const auto deadline = CurrentWriteDeadline();
  const auto expired = [&] {
    return DeadlineExceededError(fmt::format("{} {}: the kube-scheduler request this write serves has timed out "
                                             "(httpTimeout); not sent",
                                             request.method, request.target));
  };
  if (!budget_.Acquire(CurrentWriteLane(), deadline)) return expired();
  kube::HttpRequest bounded = request;
  bounded.timeout = request.timeout.count() > 0 ? std::min(request.timeout, request_timeout_) : request_timeout_;
  if (deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - WriteClock::now());
    if (left.count() <= 0) return expired();
    // Whole seconds (at least 1): the cpprest transport keeps one connection pool per timeout.
    if (left < bounded.timeout) bounded.timeout = std::max<std::chrono::milliseconds>(
        std::chrono::seconds(1), std::chrono::duration_cast<std::chrono::seconds>(left));
  }
  return inner_->Send(bounded);
}

Result<std::unique_ptr<kube::ResponseStream>> BudgetedTransport::OpenStream(const kube::HttpRequest& request) {
  return inner_->OpenStream(request);  // the write client opens no watches
}

}  // namespace phalanx::extender
