// Informer initial sync of 5,000 nodes + 100,000 pods (realistic sizes, canned_objects.cc) from
// a local HTTP server in a forked child process (so its memory is not counted), into lean
// typed structs as the extender keeps them; plus decode cost per object. Numbers:
// bench/RESULTS.md (core/kube section).
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <benchmark/benchmark.h>

#include <chrono>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "bench/core/kube/canned_objects.h"
#include "core/http/http_server.h"
#include "core/json/fast_json.h"
#include "core/kube/informer.h"
#include "core/kube/malloc_tuning.h"

namespace phalanx::kube::bench {
namespace {

constexpr int kNodes = 5000;
constexpr int kPods = 100000;

struct PodLite {
  std::string ns, name, uid, node, gang, phase;
  int32_t gpus = 0;
  int32_t priority = 0;
  bool deleting = false;
};

struct NodeLite {
  std::string name, product, rack, nvlink_domain;
  int32_t gpus = 0;
  std::string topology;  // raw annotation; the extender decodes it into core/topology
};

std::string Get(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}
int32_t Quantity(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return 0;
  return static_cast<int32_t>(std::strtol(it->get_ref<const std::string&>().c_str(), nullptr, 10));
}

Result<PodLite> DecodePod(const Json& j) {
  PodLite p;
  const Json& m = j.at("metadata");
  p.ns = Get(m, "namespace");
  p.name = Get(m, "name");
  p.uid = Get(m, "uid");
  p.deleting = m.contains("deletionTimestamp");
  if (auto l = m.find("labels"); l != m.end()) p.gang = Get(*l, "phalanx.io/gang");
  if (auto s = j.find("spec"); s != j.end()) {
    p.node = Get(*s, "nodeName");
    if (auto pr = s->find("priority"); pr != s->end() && pr->is_number_integer()) p.priority = pr->get<int32_t>();
    if (auto cs = s->find("containers"); cs != s->end()) {
      for (const auto& c : *cs) {
        if (c.contains("resources") && c["resources"].contains("requests")) {
          p.gpus += Quantity(c["resources"]["requests"], "nvidia.com/gpu");
        }
      }
    }
  }
  if (auto s = j.find("status"); s != j.end()) p.phase = Get(*s, "phase");
  p.ns.shrink_to_fit();
  return p;
}

Result<NodeLite> DecodeNode(const Json& j) {
  NodeLite n;
  const Json& m = j.at("metadata");
  n.name = Get(m, "name");
  if (auto l = m.find("labels"); l != m.end()) {
    n.product = Get(*l, "phalanx.io/gpu.product");
    n.rack = Get(*l, "topology.kubernetes.io/rack");
    n.nvlink_domain = Get(*l, "phalanx.io/nvlink-domain");
  }
  if (auto a = m.find("annotations"); a != m.end()) n.topology = Get(*a, "phalanx.io/gpu-topology");
  if (auto s = j.find("status"); s != j.end() && s->contains("allocatable")) {
    n.gpus = Quantity((*s)["allocatable"], "nvidia.com/gpu");
  }
  return n;
}

// The same decoders over raw text with simdjson on-demand (the fast path, Informer::RawDecode).
namespace od = simdjson::ondemand;

#define PHX_SJ(expr) \
  if (auto err_ = (expr)) return json::SimdjsonError(err_, #expr)

Result<PodLite> DecodePodRaw(std::string_view text) {
  thread_local json::FastJsonParser parser;
  PHX_ASSIGN_OR_RETURN(od::document * doc, parser.Iterate(text));
  PodLite p;
  od::object root;
  PHX_SJ(doc->get_object().get(root));
  for (auto field : root) {
    std::string_view key;
    PHX_SJ(field.unescaped_key().get(key));
    od::object o;
    if (key == "metadata") {
      PHX_SJ(field.value().get_object().get(o));
      for (auto m : o) {
        std::string_view k, v;
        PHX_SJ(m.unescaped_key().get(k));
        if (k == "namespace" || k == "name" || k == "uid") {
          PHX_SJ(m.value().get_string().get(v));
          (k == "namespace" ? p.ns : k == "name" ? p.name : p.uid).assign(v);
        } else if (k == "deletionTimestamp") {
          p.deleting = true;
        } else if (k == "labels") {
          od::object labels;
          PHX_SJ(m.value().get_object().get(labels));
          for (auto l : labels) {
            PHX_SJ(l.unescaped_key().get(k));
            if (k == "phalanx.io/gang") {
              PHX_SJ(l.value().get_string().get(v));
              p.gang.assign(v);
            }
          }
        }
      }
    } else if (key == "spec") {
      PHX_SJ(field.value().get_object().get(o));
      for (auto s : o) {
        std::string_view k, v;
        PHX_SJ(s.unescaped_key().get(k));
        if (k == "nodeName") {
          PHX_SJ(s.value().get_string().get(v));
          p.node.assign(v);
        } else if (k == "priority") {
          int64_t prio;
          PHX_SJ(s.value().get_int64().get(prio));
          p.priority = static_cast<int32_t>(prio);
        } else if (k == "containers") {
          od::array cs;
          PHX_SJ(s.value().get_array().get(cs));
          for (auto c : cs) {
            od::object co;
            PHX_SJ(c.get_object().get(co));
            std::string_view gpus;
            if (co.find_field_unordered("resources").find_field_unordered("requests")
                    .find_field_unordered("nvidia.com/gpu").get_string().get(gpus) == simdjson::SUCCESS) {
              p.gpus += static_cast<int32_t>(std::strtol(std::string(gpus).c_str(), nullptr, 10));
            }
          }
        }
      }
    } else if (key == "status") {
      std::string_view phase;
      PHX_SJ(field.value().get_object().get(o));
      if (o.find_field_unordered("phase").get_string().get(phase) == simdjson::SUCCESS) p.phase.assign(phase);
    }
  }
  return p;
}

Result<NodeLite> DecodeNodeRaw(std::string_view text) {
  thread_local json::FastJsonParser parser;
  PHX_ASSIGN_OR_RETURN(od::document * doc, parser.Iterate(text));
  NodeLite n;
  od::object root;
  PHX_SJ(doc->get_object().get(root));
  for (auto field : root) {
    std::string_view key;
    PHX_SJ(field.unescaped_key().get(key));
    od::object o;
    if (key == "metadata") {
      PHX_SJ(field.value().get_object().get(o));
      for (auto m : o) {
        std::string_view k, v;
        PHX_SJ(m.unescaped_key().get(k));
        if (k == "name") {
          PHX_SJ(m.value().get_string().get(v));
          n.name.assign(v);
        } else if (k == "labels" || k == "annotations") {
          const bool labels = k == "labels";
          od::object kv;
          PHX_SJ(m.value().get_object().get(kv));
          for (auto e : kv) {
            PHX_SJ(e.unescaped_key().get(k));
            std::string* dest = labels ? (k == "phalanx.io/gpu.product"          ? &n.product
                                          : k == "topology.kubernetes.io/rack"   ? &n.rack
                                          : k == "phalanx.io/nvlink-domain"      ? &n.nvlink_domain
                                                                                 : nullptr)
                                       : (k == "phalanx.io/gpu-topology" ? &n.topology : nullptr);
            if (dest == nullptr) continue;
            PHX_SJ(e.value().get_string().get(v));
            dest->assign(v);
          }
        }
      }
    } else if (key == "status") {
      PHX_SJ(field.value().get_object().get(o));
      std::string_view gpus;
      if (o.find_field_unordered("allocatable").find_field_unordered("nvidia.com/gpu").get_string().get(gpus) ==
          simdjson::SUCCESS) {
        n.gpus = static_cast<int32_t>(std::strtol(std::string(gpus).c_str(), nullptr, 10));
      }
    }
  }
  return n;
}

long StatusKb(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) return std::strtol(line.c_str() + std::strlen(field), nullptr, 10);
  }
  return -1;
}

// The list/watch server, in a child process.
[[noreturn]] void ServeChild(int port_fd, int parent_alive_fd) {
  http::ServerOptions so;
  so.io_threads = 1;
  http::HttpServer server(so);
  std::mutex mu;
  std::vector<http::ResponseWriter> watches;
  auto handler = [&](bool pods) {
    return [&, pods](http::Request&& r, http::ResponseWriter&& w) {
      if (r.QueryValue("watch")) {
        w.StartStream(200, "application/json");
        std::lock_guard lock(mu);
        watches.push_back(std::move(w));
        return;
      }
      const int total = pods ? kPods : kNodes;
      int limit = total, offset = 0;
      if (auto l = r.QueryValue("limit")) limit = std::stoi(std::string(*l));
      if (auto c = r.QueryValue("continue")) offset = std::stoi(std::string(*c));
      const int end = std::min(total, offset + limit);
      std::string body = pods ? R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"999999")"
                              : R"({"kind":"NodeList","apiVersion":"v1","metadata":{"resourceVersion":"999999")";
      if (end < total) body += R"(,"continue":")" + std::to_string(end) + "\"";
      body += R"(},"items":[)";
      for (int i = offset; i < end; ++i) {
        if (i > offset) body += ',';
        body += pods ? PodJson(i, kNodes) : NodeJson(i);
      }
      body += "]}";
      w.Reply({200, "application/json", {}, std::move(body)});
    };
  };
  server.HandlePrefix("GET", "/api/v1/pods", handler(true));
  server.HandlePrefix("GET", "/api/v1/nodes", handler(false));
  if (!server.Start().ok()) _exit(1);
  const uint16_t port = server.port();
  if (write(port_fd, &port, sizeof port) != sizeof port) _exit(1);
  char c;
  while (read(parent_alive_fd, &c, 1) > 0) {
  }
  {
    std::lock_guard lock(mu);
    for (auto& w : watches) w.EndStream();
  }
  server.Shutdown(std::chrono::milliseconds(100));
  _exit(0);
}

