// DispatchRequest (see dispatch.h).
#include "core/http/dispatch.h"

#include <spdlog/spdlog.h>

#include <exception>
#include <string>
#include <utility>

#include "core/http/route_table.h"
#include "core/http/server_core.h"
#include "core/http/wire_format.h"

namespace phalanx::http::internal {

void DispatchRequest(ServerCore& core, std::shared_ptr<Exchange> exchange, Request request) {
  // Holding the snapshot keeps the matched handler alive even if routes change meanwhile.
  const std::shared_ptr<const RouteTable> routes = core.routes();
  const RouteTable::Match match = routes->Find(request.method, request.path);
  ResponseWriter writer(std::move(exchange));
  if (match.handler == nullptr) {
    Response response;
    if (match.status == 405) {
      response = ErrorResponse(405, "method " + request.method + " is not allowed for " + request.path);
      response.headers.push_back(Header{"Allow", match.allow});
    } else {
      response = ErrorResponse(404, "no route for " + request.method + " " + request.path);
    }
    writer.Reply(std::move(response));
    return;
  }
  std::string method = request.method;
  std::string path = request.path;
  try {
    (*match.handler)(std::move(request), std::move(writer));
  } catch (const std::exception& e) {
    // Handlers report errors with a status; an exception is a bug, but it must not unwind into
    // Asio and kill an io thread. If the handler kept the writer, this Reply is a no-op and
    // the writer answers 500 when it is destroyed.
    core.logger->error("Handler threw method={} path={} err=\"{}\"", method, path, e.what());
    writer.Reply(ErrorResponse(500, std::string("handler failed: ") + e.what()));
  }
}

}  // namespace phalanx::http::internal
