// BudgetedTransport: the transport of the extender's write client. Before each request it takes
// a token from the WriteBudget in the lane of the calling write task, and it bounds the request
// by the task's deadline (write_context.h): a request past it is not sent (DeadlineExceeded),
// and one sent before waits no longer than the time left. The client's own limiter is off
// (qps 0): the budget is here, where the lane is known. Thread-safe.
#pragma once

#include <chrono>
#include <memory>

#include "core/kube/transport.h"
#include "extender/writes/write_budget.h"

namespace phalanx::extender {

class BudgetedTransport final : public kube::Transport {
 public:
  // `request_timeout`: the per-request timeout when the task's deadline is further away.
  BudgetedTransport(std::shared_ptr<kube::Transport> inner, WriteBudget& budget,
                    std::chrono::milliseconds request_timeout);

  Result<kube::HttpResponse> Send(const kube::HttpRequest& request) override;
  Result<std::unique_ptr<kube::ResponseStream>> OpenStream(const kube::HttpRequest& request) override;

 private:
  std::shared_ptr<kube::Transport> inner_;
  WriteBudget& budget_;
  const std::chrono::milliseconds request_timeout_;
};

}  // namespace phalanx::extender
