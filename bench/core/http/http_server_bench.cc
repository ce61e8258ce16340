// HTTP server benchmark: the extender filter request (5,000 node names by default) served by
// (a) HttpServer (Beast) + nlohmann, (b) cpprestsdk http_listener + nlohmann, (c) HttpServer +
// simdjson. A closed-loop load driver (N keep-alive connections, each sending the next request
// when the previous answer arrives) prints p50/p99 end-to-end latency, req/s, and the server-side
// handling time (parse + build reply) measured inside the handler. Results: bench/RESULTS.md.
//
//   http_server_bench [--names 5000] [--seconds 5] [--connections 1,2]
#include <cpprest/http_listener.h>
#include <nlohmann/json.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "bench/core/http/filter_payload.h"
#include "core/http/http_server.h"

namespace phalanx::bench {
namespace {

using Clock = std::chrono::steady_clock;
namespace bhttp = boost::beast::http;
using tcp = boost::asio::ip::tcp;

double Micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

// Thread-safe collection of durations in microseconds.
class Samples {
 public:
  void Add(double us) {
    std::lock_guard<std::mutex> lock(mu_);
    values_.push_back(us);
  }
  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    values_.clear();
  }
  std::vector<double> Sorted() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<double> v = values_;
    std::sort(v.begin(), v.end());
    return v;
  }

 private:
  std::mutex mu_;
  std::vector<double> values_;
};

double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const size_t i = std::min(sorted.size() - 1, static_cast<size_t>(p * static_cast<double>(sorted.size())));
  return sorted[i];
}

// Closed loop over `connections` keep-alive connections for `seconds`; returns latencies.
struct LoadResult {
  std::vector<double> latency_us;  // sorted
  double requests_per_second = 0;
  int errors = 0;
};

LoadResult RunLoad(uint16_t port, const std::string& body, int connections, double seconds) {
  Samples samples;
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  const auto warmup_end = Clock::now() + std::chrono::milliseconds(500);
  const auto end = warmup_end + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  for (int c = 0; c < connections; ++c) {
    threads.emplace_back([&] {
      boost::asio::io_context io;
      tcp::socket socket(io);
      boost::system::error_code ec;
      socket.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port), ec);
      if (ec) {
        ++errors;
        return;
      }
      socket.set_option(tcp::no_delay(true));
      bhttp::request<bhttp::string_body> request{bhttp::verb::post, "/filter", 11};
      request.set(bhttp::field::host, "127.0.0.1");
      request.set(bhttp::field::content_type, "application/json");
      request.body() = body;
      request.prepare_payload();
      boost::beast::flat_buffer buffer;
      for (;;) {
        const auto start = Clock::now();
        if (start >= end) break;
        bhttp::write(socket, request, ec);
        bhttp::response_parser<bhttp::string_body> parser;
        parser.body_limit(std::numeric_limits<std::uint64_t>::max());
        if (!ec) bhttp::read(socket, buffer, parser, ec);
        if (ec || parser.get().result_int() != 200 || parser.get().body().size() < 100) {
          ++errors;
          return;
        }
        if (start >= warmup_end) samples.Add(Micros(Clock::now() - start));
      }
    });
  }
  for (auto& t : threads) t.join();
  LoadResult result;
  result.latency_us = samples.Sorted();
  result.requests_per_second = static_cast<double>(result.latency_us.size()) / seconds;
  result.errors = errors.load();
  return result;
}

// The handler-side cost alone, without HTTP: repeated calls on one thread.
void ReportHandlerOnly(const std::string& name, const std::function<size_t()>& call) {
  for (int i = 0; i < 20; ++i) call();  // warm caches and allocators
  std::vector<double> us;
  size_t bytes = 0;
  const auto stop = Clock::now() + std::chrono::seconds(2);
  while (Clock::now() < stop) {
    const auto start = Clock::now();
    bytes = call();
    us.push_back(Micros(Clock::now() - start));
  }
  std::sort(us.begin(), us.end());
  std::printf("handler-only %-10s p50 %8.1f us  p99 %8.1f us  (%zu calls, reply %zu bytes)\n",
              name.c_str(), Percentile(us, 0.5), Percentile(us, 0.99), us.size(), bytes);
}

void PrintRow(const std::string& server, int connections, const LoadResult& load, Samples& handler) {
  const std::vector<double> h = handler.Sorted();
  std::printf("%-18s conns %d  e2e p50 %8.1f us  p99 %8.1f us  %8.0f req/s  server p50 %8.1f us  "
              "p99 %8.1f us  errors %d\n",
              server.c_str(), connections, Percentile(load.latency_us, 0.5),
              Percentile(load.latency_us, 0.99), load.requests_per_second, Percentile(h, 0.5),
              Percentile(h, 0.99), load.errors);
  std::fflush(stdout);
}

