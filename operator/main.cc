// phalanx-operator: TrainingJob lifecycle (docs/architecture.md §2.4; docs/operator.md).
// The only place real clients, servers and the RealClock are constructed.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "core/base/clock.h"
#include "core/base/shutdown_signal.h"
#include "core/http/http_server.h"
#include "core/kube/client.h"
#include "core/kube/config.h"
#include "core/kube/leader_election.h"
#include "core/log/log.h"
#include "core/log/logger_factory.h"
#include "core/metrics/build_info.h"
#include "core/metrics/registry.h"
#include "core/base/version.h"
#include "operator/controller/controller.h"
#include "operator/controller/operator_metrics.h"
#include "operator/controller/progress_service.h"
#include "operator/cost/price_table.h"
#include "operator/crds/apply_crds_command.h"

namespace {

constexpr int kExitBadConfig = 2;
constexpr int kExitRuntime = 1;

int Fail(const std::string& message) {
  std::fprintf(stderr, "phalanx-operator: %s\n", message.c_str());
  return kExitBadConfig;
}

// ":8080" -> 0.0.0.0:8080, "127.0.0.1:0" -> as given.
phalanx::Status ParseAddr(const std::string& addr, std::string& host, uint16_t& port) {
  const auto colon = addr.rfind(':');
  if (colon == std::string::npos) return phalanx::InvalidArgumentError(fmt::format("\"{}\" is not host:port", addr));
  host = addr.substr(0, colon);
  if (host.empty()) host = "0.0.0.0";
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  try {
    const int p = std::stoi(addr.substr(colon + 1));
    if (p < 0 || p > 65535) throw std::out_of_range("port");
    port = static_cast<uint16_t>(p);
  } catch (const std::exception&) {
    return phalanx::InvalidArgumentError(fmt::format("\"{}\" has no valid port", addr));
  }
  return phalanx::OkStatus();
}

std::string Identity() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  std::random_device rd;
  return fmt::format("{}_{:08x}", host, rd());
}

}  // namespace

