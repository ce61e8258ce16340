// API-server-mode load driver for the extender's write pipeline (issue 15 item 2): it starts the
// fake API server binary with a per-write latency, seeds DGX nodes, starts phalanx-extender
// against it, and plays kube-scheduler over real HTTP (list the gang's pods from the API, filter
// each ungated member, send its bind and hold the connection), measuring
//   gang         a M x G gang (gated, min = M): from the gang existing (admission) to every bind
//                answered, with the gate-lift and commit phases
//   held         a gang of H+1 1-GPU members: H binds held at the barrier, then the last member;
//                the time from the last member's bind to every held bind answered
//   single-pod   during either commit, binds of 1-GPU pods (not gang members), one after another:
//                their latency (the gang's writes must not delay them)
// Usage:
//   extender_api_load --extender build/extender/phalanx-extender
//       --fake-apiserver build/tests/fakes/apiserver/fake-apiserver --write-latency-ms 5
//       --scenario gang --members 256 --gpus 8 [--singles 20] [-- <extra extender flags>]

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <regex>
#include <set>
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




struct Bench {
  int api_port = 0, port = 0, metrics_port = 0;
  int nodes = 0;

  std::string Names() const {
    std::string s = "[";
    for (int i = 0; i < nodes; ++i) s += (i ? ",\"" : "\"") + NodeName(i) + "\"";
    return s + "]";
  }
  // Pods of `gang` as the API has them.
  std::vector<Json> ListGang(const std::string& gang) const { return ListGangPods(api_port, "api-load", gang); }
  // The node the extender's filter passes the pod to ("" if none or several).
  std::string FilterOne(Conn& c, const Json& pod, bool any = false) const {
    std::string body;
    const std::string req = Conn::Format("POST", "/v1/filter", "{\"Pod\":" + json::Dump(pod) +
                                                                   ",\"Nodes\":null,\"NodeNames\":" + Names() + "}");
    if (c.Call(req, &body) != 200) return "";
    auto reply = json::Parse(body);
    if (!reply.ok() || !(*reply)["NodeNames"].is_array()) return "";
    const auto& names = (*reply)["NodeNames"];
    if (names.empty() || (!any && names.size() != 1)) return "";
    return names[0].get<std::string>();
  }
  static std::string BindRequest(const Json& pod, const std::string& node) {
    const Json& m = pod["metadata"];
    return Conn::Format("POST", "/v1/bind",
                        json::Dump(Json{{"PodName", m["name"]}, {"PodNamespace", m["namespace"]},
                                        {"PodUID", m["uid"]}, {"Node", node}}));
  }
  double HeldBinds() const {
    std::string body;
    Conn c(metrics_port);
    if (!c.ok() || c.Call("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", &body) != 200) return -1;
    std::smatch m;
    static const std::regex re("phalanx_extender_held_binds ([0-9.e+]+)");
    return std::regex_search(body, m, re) ? std::stod(m[1]) : -1;
  }
};