uint16_t FreePort() {
  boost::asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  return acceptor.local_endpoint().port();
}

struct Flags {
  int names = 5000;
  double seconds = 5;
  std::vector<int> connections = {1, 2};
};

Flags ParseFlags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--names") == 0) flags.names = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--seconds") == 0) flags.seconds = std::atof(argv[i + 1]);
    if (std::strcmp(argv[i], "--connections") == 0) {
      flags.connections.clear();
      for (const char* p = argv[i + 1]; *p != '\0';) {
        flags.connections.push_back(std::atoi(p));
        while (*p != '\0' && *p != ',') ++p;
        if (*p == ',') ++p;
      }
    }
  }
  return flags;
}

int Main(int argc, char** argv) {
  const Flags flags = ParseFlags(argc, argv);
  spdlog::set_level(spdlog::level::warn);
  const std::string request = MakeFilterRequest(flags.names);
  std::printf("filter request: %d names, pod %zu bytes, body %zu bytes; %.1f s per case\n",
              flags.names, MakePodJson().size(), request.size(), flags.seconds);

  {
    // Both implementations must give the same answer (key order aside) before timing them.
    json::FastJsonParser check_parser;
    const Result<std::string> a = FilterReplyNlohmann(request);
    const Result<std::string> b = FilterReplySimdjson(check_parser, request);
    if (!a.ok() || !b.ok() || nlohmann::json::parse(*a) != nlohmann::json::parse(*b)) {
      std::fprintf(stderr, "nlohmann and simdjson replies differ\n");
      return 1;
    }
  }
  ReportHandlerOnly("nlohmann", [&] { return FilterReplyNlohmann(request)->size(); });
  json::FastJsonParser parser;
  ReportHandlerOnly("simdjson", [&] { return FilterReplySimdjson(parser, request)->size(); });

  Samples handler_us;
  // (a) and (c): HttpServer with either parser.
  for (const bool simd : {false, true}) {
    http::HttpServer server(http::ServerOptions{});
    server.Handle("POST", "/filter", http::SyncHandler([&, simd](const http::Request& r) {
                    thread_local json::FastJsonParser local_parser;
                    const auto start = Clock::now();
                    Result<std::string> reply = simd ? FilterReplySimdjson(local_parser, r.body)
                                                     : FilterReplyNlohmann(r.body);
                    handler_us.Add(Micros(Clock::now() - start));
                    if (!reply.ok()) return http::Response{400, "text/plain", {}, reply.status().ToString()};
                    return http::Response{200, "application/json", {}, std::move(*reply)};
                  }));
    if (!server.Start().ok()) return 1;
    for (int connections : flags.connections) {
      handler_us.Clear();
      const LoadResult load = RunLoad(server.port(), request, connections, flags.seconds);
      PrintRow(simd ? "beast+simdjson" : "beast+nlohmann", connections, load, handler_us);
    }
    server.Shutdown();
  }

  // (b) cpprestsdk http_listener (it cannot bind port 0, so probe a free port first).
  {
    const uint16_t port = FreePort();
    web::http::experimental::listener::http_listener listener(
        "http://127.0.0.1:" + std::to_string(port) + "/filter");
    listener.support(web::http::methods::POST, [&](web::http::http_request req) {
      req.extract_string(true).then([req, &handler_us](std::string body) mutable {
        const auto start = Clock::now();
        Result<std::string> reply = FilterReplyNlohmann(body);
        handler_us.Add(Micros(Clock::now() - start));
        if (!reply.ok()) {
          req.reply(web::http::status_codes::BadRequest, reply.status().ToString());
          return;
        }
        req.reply(web::http::status_codes::OK, std::move(*reply), "application/json");
      });
    });
    try {
      listener.open().wait();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "cpprest listener failed to open: %s\n", e.what());
      return 1;
    }
    for (int connections : flags.connections) {
      handler_us.Clear();
      const LoadResult load = RunLoad(port, request, connections, flags.seconds);
      PrintRow("cpprest+nlohmann", connections, load, handler_us);
    }
    listener.close().wait();
  }
  return 0;
}

}  // namespace
}  // namespace phalanx::bench

int main(int argc, char** argv) { return phalanx::bench::Main(argc, argv); }
