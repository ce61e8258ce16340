// The extender load drivers' daemons: started with the tests' process runner (own process
// group, logs in <dir>/<name>.out/.err, stopped on scope exit), and the fake API server
// reached over plain HTTP. Header-only bench code.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "bench/extender/bench_http.h"
#include "core/json/json.h"
#include "tests/e2e/harness/process.h"

namespace phalanx::extender::bench {

inline double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Exits the bench if the daemon cannot start.
inline std::unique_ptr<e2e::Process> StartDaemon(const std::string& name, const std::string& binary,
                                                 std::vector<std::string> args, const std::string& dir) {
  auto p = e2e::Process::Start({.name = name, .binary = binary, .args = std::move(args), .env = {}, .log_dir = dir});
  if (!p.ok()) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), p.status().message().c_str());
    std::exit(1);
  }
  return std::move(*p);
}

struct FakeApiServer {
  std::unique_ptr<e2e::Process> process;
  int port = 0;  // 0: it did not start within a minute
};

// The fake API server with its kubeconfig at <dir>/kubeconfig, `write_latency_ms` per write.
inline FakeApiServer StartFakeApiServer(const std::string& binary, const std::string& dir, int write_latency_ms) {
  FakeApiServer api;
  api.process = StartDaemon("fake-apiserver", binary,
                            {"--port-file", dir + "/port", "--write-kubeconfig", dir + "/kubeconfig",
                             "--write-latency-ms", std::to_string(write_latency_ms)},
                            dir);
  for (auto t0 = std::chrono::steady_clock::now(); api.port == 0 && SecondsSince(t0) < 60;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const std::string p = ReadFile(dir + "/port");
    if (!p.empty()) api.port = std::stoi(p);
  }
  if (api.port == 0) std::fprintf(stderr, "fake-apiserver did not start: %s\n", api.process->LogTail().c_str());
  return api;
}

// One request to the fake API server on a fresh connection, as `client` (its User-Agent: the
// fake counts requests per client); the status (0: no connection), the body in *out.
inline int ApiRequest(int port, const std::string& client, const std::string& method, const std::string& path,
                      const std::string& body, std::string* out) {
  Conn c(port);
  if (!c.ok()) return 0;
  const std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer fake-token\r\n" +
                          "User-Agent: " + client + "\r\nContent-Type: application/json\r\nContent-Length: " +
                          std::to_string(body.size()) + "\r\n\r\n" + body;
  return c.Call(req, out);
}

struct ExtenderDaemon {
  std::unique_ptr<e2e::Process> process;
  int port = 0;          // the verbs
  int metrics_port = 0;  // /metrics, /readyz
  bool ready = false;    // /readyz answered 200 within the deadline
};

// The pods of gang `gang` in namespace bench as the API server has them (empty on any error).
inline std::vector<json::Json> ListGangPods(int port, const std::string& client, const std::string& gang) {
  std::string body;
  if (ApiRequest(port, client, "GET", "/api/v1/namespaces/bench/pods?labelSelector=phalanx.io%2Fgang%3D" + gang, "",
                 &body) != 200) {
    return {};
  }
  auto list = json::Parse(body);
  std::vector<json::Json> out;
  if (list.ok() && (*list)["items"].is_array()) {
    for (auto& p : (*list)["items"]) out.push_back(p);
  }
  return out;
}

// Starts phalanx-extender with `args` (which must include `--listen 127.0.0.1:0 --metrics-addr
// 127.0.0.1:0`), learns its ports from its start-up log line and waits until /readyz is 200
// (informers synced) or `deadline_s` passed; says why on stderr when it is not ready.
inline ExtenderDaemon StartExtender(const std::string& binary, std::vector<std::string> args, const std::string& dir,
                                    double deadline_s) {
  ExtenderDaemon ext;
  const auto t0 = std::chrono::steady_clock::now();
  ext.process = StartDaemon("extender", binary, std::move(args), dir);
  const std::regex serving("listen=\"?[0-9.]+:([0-9]+)\"? metrics=\"?[0-9.]+:([0-9]+)");
  while (!ext.ready && SecondsSince(t0) < deadline_s) {
    std::smatch m;
    const std::string text = ReadFile(ext.process->stderr_path()) + ReadFile(ext.process->stdout_path());
    if (ext.port == 0 && std::regex_search(text, m, serving)) {
      ext.port = std::stoi(m[1]);
      ext.metrics_port = std::stoi(m[2]);
    }
    std::string body;
    if (ext.port != 0) {
      Conn c(ext.metrics_port);
      ext.ready = c.ok() && c.Call("GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n", &body) == 200;
    }
    if (!ext.ready) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!ext.ready) std::fprintf(stderr, "extender not ready:\n%s\n", ext.process->LogTail().c_str());
  return ext;
}

}  // namespace phalanx::extender::bench
