// Soak of phalanx-extender in API-server mode (issue 15, "5,000 nodes, 100,000 pods"): the fake
// API server binary holds N DGX nodes and P pods (GPU pods bound to the busy nodes, CPU-only pods
// beside them); the extender watches it and writes to it; this driver plays the operator (creates
// gated gangs, deletes them when they "finish") and kube-scheduler (lists a gang's pods, filters
// each ungated member over every node name, holds its bind), with --gangs gangs in flight at once,
// for --seconds. A probe filters and prioritizes a 1-GPU pod over every node name every 100 ms.
// It prints, every 10 s, gangs bound, half-bound gangs and the extender's RSS; at the end, API
// requests per second by client, verb and resource (the fake's /fake/request-counts, counted
// from when the extender was ready), the extender's latency and memory, and a verdict:
// zero half-bound gangs (a gang whose binds were answered but not every member is bound, or
// some member's bind failed) and RSS <= --max-rss-mb.
// Not part of `make test` (a 10-minute run); `--nodes 200 --pods 2000 --seconds 10` is the smoke.
// Usage:
//   extender_soak --extender build/extender/phalanx-extender
//       --fake-apiserver build/tests/fakes/apiserver/fake-apiserver
//       [--nodes 5000 --pods 100000 --seconds 600 --gangs 4 --members 16 --run-seconds 5]
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include <CLI/CLI.hpp>

#include "bench/extender/bench_cluster.h"
#include "bench/extender/bench_daemons.h"
#include "bench/extender/bench_http.h"
#include "tests/e2e/harness/process.h"

namespace phalanx::extender::bench {
namespace {

using Clock = std::chrono::steady_clock;
using json::Json;



Json Pod(const std::string& name, int gpus, const std::string& node) {
  Json container = {{"name", "main"}, {"image", "registry.invalid/trainer:1.0"}};
  container["resources"] = gpus > 0 ? Json{{"requests", {{"nvidia.com/gpu", std::to_string(gpus)}}},
                                           {"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}
                                    : Json{{"requests", {{"cpu", "1"}}}};
  Json p = {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata", {{"name", name}, {"namespace", "bench"}, {"labels", Json::object()},
                          {"annotations", Json::object()}}},
            {"spec", {{"schedulerName", "phalanx-scheduler"}, {"containers", Json::array({container})}}},
            {"status", {{"phase", node.empty() ? "Pending" : "Running"}}}};
  if (!node.empty()) p["spec"]["nodeName"] = node;
  return p;
}

Json GangPod(const std::string& gang, int i, int gpus, int members) {
  Json p = Pod(fmt::format("{}-{:03d}", gang, i), gpus, "");
  p["metadata"]["labels"]["phalanx.io/gang"] = gang;
  p["metadata"]["annotations"]["phalanx.io/gang-min-members"] = std::to_string(members);
  p["metadata"]["annotations"]["phalanx.io/gang-timeout-seconds"] = "120";
  p["spec"]["schedulingGates"] = Json::array({{{"name", "phalanx.io/gang"}}});
  return p;
}

struct Latencies {
  std::mutex mu;
  std::map<std::string, std::vector<double>> ms;  // by verb
  void Add(const std::string& verb, double v) {
    std::lock_guard l(mu);
    ms[verb].push_back(v);
  }
};

struct Soak {
  int api_port = 0, port = 0, metrics_port = 0;
  std::string names;  // the NodeNames array of every node
  Latencies latency;
  std::atomic<int> gangs_bound{0}, half_bound{0}, bind_errors{0}, gangs_started{0}, not_admitted{0}, probe_errors{0};
  std::mutex errors_mu;
  std::vector<std::string> errors;

