// Internal: hands one complete request to its route's handler (or answers 404/405 itself).
// Runs on the connection's strand; the handler's exceptions are turned into a 500 here, so they
// never unwind into Asio. Not part of the public API.
#pragma once

#include <memory>

#include "core/http/exchange.h"
#include "core/http/http_server.h"

namespace phalanx::http::internal {

struct ServerCore;

void DispatchRequest(ServerCore& core, std::shared_ptr<Exchange> exchange, Request request);

}  // namespace phalanx::http::internal