Json PodObject(const std::string& name, int gpus, const std::string& gang, int min_members) {
  Json p = {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata", {{"name", name}, {"namespace", "bench"}, {"labels", Json::object()}, {"annotations", Json::object()}}},
            {"spec",
             {{"schedulerName", "phalanx-scheduler"},
              {"containers", Json::array({{{"name", "main"},
                                           {"image", "registry.invalid/trainer:1.0"},
                                           {"resources", {{"requests", {{"nvidia.com/gpu", std::to_string(gpus)}}},
                                                          {"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}})}}},
            {"status", {{"phase", "Pending"}}}};
  if (!gang.empty()) {
    p["metadata"]["labels"]["phalanx.io/gang"] = gang;
    p["metadata"]["annotations"]["phalanx.io/gang-min-members"] = std::to_string(min_members);
    p["metadata"]["annotations"]["phalanx.io/gang-timeout-seconds"] = "600";
    p["spec"]["schedulingGates"] = Json::array({{{"name", "phalanx.io/gang"}}});
  }
  return p;
}

bool Seed(const Bench& b, const Json& items) {
  std::string body;
  const int st = ApiRequest(b.api_port, "api-load", "POST", "/fake/seed", json::Dump(items), &body);
  if (st / 100 != 2) std::fprintf(stderr, "seed: HTTP %d %s\n", st, body.substr(0, 300).c_str());
  return st / 100 == 2;
}

// Single-pod binds, one after another, while `running`; latencies in ms.
struct Singles {
  std::vector<Json> pods;
  std::vector<double> ms;
  std::vector<std::string> errors;
  std::thread thread;

  void Start(const Bench& b, const std::atomic<bool>& running) {
    thread = std::thread([this, &b, &running] {
      Conn c(b.port);
      for (const Json& pod : pods) {
        if (!running.load()) break;
        const std::string node = b.FilterOne(c, pod, /*any=*/true);
        std::string body;
        const auto t0 = Clock::now();
        const int st = c.Call(Bench::BindRequest(pod, node), &body);
        const double took = SecondsSince(t0) * 1e3;
        if (st != 200 || body != "{\"Error\":\"\"}") errors.push_back(body.substr(0, 200));
        ms.push_back(took);
      }
    });
  }
  void Report() {
    if (thread.joinable()) thread.join();
    if (ms.empty()) {
      std::printf("single-pod binds during the commit: none made (the commit was over first)\n");
      return;
    }
    std::vector<double> v = ms;
    const double max = *std::max_element(v.begin(), v.end());
    std::printf("single-pod binds during the commit: %zu, p50 %.1f ms, max %.1f ms, %zu errors\n", v.size(),
                Percentile(v, 0.5), max, errors.size());
    for (const auto& e : errors) std::printf("  error: %s\n", e.c_str());
  }
};

// Plays the scheduler for the gang's members: filter each ungated member, send its bind (held
// open). Stops after `want` binds sent; the connections in *conns.
bool SendBinds(const Bench& b, const std::string& gang, size_t want, std::vector<std::unique_ptr<Conn>>& conns,
               std::set<std::string>& sent, Clock::time_point t0, double* ungated_s) {
  Conn filter(b.port);
  *ungated_s = -1;
  while (sent.size() < want) {
    if (SecondsSince(t0) > 300) {
      std::fprintf(stderr, "%zu of %zu binds sent after 300 s\n", sent.size(), want);
      return false;
    }
    const auto pods = b.ListGang(gang);
    size_t ungated = 0;
    for (const Json& pod : pods) {
      const bool gated = pod["spec"].contains("schedulingGates") && !pod["spec"]["schedulingGates"].empty();
      if (gated) continue;
      ungated++;
      const std::string name = pod["metadata"]["name"].get<std::string>();
      if (sent.size() >= want || sent.contains(name)) continue;
      const std::string node = b.FilterOne(filter, pod);
      if (node.empty()) continue;  // not pinned yet: next pass
      auto c = std::make_unique<Conn>(b.port);
      if (!c->ok() || !c->Send(Bench::BindRequest(pod, node))) return false;
      conns.push_back(std::move(c));
      sent.insert(name);
    }
    if (*ungated_s < 0 && ungated == pods.size() && !pods.empty()) *ungated_s = SecondsSince(t0);
    if (sent.size() < want) std::this_thread::sleep_for(std::chrono::milliseconds(20));  // next LIST
  }
  return true;
}

int ReadAll(std::vector<std::unique_ptr<Conn>>& conns, std::string* first_error) {
  int ok = 0;
  std::string body;
  for (auto& c : conns) {
    if (c->Read(&body) == 200 && body == "{\"Error\":\"\"}") {
      ok++;
    } else if (first_error->empty()) {
      *first_error = body.substr(0, 300);
    }
  }
  return ok;
}

int Main(int argc, char** argv) {
  CLI::App app{"API-server-mode load driver for phalanx-extender's write pipeline (bench/RESULTS.md)"};
  std::string binary = "build/extender/phalanx-extender", fake = "build/tests/fakes/apiserver/fake-apiserver";
  std::string scenario = "gang";
  int members = 256, gpus = 8, spare = 8, singles = 20, write_latency = 5;
  std::vector<std::string> extra;
  app.add_option("--extender", binary, "phalanx-extender binary")->capture_default_str();
  app.add_option("--fake-apiserver", fake, "fake-apiserver binary")->capture_default_str();
  app.add_option("--write-latency-ms", write_latency, "The fake's latency per write")->capture_default_str();
  app.add_option("--scenario", scenario, "gang (M x G, all binds) or held (M-1 held, then the last)")
      ->check(CLI::IsMember({"gang", "held"}))->capture_default_str();
  app.add_option("--members", members, "Gang members")->capture_default_str();
  app.add_option("--gpus", gpus, "GPUs per member (1..8)")->check(CLI::Range(1, 8))->capture_default_str();
  app.add_option("--spare-nodes", spare, "Nodes beyond the gang's, for the single pods")->capture_default_str();
  app.add_option("--singles", singles, "Single-pod binds to make during the commit")->capture_default_str();
  app.add_option("extender-flags", extra, "Extra phalanx-extender flags (after --)");
  CLI11_PARSE(app, argc, argv);

  const std::string dir = (std::filesystem::temp_directory_path() / ("extender-api-load-" + std::to_string(::getpid()))).string();
  std::filesystem::create_directories(dir);
  Bench b;
  b.nodes = (members * gpus + 7) / 8 + spare;
  FakeApiServer api = StartFakeApiServer(fake, dir, write_latency);
  if (api.port == 0) return 1;
  b.api_port = api.port;
  Json seed = Json::array();
  seed.push_back({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "bench"}}}});
  seed.push_back({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "phalanx-system"}}}});
  auto list = json::Parse(SnapshotJson({.nodes = b.nodes}));
  if (!list.ok()) return 1;
  for (auto& n : (*list)["items"]) seed.push_back(n);
  Singles single;
  for (int i = 0; i < singles; ++i) {
    seed.push_back(PodObject(fmt::format("solo-{:03d}", i), 1, "", 0));
  }
  if (!Seed(b, seed)) return 1;
  for (int i = 0; i < singles; ++i) {
    std::string body;
    ApiRequest(b.api_port, "api-load", "GET", fmt::format("/api/v1/namespaces/bench/pods/solo-{:03d}", i), "", &body);
    auto p = json::Parse(body);
    if (p.ok()) single.pods.push_back(*p);
  }

  const std::string config = dir + "/extender.yaml";
  std::ofstream(config) << "httpTimeoutSeconds: 300\ngangTimeoutSeconds: 600\n";
  std::vector<std::string> args = {"--kubeconfig", dir + "/kubeconfig", "--listen", "127.0.0.1:0",
                                   "--metrics-addr", "127.0.0.1:0", "--config", config, "--leader-elect=false",
                                   "--read-timeout-seconds", "600"};
  args.insert(args.end(), extra.begin(), extra.end());
  ExtenderDaemon ext = StartExtender(binary, std::move(args), dir, 120);
  if (!ext.ready) return 1;
  b.port = ext.port;
  b.metrics_port = ext.metrics_port;
  std::printf("cluster: %d DGX H100 nodes, fake API server write latency %d ms; extender flags:", b.nodes, write_latency);
  for (const auto& e : extra) std::printf(" %s", e.c_str());
  std::printf("\n");

  // The gang exists: admission, gate lifts, filters and binds start now.
  Json gang = Json::array();
  for (int i = 0; i < members; ++i) gang.push_back(PodObject(fmt::format("g-{:05d}", i), gpus, "g", members));
  const auto t0 = Clock::now();
  if (!Seed(b, gang)) return 1;
  std::vector<std::unique_ptr<Conn>> conns;
  std::set<std::string> sent;
  double ungated_s = -1;
  const size_t first = scenario == "held" ? static_cast<size_t>(members - 1) : static_cast<size_t>(members);
  if (!SendBinds(b, "g", first, conns, sent, t0, &ungated_s)) return 1;
  const double sent_s = SecondsSince(t0);
  std::atomic<bool> committing{true};
  int rc = 0;
  std::string error;
  if (scenario == "gang") {
    single.Start(b, committing);
    const int ok = ReadAll(conns, &error);
    committing = false;
    const double all_s = SecondsSince(t0);
    std::printf("gang %d x %d: every gate lifted %.2f s, last bind sent %.2f s, all %d binds answered %.2f s after "
                "the gang existed (%d with Error \"\")%s%s\n",
                members, gpus, ungated_s, sent_s, members, all_s, ok, error.empty() ? "" : "; first error: ",
                error.c_str());
    rc = ok == members ? 0 : 1;
  } else {
    for (auto w0 = Clock::now(); b.HeldBinds() < static_cast<double>(first);) {
      if (SecondsSince(w0) > 120) return std::fprintf(stderr, "the extender never held %zu binds\n", first), 1;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::printf("held: %zu binds held %.2f s after the gang existed\n", first, SecondsSince(t0));
    const auto r0 = Clock::now();
    if (!SendBinds(b, "g", first + 1, conns, sent, t0, &ungated_s)) return 1;
    single.Start(b, committing);
    const int ok = ReadAll(conns, &error);
    committing = false;
    std::printf("held: last member's bind sent; all %d binds answered within %.2f s (%d with Error \"\")%s%s\n",
                members, SecondsSince(r0), ok, error.empty() ? "" : "; first error: ", error.c_str());
    rc = ok == members ? 0 : 1;
  }
  single.Report();
  std::filesystem::remove_all(dir);
  return rc;
}

}  // namespace
}  // namespace phalanx::extender::bench

int main(int argc, char** argv) { return phalanx::extender::bench::Main(argc, argv); }