  void Error(std::string e) {
    std::lock_guard l(errors_mu);
    if (errors.size() < 20) errors.push_back(std::move(e));
  }
  // The node filter passes the pod to; "" if none (or several, for a gang member).
  std::string Filter(Conn& c, const Json& pod, bool any) {
    std::string body;
    const auto t0 = Clock::now();
    const int st = c.Call(Conn::Format("POST", "/v1/filter", "{\"Pod\":" + json::Dump(pod) +
                                                                ",\"Nodes\":null,\"NodeNames\":" + names + "}"),
                          &body);
    latency.Add("filter", SecondsSince(t0) * 1e3);
    if (st != 200) return "";
    auto reply = json::Parse(body);
    if (!reply.ok() || !(*reply)["NodeNames"].is_array() || (*reply)["NodeNames"].empty()) return "";
    if (!any && (*reply)["NodeNames"].size() != 1) return "";
    return (*reply)["NodeNames"][0].get<std::string>();
  }
  std::vector<Json> ListGang(const std::string& gang) { return ListGangPods(api_port, "soak-kube-scheduler", gang); }

  // One gang's life: created gated, admitted by the extender, each member filtered and bound
  // (binds held at the barrier), checked whole, run, deleted.
  void GangLife(const std::string& gang, int members, int gpus, double run_s, const std::atomic<bool>& stop) {
    gangs_started++;
    for (int i = 0; i < members; ++i) {
      std::string body;
      const int st = ApiRequest(api_port, "soak-operator", "POST", "/api/v1/namespaces/bench/pods",
                         json::Dump(GangPod(gang, i, gpus, members)), &body);
      if (st / 100 != 2) Error(fmt::format("create {}-{}: HTTP {} {}", gang, i, st, body.substr(0, 200)));
    }
    Conn filter(port);
    std::vector<std::unique_ptr<Conn>> held;
    std::set<std::string> sent;
    const auto t0 = Clock::now();
    // Once a bind is held, the gang is seen through (held binds are answered only when every
    // member's bind came, or at the gang's timeout); one not admitted yet is given up on stop.
    while (static_cast<int>(sent.size()) < members && SecondsSince(t0) < 100 && !(sent.empty() && stop.load())) {
      for (const Json& pod : ListGang(gang)) {
        const std::string name = pod["metadata"]["name"].get<std::string>();
        const bool gated = pod["spec"].contains("schedulingGates") && !pod["spec"]["schedulingGates"].empty();
        if (gated || sent.contains(name)) continue;
        const std::string node = Filter(filter, pod, false);
        if (node.empty()) continue;
        auto c = std::make_unique<Conn>(port);
        const Json& m = pod["metadata"];
        if (!c->ok() || !c->Send(Conn::Format("POST", "/v1/bind",
                                               json::Dump(Json{{"PodName", m["name"]}, {"PodNamespace", m["namespace"]},
                                                               {"PodUID", m["uid"]}, {"Node", node}})))) {
          continue;
        }
        held.push_back(std::move(c));
        sent.insert(name);
      }
      if (static_cast<int>(sent.size()) < members) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    int ok = 0;
    for (auto& c : held) {
      std::string body;
      if (c->Read(&body) == 200 && body == "{\"Error\":\"\"}") {
        ok++;
      } else {
        bind_errors++;
        Error(fmt::format("gang {}: bind answered {}", gang, body.substr(0, 200)));
      }
    }
    latency.Add("gang admitted to all bound", SecondsSince(t0) * 1e3);
    // Whole or nothing: after the barrier every member is bound, or (a failed barrier) none.
    int bound = 0;
    const auto pods = ListGang(gang);
    for (const Json& pod : pods) bound += pod["spec"].contains("nodeName") && !pod["spec"]["nodeName"].empty();
    if (ok == members && bound == members) {
      gangs_bound++;
    } else if (sent.empty()) {
      not_admitted++;
    } else if (bound > 0 && bound < static_cast<int>(pods.size())) {
      half_bound++;
      Error(fmt::format("gang {}: {} of {} members bound ({} binds answered OK, {} sent)", gang, bound, pods.size(), ok,
                        sent.size()));
    }
    for (auto t1 = Clock::now(); SecondsSince(t1) < run_s && !stop.load();) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    // The operator deletes the pods (bound pods go Terminating: they still hold their GPUs),
    // then the kubelet, once the containers stopped, removes them (grace period 0).
    for (const Json& pod : pods) {
      std::string body;
      ApiRequest(api_port, "soak-operator", "DELETE",
          "/api/v1/namespaces/bench/pods/" + pod["metadata"]["name"].get<std::string>(), "", &body);
    }
    for (const Json& pod : pods) {
      std::string body;
      ApiRequest(api_port, "soak-kubelet", "DELETE",
          "/api/v1/namespaces/bench/pods/" + pod["metadata"]["name"].get<std::string>() + "?gracePeriodSeconds=0", "",
          &body);
    }
  }
};

long RssKb(pid_t pid, const char* field) {
  const std::string status = ReadFile(fmt::format("/proc/{}/status", pid));
  const size_t at = status.find(field);
  return at == std::string::npos ? -1 : std::atol(status.c_str() + at + std::strlen(field) + 1);
}


bool Seed(int port, const Json& items) {
  std::string body;
  const int st = ApiRequest(port, "soak-seed", "POST", "/fake/seed", json::Dump(items), &body);
  if (st / 100 != 2) std::fprintf(stderr, "seed: HTTP %d %s\n", st, body.substr(0, 300).c_str());
  return st / 100 == 2;
}

int Main(int argc, char** argv) {
  CLI::App app{"Soak of phalanx-extender against the fake API server (bench/RESULTS.md, docs/api-requests.md)"};
  std::string binary = "build/extender/phalanx-extender", fake = "build/tests/fakes/apiserver/fake-apiserver";
  int nodes = 5000, pods = 100000, seconds = 600, gangs = 4, members = 16, gpus = 8, write_latency = 0;
  double run_s = 5, gpu_pod_share = 0.3, max_rss_mb = 300;
  std::vector<std::string> extra;
  app.add_option("--extender", binary, "phalanx-extender binary")->capture_default_str();
  app.add_option("--fake-apiserver", fake, "fake-apiserver binary")->capture_default_str();
  app.add_option("--nodes", nodes, "DGX H100 nodes (8 GPUs each)")->check(CLI::Range(10, 100000))->capture_default_str();
  app.add_option("--pods", pods, "Pods seeded before the churn")->check(CLI::Range(0, 1000000))->capture_default_str();
  app.add_option("--gpu-pod-share", gpu_pod_share, "Of them, bound 1-GPU pods (the rest request no GPU)")
      ->check(CLI::Range(0.0, 1.0))->capture_default_str();
  app.add_option("--seconds", seconds, "Churn duration")->check(CLI::Range(1, 86400))->capture_default_str();
  app.add_option("--gangs", gangs, "Gangs in flight at once")->check(CLI::Range(1, 64))->capture_default_str();
  app.add_option("--members", members, "Members per gang")->check(CLI::Range(1, 512))->capture_default_str();
  app.add_option("--gpus", gpus, "GPUs per member")->check(CLI::Range(1, 8))->capture_default_str();
  app.add_option("--run-seconds", run_s, "How long a bound gang runs before it is deleted")->capture_default_str();
  app.add_option("--write-latency-ms", write_latency, "The fake's latency per write")->capture_default_str();
  app.add_option("--max-rss-mb", max_rss_mb, "Verdict: the extender's RSS bound")->capture_default_str();
  app.add_option("extender-flags", extra, "Extra phalanx-extender flags (after --)");
  CLI11_PARSE(app, argc, argv);

  const std::string dir = (std::filesystem::temp_directory_path() / ("extender-soak-" + std::to_string(::getpid()))).string();
  std::filesystem::create_directories(dir);
  Soak s;
  FakeApiServer api = StartFakeApiServer(fake, dir, write_latency);
  if (api.port == 0) return 1;
  s.api_port = api.port;

  // The cluster: nodes, then GPU pods bound to the first nodes (8 per node: those nodes are
  // full) and CPU-only pods, seeded in batches. The gangs run on the nodes left free.
  const auto seed0 = Clock::now();
  Json batch = Json::array();
  batch.push_back({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "bench"}}}});
  batch.push_back({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "phalanx-system"}}}});
  auto list = json::Parse(SnapshotJson({.nodes = nodes}));
  if (!list.ok()) return 1;
  for (auto& n : (*list)["items"]) batch.push_back(n);
  if (!Seed(s.api_port, batch)) return 1;
  const int gpu_pods = std::min(static_cast<int>(pods * gpu_pod_share), (nodes - 1) * 8);
  batch = Json::array();
  for (int i = 0; i < pods; ++i) {
    batch.push_back(i < gpu_pods ? Pod(fmt::format("busy-{:06d}", i), 1, NodeName(i / 8))
                                 : Pod(fmt::format("cpu-{:06d}", i), 0, ""));
    if (batch.size() == 5000 || i + 1 == pods) {
      if (!Seed(s.api_port, batch)) return 1;
      batch = Json::array();
    }
  }
  const int free_nodes = nodes - (gpu_pods + 7) / 8;
  std::printf("cluster: %d DGX H100 nodes (%d free), %d pods (%d bound 1-GPU, %d CPU-only), seeded in %.1f s\n", nodes,
              free_nodes, pods, gpu_pods, pods - gpu_pods, SecondsSince(seed0));
  s.names = "[";
  for (int i = 0; i < nodes; ++i) s.names += (i ? ",\"" : "\"") + NodeName(i) + "\"";
  s.names += "]";

  const std::string config = dir + "/extender.yaml";
  std::ofstream(config) << "httpTimeoutSeconds: 130\n";
  std::vector<std::string> args = {"--kubeconfig", dir + "/kubeconfig", "--listen", "127.0.0.1:0", "--metrics-addr",
                                   "127.0.0.1:0", "--config", config, "--leader-elect=false"};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto start0 = Clock::now();
  ExtenderDaemon ext = StartExtender(binary, std::move(args), dir, 300);
  if (!ext.ready) return 1;
  s.port = ext.port;
  s.metrics_port = ext.metrics_port;
  std::printf("extender ready %.1f s after start (informers synced); RSS %ld MB (peak %ld MB)\n", SecondsSince(start0),
              RssKb(ext.process->pid(), "VmRSS:") / 1024, RssKb(ext.process->pid(), "VmHWM:") / 1024);
  std::string counts_body;
  ApiRequest(s.api_port, "soak-driver", "GET", "/fake/request-counts", "", &counts_body);
  std::printf("API requests until ready (by client): %s\n", counts_body.c_str());
  ApiRequest(s.api_port, "soak-driver", "DELETE", "/fake/request-counts", "", &counts_body);

  // The churn: --gangs workers, each creating, binding, running and deleting gangs; a probe.
  std::atomic<bool> stop{false};
  const auto churn0 = Clock::now();
  std::vector<std::thread> workers;
  std::atomic<int> next_gang{0};
  for (int w = 0; w < gangs; ++w) {
    workers.emplace_back([&] {
      while (!stop.load()) s.GangLife(fmt::format("g{:05d}", next_gang++), members, gpus, run_s, stop);
    });
  }
  workers.emplace_back([&] {
    Conn c(s.port);
    Json probe = Pod("probe", 1, "");
    probe["metadata"]["uid"] = "uid-probe";  // as kube-scheduler sends it: a stored pod
    const std::string body = "{\"Pod\":" + json::Dump(probe) + ",\"Nodes\":null,\"NodeNames\":" + s.names + "}";
    while (!stop.load()) {
      std::string reply;
      auto t0 = Clock::now();
      if (c.Call(Conn::Format("POST", "/v1/filter", body), &reply) != 200 || reply.find("\"NodeNames\":[\"") == std::string::npos) {
        if (s.probe_errors++ == 0) s.Error("probe filter: " + reply.substr(0, 200));
      }
      s.latency.Add("probe filter (1 GPU)", SecondsSince(t0) * 1e3);
      t0 = Clock::now();
      if (c.Call(Conn::Format("POST", "/v1/prioritize", body), &reply) != 200 || reply.find("\"Score\"") == std::string::npos) {
        if (s.probe_errors++ == 0) s.Error("probe prioritize: " + reply.substr(0, 200));
      }
      s.latency.Add("probe prioritize (1 GPU)", SecondsSince(t0) * 1e3);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  long peak_rss = 0;
  while (SecondsSince(churn0) < seconds) {
    std::this_thread::sleep_for(std::chrono::seconds(std::min(10, std::max(1, seconds / 10))));
    const long rss = RssKb(ext.process->pid(), "VmRSS:");
    peak_rss = std::max(peak_rss, rss);
    if (!ext.process->Running()) {
      std::fprintf(stderr, "the extender exited:\n%s\n", ext.process->LogTail().c_str());
      break;
    }
    std::printf("%5.0f s: %d gangs bound, %d half-bound, %d bind errors; extender RSS %ld MB\n", SecondsSince(churn0),
                s.gangs_bound.load(), s.half_bound.load(), s.bind_errors.load(), rss / 1024);
    std::fflush(stdout);
  }
  stop = true;
  for (auto& t : workers) t.join();
  const double churn_s = SecondsSince(churn0);
  ApiRequest(s.api_port, "soak-driver", "GET", "/fake/request-counts", "", &counts_body);

  std::printf("\n== API requests during the churn (%.0f s), per second, by client / verb / resource\n", churn_s);
  auto counts = json::Parse(counts_body);
  if (counts.ok()) {
    for (auto& [client, verbs] : counts->items()) {
      for (auto& [verb, resources] : verbs.items()) {
        for (auto& [resource, n] : resources.items()) {
          std::printf("  %-28s %-8s %-34s %8.0f  %8.2f/s\n", client.c_str(), verb.c_str(), resource.c_str(),
                      n.get<double>(), n.get<double>() / churn_s);
        }
      }
    }
  }
  std::printf("\n== latency (client side, ms): count, p50, p99, max\n");
  for (auto& [verb, v] : s.latency.ms) {
    const double max = v.empty() ? 0 : *std::max_element(v.begin(), v.end());
    const size_t n = v.size();
    const double p50 = Percentile(v, 0.5), p99 = Percentile(v, 0.99);
    std::printf("  %-30s %7zu %9.2f %9.2f %9.2f\n", verb.c_str(), n, p50, p99, max);
  }
  const long rss = RssKb(ext.process->pid(), "VmRSS:"), hwm = RssKb(ext.process->pid(), "VmHWM:");
  peak_rss = std::max(peak_rss, rss);
  std::printf("\n== extender memory: RSS %ld MB now, %ld MB highest sampled during the churn, VmHWM %ld MB\n",
              rss / 1024, peak_rss / 1024, hwm / 1024);
  std::printf("== gangs: %d started, %d bound whole, %d half-bound, %d not admitted within 100 s, %d bind errors; "
              "%d probe errors\n",
              s.gangs_started.load(), s.gangs_bound.load(), s.half_bound.load(), s.not_admitted.load(),
              s.bind_errors.load(), s.probe_errors.load());
  for (const auto& e : s.errors) std::printf("  %s\n", e.c_str());
  const bool pass = s.half_bound.load() == 0 && s.bind_errors.load() == 0 && s.probe_errors.load() == 0 &&
                    peak_rss / 1024.0 <= max_rss_mb && s.gangs_bound.load() > 0;
  std::printf("== verdict: %s (zero half-bound gangs, no bind or probe error, RSS <= %.0f MB, a gang bound)\n",
              pass ? "PASS" : "FAIL", max_rss_mb);
  if (!pass) std::printf("extender log tail:\n%s\n", ext.process->LogTail(3000).c_str());
  ext.process->Stop();
  api.process->Stop();
  std::filesystem::remove_all(dir);
  return pass ? 0 : 1;
}

}  // namespace
}  // namespace phalanx::extender::bench

int main(int argc, char** argv) { return phalanx::extender::bench::Main(argc, argv); }
