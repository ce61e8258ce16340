// Internal: one accepted client connection (plain TCP or TLS). See session.cc for the state
// machine. Not part of the public API.
#pragma once

#include <memory>

#include <boost/asio/ip/tcp.hpp>

#include "core/http/exchange.h"

namespace phalanx::http::internal {

struct ServerCore;

// A TLS session (with the context core->tls() gives now) when the server has TLS, plain
// otherwise. `socket` must use `strand` as its executor. Call Start() on the strand after
// registering the connection with the core.
std::shared_ptr<Connection> MakeSession(std::shared_ptr<ServerCore> core,
                                        boost::asio::ip::tcp::socket socket,
                                        Connection::Strand strand);

}  // namespace phalanx::http::internal