int main(int argc, char** argv) {
  using namespace phalanx;
  ShutdownSignal shutdown;  // before any thread exists

  CLI::App app{"phalanx-operator: runs TrainingJobs as gangs with whole-gang restarts and checkpoint resume"};
  std::string kubeconfig, ns, metrics_addr = ":8080", progress_addr = ":8443", progress_url;
  std::string progress_tls_cert, progress_tls_key;
  std::string lease_namespace = std::getenv("POD_NAMESPACE") ? std::getenv("POD_NAMESPACE") : "phalanx-system";
  bool leader_elect = false;
  int workers = 4;
  double qps = 200;
  int burst = 400;
  int stuck_seconds = 300;
  std::string price_table_file;
  int usage_update_seconds = 300;
  int preemption_cost_seconds = 30;
  log::LogOptions log_options;
  app.add_option("--kubeconfig", kubeconfig, "Kubeconfig (default: $KUBECONFIG, in-cluster, ~/.kube/config)");
  app.add_option("--namespace", ns, "Only manage TrainingJobs in this namespace (default: all)");
  app.add_flag("--leader-elect", leader_elect, "Run only while holding the Lease phalanx-operator");
  app.add_option("--leader-election-namespace", lease_namespace, "Namespace of the Lease")->capture_default_str();
  app.add_option("--metrics-addr", metrics_addr, "Address for /metrics, /healthz, /readyz")->capture_default_str();
  app.add_option("--progress-addr", progress_addr, "Address of the progress endpoint (\"\" disables it)")
      ->capture_default_str();
  app.add_option("--progress-url", progress_url,
                 "URL workers use to reach the progress endpoint (PHALANX_PROGRESS_URL); empty: not offered to pods");
  app.add_option("--progress-tls-cert", progress_tls_cert, "PEM certificate for the progress endpoint (HTTPS)");
  app.add_option("--progress-tls-key", progress_tls_key, "PEM key for the progress endpoint");
  app.add_option("--workers", workers, "Concurrent reconciles")->capture_default_str()->check(CLI::Range(1, 64));
  app.add_option("--kube-api-qps", qps, "API client requests per second")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--kube-api-burst", burst, "API client burst")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--stuck-terminating-seconds", stuck_seconds,
                 "Force-delete a pod Terminating this long past its deadline (lost node)")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--price-table", price_table_file,
                 "JSON price table (currency, gpuHourly, defaultGpuHourly, tierMultiplier); empty: GPU-hours only, no cost");
  app.add_option("--usage-update-seconds", usage_update_seconds,
                 "Bring status.usage up to date at least this often while a job's pods hold GPUs")
      ->capture_default_str()->check(CLI::Range(10, 86400));
  // The extender gives a job graceful notice only once this figure says notice is cheaper
  // than the work at risk: a young job is evicted until its first refresh.
  app.add_option("--preemption-cost-seconds", preemption_cost_seconds,
                 "Refresh status.preemptionCost (work at risk, checkpoint age) this often while a job runs")
      ->capture_default_str()->check(CLI::Range(1, 3600));
  log::AddLogFlags(app, log_options);
  int crd_timeout_seconds = 60;
  CLI::App* apply_crds = app.add_subcommand(
      "apply-crds", "Install or upgrade this release's CRDs (server-side apply), wait until each is Established, "
                    "and exit: the chart's pre-upgrade hook, since helm upgrade never updates crds/");
  apply_crds->add_option("--timeout-seconds", crd_timeout_seconds, "How long to wait for each CRD to be Established")
      ->capture_default_str()->check(CLI::Range(1, 600));
  apply_crds->fallthrough();  // --kubeconfig and the log flags also after the subcommand
  CLI11_PARSE(app, argc, argv);

  if (Status s = log::InitLogging(log_options); !s.ok()) return Fail(s.message());
  if (*apply_crds) {
    return op::RunApplyCrds({.kubeconfig = kubeconfig, .timeout = std::chrono::seconds(crd_timeout_seconds)});
  }
  auto logger = log::MakeLogger("operator");
  std::string metrics_host, progress_host;
  uint16_t metrics_port = 0, progress_port = 0;
  if (Status s = ParseAddr(metrics_addr, metrics_host, metrics_port); !s.ok()) return Fail("--metrics-addr: " + s.message());
  if (!progress_addr.empty()) {
    if (Status s = ParseAddr(progress_addr, progress_host, progress_port); !s.ok()) {
      return Fail("--progress-addr: " + s.message());
    }
  }
  if (progress_tls_cert.empty() != progress_tls_key.empty()) {
    return Fail("--progress-tls-cert and --progress-tls-key go together");
  }
  std::optional<op::PriceTable> prices;
  if (!price_table_file.empty()) {
    std::ifstream in(price_table_file);
    if (!in) return Fail(fmt::format("--price-table {}: cannot read the file", price_table_file));
    std::stringstream text;
    text << in.rdbuf();
    auto parsed = op::ParsePriceTableText(text.str());
    if (!parsed.ok()) return Fail(fmt::format("--price-table {}: {}", price_table_file, parsed.status().message()));
    prices = std::move(parsed).value();
  }
  auto config = kube::ResolveConfig(kubeconfig);
  if (!config.ok()) return Fail(config.status().message());
  kube::ClientOptions client_options;
  client_options.qps = qps;
  client_options.burst = burst;
  client_options.user_agent = fmt::format("phalanx-operator/{}", kVersion);
  auto client = kube::KubeClient::Create(*config, client_options);
  if (!client.ok()) return Fail(client.status().message());

  metrics::Registry registry;
  if (Status s = metrics::RegisterBuildInfo(registry, kVersion, kGitCommit); !s.ok()) return Fail(s.message());
  auto op_metrics = op::OperatorMetrics::Create(registry);
  if (!op_metrics.ok()) return Fail(op_metrics.status().message());

  op::ControllerOptions copts;
  copts.ns = ns;
  copts.workers = workers;
  copts.reconcile.pod.progress_url = progress_url;
  copts.reconcile.stuck_terminating_timeout = std::chrono::seconds(stuck_seconds);
  copts.reconcile.usage_update = std::chrono::seconds(usage_update_seconds);
  copts.reconcile.cost_refresh = std::chrono::seconds(preemption_cost_seconds);
  if (prices) copts.reconcile.prices = &*prices;
  op::Controller controller(**client, copts, **op_metrics, logger, RealClock::Instance());

  http::ServerOptions mo;
  mo.address = metrics_host;
  mo.port = metrics_port;
  mo.max_body_bytes = 4 * 1024;  // GETs only (/metrics, /healthz, /readyz): any body is refused (413)
  mo.logger = logger;
  http::HttpServer metrics_server(mo);
  http::AddStandardEndpoints(metrics_server, {
      [&](std::string* reason) {
        if (!controller.Synced()) {
          *reason = "informers not synced";
          return false;
        }
        return true;
      },
      [&] { return registry.Expose(); },
  });
  if (Status s = metrics_server.Start(); !s.ok()) return Fail("--metrics-addr: " + s.message());

  std::unique_ptr<http::HttpServer> progress_server;
  std::unique_ptr<op::ProgressService> progress;
  if (!progress_addr.empty()) {
    http::ServerOptions po;
    po.address = progress_host;
    po.port = progress_port;
    po.max_body_bytes = 64 * 1024;
    po.logger = logger;
    if (!progress_tls_cert.empty()) po.tls = http::TlsOptions{progress_tls_cert, progress_tls_key, ""};
    progress_server = std::make_unique<http::HttpServer>(po);
    progress = std::make_unique<op::ProgressService>(**client, controller, logger);
    progress->Register(*progress_server);
    http::AddStandardEndpoints(*progress_server, {});
    if (Status s = progress_server->Start(); !s.ok()) return Fail("--progress-addr: " + s.message());
  }

  PHX_LOG_INFO(logger, "Started phalanx-operator", kv("version", kVersion), kv("namespace", ns.empty() ? "*" : ns),
               kv("metricsPort", metrics_server.port()), kv("leaderElect", leader_elect),
               kv("currency", prices ? prices->currency : "none"));
  if (Status s = controller.StartInformers(std::chrono::minutes(2)); !s.ok()) {
    PHX_LOG_ERROR(logger, "Failed to start", kv("err", s.ToString()));
    return kExitRuntime;
  }

  int exit_code = 0;
  std::unique_ptr<kube::LeaderElector> elector;
  std::thread work;
  shutdown.OnShutdown([&] {
    if (elector) elector->Stop();
    controller.Stop();
  });
  if (leader_elect) {
    kube::LeaderElectionConfig lec;
    lec.lease_namespace = lease_namespace;
    lec.lease_name = "phalanx-operator";
    lec.identity = Identity();
    if (Status s = kube::ValidateLeaderElectionConfig(lec); !s.ok()) return Fail(s.message());
    elector = std::make_unique<kube::LeaderElector>(
        **client, lec,
        kube::LeaderCallbacks{[&] {
                                PHX_LOG_INFO(logger, "Became leader", kv("lease", lec.lease_name), kv("identity", lec.identity));
                                controller.Run();
                              },
                              [&] { controller.Stop(); }, nullptr});
    Status s = elector->Run();
    if (!s.ok() && !shutdown.shutdown_started()) {
      PHX_LOG_ERROR(logger, "Lost leadership", kv("err", s.ToString()));
      exit_code = kExitRuntime;
    }
  } else {
    controller.Run();
  }
  if (progress) progress->Stop();
  if (progress_server) progress_server->Shutdown(std::chrono::seconds(2));
  metrics_server.Shutdown(std::chrono::seconds(2));
  PHX_LOG_INFO(logger, "Stopped phalanx-operator");
  return exit_code;
}