uint16_t g_port = 0;

void BM_DecodePod(benchmark::State& state) {
  const std::string text = PodJson(12345, kNodes);
  for (auto _ : state) {
    auto j = json::Parse(text);
    auto p = DecodePod(*j);
    benchmark::DoNotOptimize(p);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["object_bytes"] = static_cast<double>(text.size());
}
BENCHMARK(BM_DecodePod);

void BM_DecodePodOnly(benchmark::State& state) {  // decode from an already parsed tree
  const Json j = *json::Parse(PodJson(12345, kNodes));
  for (auto _ : state) {
    auto p = DecodePod(j);
    benchmark::DoNotOptimize(p);
  }
}
BENCHMARK(BM_DecodePodOnly);

void BM_DecodePodRaw(benchmark::State& state) {
  const std::string text = PodJson(12345, kNodes);
  auto check = DecodePodRaw(text);
  if (!check.ok() || check->gpus != 2 || check->gang.empty() || check->node.empty()) {
    state.SkipWithError("raw pod decoder is wrong");
    return;
  }
  for (auto _ : state) {
    auto p = DecodePodRaw(text);
    benchmark::DoNotOptimize(p);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_DecodePodRaw);

void BM_DecodeNodeRaw(benchmark::State& state) {
  const std::string text = NodeJson(77);
  auto check = DecodeNodeRaw(text);
  if (!check.ok() || check->gpus != 8 || check->topology.empty() || check->product.empty()) {
    state.SkipWithError("raw node decoder is wrong");
    return;
  }
  for (auto _ : state) {
    auto n = DecodeNodeRaw(text);
    benchmark::DoNotOptimize(n);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_DecodeNodeRaw);

void BM_DecodeNode(benchmark::State& state) {
  const std::string text = NodeJson(77);
  for (auto _ : state) {
    auto j = json::Parse(text);
    auto n = DecodeNode(*j);
    benchmark::DoNotOptimize(n);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["object_bytes"] = static_cast<double>(text.size());
}
BENCHMARK(BM_DecodeNode);

void BM_InformerInitialSync(benchmark::State& state) {
  const long rss_before = StatusKb("VmRSS:");
  for (auto _ : state) {
    KubeConfig config;
    config.server = "http://127.0.0.1:" + std::to_string(g_port);
    ClientOptions co;  // defaults: qps 50, burst 100
    co.timeout = std::chrono::seconds(120);
    auto client = KubeClient::Create(config, co);
    InformerOptions po;
    po.resource = resources::kPods;
    InformerOptions no;
    no.resource = resources::kNodes;
    const bool raw = state.range(0) == 1;
    auto pods_ptr = raw ? std::make_unique<Informer<PodLite>>(**client, po, Informer<PodLite>::RawDecode{DecodePodRaw})
                        : std::make_unique<Informer<PodLite>>(**client, po, DecodePod);
    auto nodes_ptr = raw ? std::make_unique<Informer<NodeLite>>(**client, no, Informer<NodeLite>::RawDecode{DecodeNodeRaw})
                         : std::make_unique<Informer<NodeLite>>(**client, no, DecodeNode);
    Informer<PodLite>& pods = *pods_ptr;
    Informer<NodeLite>& nodes = *nodes_ptr;
    pods.AddIndex("node", [](const PodLite& p) { return std::vector<std::string>{p.node}; });
    const auto start = std::chrono::steady_clock::now();
    nodes.Start();
    pods.Start();
    if (!nodes.WaitForSync(std::chrono::minutes(10)) || !pods.WaitForSync(std::chrono::minutes(10))) {
      state.SkipWithError("sync timed out");
      return;
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const long rss_synced = StatusKb("VmRSS:");
    malloc_trim(0);
    const long rss_trimmed = StatusKb("VmRSS:");
    state.counters["sync_s"] = secs;
    state.counters["pods"] = static_cast<double>(pods.Size());
    state.counters["nodes"] = static_cast<double>(nodes.Size());
    state.counters["rss_before_MB"] = rss_before / 1024.0;
    state.counters["rss_synced_MB"] = rss_synced / 1024.0;
    state.counters["rss_trimmed_MB"] = rss_trimmed / 1024.0;
    state.counters["rss_peak_MB"] = StatusKb("VmHWM:") / 1024.0;
    state.counters["requests"] = static_cast<double>((*client)->requests_sent());
    pods.Stop();
    nodes.Stop();
  }
}
// Where the sync time goes: the transport alone (all pod pages, bodies not parsed), then with
// nlohmann parsing of each page.
void ListAllPodPages(benchmark::State& state, bool parse) {
  for (auto _ : state) {
    KubeConfig config;
    config.server = "http://127.0.0.1:" + std::to_string(g_port);
    ClientOptions co;
    co.qps = 0;
    co.timeout = std::chrono::seconds(120);
    auto client = KubeClient::Create(config, co);
    size_t bytes = 0;
    std::string cont;
    const auto start = std::chrono::steady_clock::now();
    do {
      HttpRequest req;
      req.target = "/api/v1/pods?limit=500" + (cont.empty() ? std::string() : "&continue=" + cont);
      auto resp = (*client)->Do(req);
      if (!resp.ok()) {
        state.SkipWithError(resp.status().ToString().c_str());
        return;
      }
      bytes += resp->body.size();
      // The canned server's continue token is the next offset.
      const int next = std::stoi(cont.empty() ? "0" : cont) + 500;
      cont = next < kPods ? std::to_string(next) : "";
      if (parse) benchmark::DoNotOptimize(json::Parse(resp->body));
    } while (!cont.empty());
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    state.counters["s"] = secs;
    state.counters["MB"] = bytes / 1e6;
    state.counters["MB_per_s"] = bytes / 1e6 / secs;
  }
}
void BM_ListPodPagesTransportOnly(benchmark::State& state) { ListAllPodPages(state, false); }
void BM_ListPodPagesWithParse(benchmark::State& state) { ListAllPodPages(state, true); }
BENCHMARK(BM_ListPodPagesTransportOnly)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();
BENCHMARK(BM_ListPodPagesWithParse)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

// Arg 0: DecodeFunc over nlohmann trees; arg 1: RawDecode with simdjson. Run each in its own
// process for a clean RSS (--benchmark_filter='InitialSync/0' then '/1').
BENCHMARK(BM_InformerInitialSync)->Arg(0)->Arg(1)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

}  // namespace
}  // namespace phalanx::kube::bench

int main(int argc, char** argv) {
  int port_pipe[2], alive_pipe[2];
  if (pipe(port_pipe) != 0 || pipe(alive_pipe) != 0) return 1;
  const pid_t child = fork();
  if (child == 0) {
    close(port_pipe[0]);
    close(alive_pipe[1]);
    phalanx::kube::bench::ServeChild(port_pipe[1], alive_pipe[0]);
  }
  close(port_pipe[1]);
  close(alive_pipe[0]);
  if (read(port_pipe[0], &phalanx::kube::bench::g_port, sizeof(uint16_t)) != sizeof(uint16_t)) return 1;
  // As the daemons do (malloc_tuning.h); PHX_BENCH_NO_MALLOC_TUNING=1 measures the default.
  if (std::getenv("PHX_BENCH_NO_MALLOC_TUNING") == nullptr) phalanx::kube::TuneMallocForLargeResponses();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  close(alive_pipe[1]);  // the child ends its watches and exits
  int status = 0;
  waitpid(child, &status, 0);
  return 0;
}
