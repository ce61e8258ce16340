// fake-apiserver: the in-memory Kubernetes API server as a process, for end-to-end tests that run
// the real daemons (`--kubeconfig` pointed at the file written by --kubeconfig-out).
//
//   fake-apiserver --listen 127.0.0.1:0 --port-file /tmp/port --kubeconfig-out /tmp/kubeconfig
//                  --seed nodes.yaml
//
// Prints the chosen port on stdout (one line), serves until SIGTERM/SIGINT.
#include <cstdio>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>

#include "core/base/shutdown_signal.h"
#include "core/log/log.h"
#include "core/log/log_options.h"
#include "core/log/logger_factory.h"
#include "tests/fakes/apiserver/fake_apiserver.h"
#include "tests/fakes/apiserver/seed.h"

namespace {

using phalanx::fakes::apiserver::FakeApiServer;
using phalanx::fakes::apiserver::FakeApiServerOptions;

int Fail(const std::string& message) {
  std::cerr << "fake-apiserver: " << message << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  phalanx::ShutdownSignal shutdown;  // first: before any thread exists

  CLI::App app{"In-memory Kubernetes API server for Phalanx tests"};
  std::string listen = "127.0.0.1:0";
  int port = -1;
  std::string port_file, kubeconfig_out, tls_cert, tls_key, required_token, kubeconfig_token;
  std::vector<std::string> seeds;
  size_t event_window = 100000;
  int bookmark_ms = 1000;
  int pod_termination_ms = -1;
  int write_latency_ms = 0;
  bool gone_as_http = false;
  phalanx::log::LogOptions log_options;
  app.add_option("--listen", listen, "Address to listen on, host:port (port 0 = ephemeral)");
  app.add_option("--port", port, "Port (overrides the port of --listen; 0 = ephemeral)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--port-file", port_file, "Write the chosen port to this file");
  app.add_option("--kubeconfig-out,--write-kubeconfig", kubeconfig_out,
                 "Write a kubeconfig pointing at this server");
  app.add_option("--tls-cert", tls_cert, "PEM certificate (chain): serve HTTPS")->check(CLI::ExistingFile);
  app.add_option("--tls-key", tls_key, "PEM private key for --tls-cert")->check(CLI::ExistingFile);
  app.add_option("--seed", seeds, "YAML/JSON file of objects to load at start (repeatable)")
      ->check(CLI::ExistingFile);
  app.add_option("--token", required_token,
                 "Require this bearer token (default: accept any token)");
  app.add_option("--kubeconfig-token", kubeconfig_token,
                 "Token written into the kubeconfig (default: --token, else fake-token)");
  app.add_option("--event-window", event_window, "Events kept for watch resumption")
      ->check(CLI::PositiveNumber);
  app.add_option("--bookmark-interval-ms", bookmark_ms, "Period of watch BOOKMARK events")
      ->check(CLI::Range(1, 3600000));
  app.add_option("--pod-termination-delay-ms", pod_termination_ms,
                 "Play the kubelet: finish graceful pod deletions after this delay (default: never)");
  app.add_option("--write-latency-ms", write_latency_ms,
                 "Delay every mutating request (create/update/patch/delete/binding/eviction) by this "
                 "much; reads and watches are not delayed, parallel writes wait in parallel")
      ->check(CLI::Range(0, 3600000));
  app.add_flag("--gone-as-http", gone_as_http,
               "Answer a watch from a too old resourceVersion with HTTP 410 instead of an ERROR event");
  phalanx::log::AddLogFlags(app, log_options);
  CLI11_PARSE(app, argc, argv);

  if (auto s = phalanx::log::InitLogging(log_options); !s.ok()) return Fail(s.message());
  auto logger = phalanx::log::MakeLogger("fake_apiserver");

  FakeApiServerOptions options;
  const auto colon = listen.rfind(':');
  if (colon == std::string::npos) return Fail("--listen: expected host:port, got \"" + listen + "\"");
  options.address = listen.substr(0, colon);
  try {
    const int listen_port = std::stoi(listen.substr(colon + 1));
    if (listen_port < 0 || listen_port > 65535) throw std::out_of_range("port");
    options.port = static_cast<uint16_t>(listen_port);
  } catch (const std::exception&) {
    return Fail("--listen: invalid port in \"" + listen + "\"");
  }
  if (port >= 0) options.port = static_cast<uint16_t>(port);
  if (tls_cert.empty() != tls_key.empty()) return Fail("--tls-cert and --tls-key go together");
  if (!tls_cert.empty()) options.tls = phalanx::http::TlsOptions{tls_cert, tls_key, ""};
  if (!required_token.empty()) options.required_token = required_token;
  options.event_window = event_window;
  options.bookmark_interval = std::chrono::milliseconds(bookmark_ms);
  options.gone_as_http_status = gone_as_http;
  if (pod_termination_ms >= 0) options.pod_termination_delay = std::chrono::milliseconds(pod_termination_ms);
  options.write_latency = std::chrono::milliseconds(write_latency_ms);
  options.logger = logger;

  std::vector<phalanx::json::Json> objects;
  for (const auto& file : seeds) {
    auto loaded = phalanx::fakes::apiserver::LoadSeedFile(file);
    if (!loaded.ok()) return Fail(loaded.status().message());
    for (auto& o : *loaded) objects.push_back(std::move(o));
  }

  auto started = FakeApiServer::Start(options);
  if (!started.ok()) return Fail("cannot start: " + started.status().message());
  std::unique_ptr<FakeApiServer> server = std::move(started).value();
  for (auto& object : objects) {
    auto seeded = server->Seed(std::move(object));
    if (!seeded.ok()) return Fail("--seed: " + seeded.status().message());
  }
  if (!kubeconfig_out.empty()) {
    const std::string token =
        !kubeconfig_token.empty() ? kubeconfig_token : (!required_token.empty() ? required_token : "fake-token");
    if (auto s = server->WriteKubeconfig(kubeconfig_out, token); !s.ok()) return Fail(s.message());
  }
  if (!port_file.empty()) {
    const std::string tmp = port_file + ".tmp";
    std::ofstream(tmp) << server->port() << "\n";
    if (std::rename(tmp.c_str(), port_file.c_str()) != 0) return Fail("cannot write --port-file " + port_file);
  }
  std::cout << server->port() << std::endl;
  PHX_LOG_INFO(logger, "Started fake API server", kv("url", server->url()),
               kv("seeded", objects.size()));

  shutdown.OnShutdown([&server] { server->GoDown(); });
  shutdown.Wait();
  PHX_LOG_INFO(logger, "Stopped fake API server");
  return 0;
}
