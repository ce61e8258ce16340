// Loopback load driver for the real phalanx-extender binary (docs/architecture.md §6): it writes a synthetic
// cluster snapshot, starts the daemon in embedded mode, and measures
//   rss       the daemon's memory (VmRSS, VmHWM) and threads after loading the snapshot
//   verbs     sustained req/s and client-side latency p50/p99 with N closed-loop clients, each on
//             its own keep-alive connection, K candidate names per request:
//               echo          GET /healthz on the verbs port: the HTTP round trip alone, the
//                             baseline a gate compares the verbs with (same run, same machine)
//               filter        a 4-GPU pod (fits wherever 4 GPUs are free)
//               filter-nofit  an 8-GPU pod: with --busy-per-node >= 1 no node fits, and the
//                             reply names every candidate with a reason; the names come in one
//                             of 8 orders, as kube-scheduler's parallel filter gives them, so the
//                             daemon's kept no-fit answer (extender/verbs/no_fit_cache.h) serves
//                             it as it would a queue of such pods on an unchanged cluster
//               filter-nofit-cold  the same with another pod priority each request: no kept
//                             answer matches, so every request is judged and encoded (what the
//                             first such request after any ledger change costs)
//               prioritize    the 4-GPU pod
//               bind          a new pending 1-GPU pod per request (--bind-pods of them in the
//                             snapshot), bound to node i mod --nodes: devices chosen, the
//                             ledger charged, the (recorded) Binding written, answered
//             --rounds R interleaves the read-only verbs R times (seconds/R each) so that a noisy
//             machine shifts every verb alike (binds, which fill the cluster, run after them);
//             --json FILE writes the rows machine-readably
//   held-binds
//             H bind requests of one gang (H+1 members, min H+1) held open at the barrier at once:
//             the daemon's threads and memory while they wait, then the time from the last
//             member's bind to every held reply
// Usage:
//   extender_load --extender build/extender/phalanx-extender --nodes 5000 --names 500,5000
//       --clients 1,2 --seconds 5 [--pods 100000] [--held-binds 2000] [--verbs filter,prioritize]
//   the gate's measurement (bench/RESULTS.md, Extender; JSON: p50/p99 per verb and for echo):
//   extender_load --nodes 5000 --busy-per-node 1 --bind-pods 30000 --names 5000 --clients 1
//       --verbs echo,filter,filter-nofit,prioritize,bind --seconds 6 --rounds 3 --json load.json
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <random>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/extender/bench_cluster.h"
#include "bench/extender/bench_http.h"
#include "tests/e2e/harness/process.h"

namespace phalanx::extender::bench {
namespace {

using Clock = std::chrono::steady_clock;

// The daemon, run by the tests' process runner (e2e::Process: its own process group, logs in
// <dir>/extender.out/.err, stopped when the driver ends).
struct Daemon {
  std::unique_ptr<e2e::Process> process;
  pid_t pid = -1;
  int port = 0, metrics_port = 0;

  // "VmRSS", "VmHWM" (kB) or "Threads" from /proc/<pid>/status.
  long Status(const std::string& key) const {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind(key + ":", 0) == 0) return std::stol(line.substr(key.size() + 1));
    }
    return -1;
  }
  double CpuSeconds() const {  // utime + stime from /proc/<pid>/stat
    std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
    std::istringstream in(stat.substr(stat.rfind(')') + 2));
    std::string field;
    long ticks = 0;
    for (int i = 3; i <= 15 && in >> field; ++i) {
      if (i == 14 || i == 15) ticks += std::stol(field);
    }
    return static_cast<double>(ticks) / static_cast<double>(::sysconf(_SC_CLK_TCK));
  }
};

bool StartDaemon(const std::string& binary, const std::string& dir, const std::string& snapshot, Daemon& d) {
  const std::string config = dir + "/extender.yaml";
  std::ofstream(config) << "httpTimeoutSeconds: 300\ngangTimeoutSeconds: 600\n";
  const auto start = Clock::now();
  auto started = e2e::Process::Start({.name = "extender",
                                      .binary = binary,
                                      .args = {"--listen", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0", "--config",
                                               config, "--cluster-snapshot", snapshot, "--read-timeout-seconds", "600"},
                                      .env = {},
                                      .log_dir = dir});
  if (!started.ok()) {
    std::fprintf(stderr, "daemon: %s\n", started.status().message().c_str());
    return false;
  }
  d.process = std::move(*started);
  d.pid = d.process->pid();
  const std::regex serving("listen=[0-9.]+:([0-9]+) metrics=[0-9.]+:([0-9]+)");
  while (Clock::now() - start < std::chrono::minutes(5)) {
    std::smatch m;
    const std::string text = ReadFile(d.process->stdout_path()) + ReadFile(d.process->stderr_path());
    if (std::regex_search(text, m, serving)) {
      d.port = std::stoi(m[1]);
      d.metrics_port = std::stoi(m[2]);
      std::printf("daemon: started in %.2f s (snapshot load included)\n",
                  std::chrono::duration<double>(Clock::now() - start).count());
      return true;
    }
    if (!d.process->Running()) {
      d.pid = -1;
      std::fprintf(stderr, "daemon exited:\n%s\n", text.c_str());
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// One verb's measured requests, accumulated over rounds.
struct Row {
  std::string verb;
  int names = 0, clients = 0;
  std::vector<double> latencies_us;
  double wall_s = 0, daemon_cpu_s = 0;
  long errors = 0;
  size_t request_bytes = 0, reply_bytes = 0;
};

// What one client sends next: the same request for the read-only verbs; for bind, the next
// pending pod (a shared counter: each pod is bound once).
class Requests {
 public:
  Requests(const std::string& verb, int names, int nodes, int clients, std::atomic<int>* next_pod)
      : verb_(verb), nodes_(nodes), next_pod_(next_pod), next_variant_(static_cast<size_t>(clients), 0) {
    for (int c = 0; c < clients; ++c) {
      // Different pods per client so no cache can hide work; names from the start of the cluster.
      const std::string pod = fmt::format("w-{}", c);
      if (verb == "echo") {
        fixed_.push_back("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
      } else if (verb == "filter-nofit") {
        auto& mine = variants_.emplace_back();
        for (int order = 0; order < kOrders; ++order) {
          mine.push_back(Conn::Format("POST", "/v1/filter", ShuffledFilterBody(WorkerPodJson(pod, 8), names, order)));
        }
      } else if (verb == "filter-nofit-cold") {
        // Priorities 0, -1, ..., -(kColdPriorities - 1): every node's 1-GPU pod (priority 0)
        // is of an equal or higher tier, so each reply is the same as filter-nofit's.
        const std::string json = WorkerPodJson(pod, 8);
        auto& mine = variants_.emplace_back();
        for (int p = 0; p < kColdPriorities; ++p) {
          std::string with = json;
          const size_t at = with.find("\"priority\":0,");
          if (at != std::string::npos) with.replace(at, 13, fmt::format("\"priority\":{},", -p));
          mine.push_back(Conn::Format("POST", "/v1/filter", FilterBody(with, names)));
        }
      } else if (verb != "bind") {
        fixed_.push_back(Conn::Format("POST", "/v1/" + verb, FilterBody(WorkerPodJson(pod, 4), names)));
      }
    }
  }
  // False when there is nothing left to send (bind: every pending pod bound).
  bool Next(int client, std::string* request) {
    if (!variants_.empty()) {  // each client its variants in turn
      const auto& mine = variants_[static_cast<size_t>(client)];
      *request = mine[next_variant_[static_cast<size_t>(client)]++ % mine.size()];
      return true;
    }
    if (verb_ != "bind") {
      *request = fixed_[static_cast<size_t>(client)];
      return true;
    }
    const int i = next_pod_->fetch_add(1);
    if (i >= limit_) return false;
    const std::string name = PendingPodName(i);
    *request = Conn::Format("POST", "/v1/bind",
                            fmt::format(R"({{"PodName":"{0}","PodNamespace":"bench","PodUID":"uid-{0}","Node":"{1}"}})",
                                        name, NodeName(i % nodes_)));
    return true;
  }
  void Limit(int pods) { limit_ = pods; }
  // A bind answers {"Error":""} when bound; anything else is an error.
  bool Good(const std::string& body) const { return verb_ != "bind" || body == "{\"Error\":\"\"}"; }

 private:
  std::string verb_;
  int nodes_;
  std::atomic<int>* next_pod_;
  int limit_ = 0;
  std::vector<std::string> fixed_;
  // filter-nofit(-cold): requests sent in turn (more than the daemon keeps answers for, 4).
  static constexpr int kOrders = 8, kColdPriorities = 64;
  std::vector<std::vector<std::string>> variants_;  // [client]
  std::vector<size_t> next_variant_;  // [client], each touched by its own thread only

  // FilterBody with the names in a seeded random order (order 0: in order).
  static std::string ShuffledFilterBody(const std::string& pod_json, int names, int order) {
    std::vector<int> ids(static_cast<size_t>(names));
    for (int i = 0; i < names; ++i) ids[static_cast<size_t>(i)] = i;
    if (order > 0) std::shuffle(ids.begin(), ids.end(), std::mt19937(static_cast<unsigned>(order)));
    std::string body = "{\"Pod\":" + pod_json + ",\"Nodes\":null,\"NodeNames\":[";
    for (size_t i = 0; i < ids.size(); ++i) body += fmt::format("{}\"{}\"", i ? "," : "", NodeName(ids[i]));
    return body + "]}";
  }
};

void RunLoad(const Daemon& d, Requests& requests, int clients, double seconds, Row& row) {
  std::atomic<bool> measuring{false}, stop{false};
  std::vector<std::vector<double>> latencies(static_cast<size_t>(clients));
  std::atomic<long> errors{0};
  std::atomic<size_t> request_bytes{0}, reply_bytes{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      Conn conn(d.port);
      if (!conn.ok()) {
        errors++;
        return;
      }
      std::string request, body;
      auto& mine = latencies[static_cast<size_t>(c)];
      mine.reserve(1 << 20);
      while (!stop.load(std::memory_order_relaxed) && requests.Next(c, &request)) {
        const auto t0 = Clock::now();
        const int status = conn.Call(request, &body);
        const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
        if (status != 200 || !requests.Good(body)) {
          if (errors++ == 0) {
            std::fprintf(stderr, "%s: HTTP %d: %s\n", row.verb.c_str(), status, body.substr(0, 300).c_str());
          }
          return;
        }
        request_bytes = request.size();
        reply_bytes = body.size();
        if (measuring.load(std::memory_order_relaxed)) mine.push_back(us);
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // warm-up
  const double cpu0 = d.CpuSeconds();
  measuring = true;
  const auto t0 = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  measuring = false;
  row.wall_s += std::chrono::duration<double>(Clock::now() - t0).count();
  row.daemon_cpu_s += d.CpuSeconds() - cpu0;
  stop = true;
  for (auto& t : threads) t.join();
  for (auto& l : latencies) row.latencies_us.insert(row.latencies_us.end(), l.begin(), l.end());
  row.errors += errors.load();
  row.request_bytes = request_bytes.load();
  row.reply_bytes = reply_bytes.load();
}

void PrintRow(Row& row) {
  auto& all = row.latencies_us;
  const double p50 = Percentile(all, 0.50), p99 = Percentile(all, 0.99), p999 = Percentile(all, 0.999);
  std::printf("| %s | %d | %d | %.0f | %.0f | %.0f | %.0f | %.2f | %zu | %ld |\n", row.verb.c_str(), row.names,
              row.clients, static_cast<double>(all.size()) / row.wall_s, p50, p99, p999, row.daemon_cpu_s / row.wall_s,
              row.reply_bytes, row.errors);
  std::fflush(stdout);
}

// {"nodes":..,"rows":[{"verb":"filter","names":5000,"clients":1,"requests":..,"req_per_s":..,
//   "p50_us":..,"p99_us":..,"p999_us":..,"daemon_cpu_us_per_request":..,"reply_bytes":..,"errors":0},..]}
bool WriteJson(const std::string& path, const json::Json& head, std::vector<Row>& rows) {
  json::Json out = head;
  out["rows"] = json::Json::array();
  for (Row& row : rows) {
    auto& all = row.latencies_us;
    const double n = static_cast<double>(all.size());
    out["rows"].push_back({{"verb", row.verb},
                           {"names", row.names},
                           {"clients", row.clients},
                           {"requests", all.size()},
                           {"req_per_s", n / row.wall_s},
                           {"p50_us", Percentile(all, 0.50)},
                           {"p99_us", Percentile(all, 0.99)},
                           {"p999_us", Percentile(all, 0.999)},
                           {"daemon_cpu_us_per_request", n > 0 ? row.daemon_cpu_s * 1e6 / n : 0.0},
                           {"request_bytes", row.request_bytes},
                           {"reply_bytes", row.reply_bytes},
                           {"errors", row.errors}});
  }
  const std::string text = json::Dump(out, 2) + "\n";
  if (path == "-") {
    std::fputs(text.c_str(), stdout);
    return true;
  }
  std::ofstream f(path);
  f << text;
  return static_cast<bool>(f);
}

std::vector<int> ParseList(const std::string& s) {
  std::vector<int> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(std::stoi(item));
  return out;
}

// Waits for phalanx_extender_held_binds == want on /metrics.
bool WaitHeld(const Daemon& d, long want, std::chrono::seconds limit) {
  const auto end = Clock::now() + limit;
  const std::regex re("phalanx_extender_held_binds ([0-9.e+]+)");
  while (Clock::now() < end) {
    Conn c(d.metrics_port);
    std::string body;
    if (c.ok() && c.Call("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", &body) == 200) {
      std::smatch m;
      if (std::regex_search(body, m, re) && std::stod(m[1]) >= static_cast<double>(want)) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

int RunHeldBinds(const Daemon& d, int held, int nodes) {
  const std::string gang = "big";
  const int members = held + 1;
  // Wait for the admission loop to plan the gang (its gates are lifted in embedded mode).
  const auto t0 = Clock::now();
  std::vector<std::string> planned(static_cast<size_t>(members));
  {
    Conn c(d.port);
    std::string body;
    for (int m = 0; m < members; ++m) {
      const std::string pod = WorkerPodJson(fmt::format("{}-{:05d}", gang, m), 1,
                                            ",\"phalanx.io/gang\":\"" + gang + "\"");
      // The member's own labels and annotations are what the scheduler would send.
      std::string pod_json = pod;
      const std::string anchor = "\"creationTimestamp\":\"2026-11-22T01:45:56Z\",";
      pod_json.replace(pod_json.find(anchor), anchor.size(),
                       anchor + "\"annotations\":{\"phalanx.io/gang-min-members\":\"" + std::to_string(members) +
                           "\",\"phalanx.io/gang-timeout-seconds\":\"600\"},");
      const std::string req = Conn::Format("POST", "/v1/filter", FilterBody(pod_json, nodes));
      for (;;) {
        if (c.Call(req, &body) != 200) {
          std::fprintf(stderr, "filter failed: %s\n", body.substr(0, 300).c_str());
          return 1;
        }
        std::smatch mm;
        static const std::regex one("\"NodeNames\":\\[\"([^\"]+)\"\\]");
        if (std::regex_search(body, mm, one)) {
          planned[static_cast<size_t>(m)] = mm[1];
          break;
        }
        if (Clock::now() - t0 > std::chrono::minutes(2)) {
          std::fprintf(stderr, "member %d never pinned to one node: %s\n", m, body.substr(0, 300).c_str());
          return 1;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));  // admission runs every 100 ms
      }
    }
  }
  std::printf("held-binds: gang of %d planned and every member pinned after %.2f s\n", members,
              std::chrono::duration<double>(Clock::now() - t0).count());
  const long threads_before = d.Status("Threads"), rss_before = d.Status("VmRSS");
  auto bind = [&](int m) {
    return Conn::Format("POST", "/v1/bind",
                        fmt::format(R"({{"PodName":"{0}-{1:05d}","PodNamespace":"bench","PodUID":"uid-{0}-{1:05d}","Node":"{2}"}})",
                                    gang, m, planned[static_cast<size_t>(m)]));
  };
  std::vector<std::unique_ptr<Conn>> conns;
  const auto s0 = Clock::now();
  for (int m = 0; m < held; ++m) {
    auto c = std::make_unique<Conn>(d.port);
    if (!c->ok() || !c->Send(bind(m))) {
      std::fprintf(stderr, "connection %d failed\n", m);
      return 1;
    }
    conns.push_back(std::move(c));
  }
  if (!WaitHeld(d, held, std::chrono::seconds(120))) {
    std::fprintf(stderr, "the daemon never held %d binds\n", held);
    return 1;
  }
  const double hold_s = std::chrono::duration<double>(Clock::now() - s0).count();
  const long threads_held = d.Status("Threads"), rss_held = d.Status("VmRSS");
  std::printf("held-binds: %d held after %.2f s; daemon threads %ld -> %ld; VmRSS %ld -> %ld kB (+%.1f kB per held bind)\n",
              held, hold_s, threads_before, threads_held, rss_before, rss_held,
              static_cast<double>(rss_held - rss_before) / held);
  // The last member releases the barrier: every held bind is answered.
  const auto r0 = Clock::now();
  Conn last(d.port);
  std::string body;
  if (last.Call(bind(held), &body) != 200 || body != "{\"Error\":\"\"}") {
    std::fprintf(stderr, "last bind: %s\n", body.c_str());
    return 1;
  }
  const double last_s = std::chrono::duration<double>(Clock::now() - r0).count();
  int ok = 0;
  for (auto& c : conns) {
    if (c->Read(&body) == 200 && body == "{\"Error\":\"\"}") ok++;
  }
  const double all_s = std::chrono::duration<double>(Clock::now() - r0).count();
  std::printf("held-binds: barrier released: last member answered in %.1f ms, all %d held answered within %.1f ms "
              "(%d with Error \"\")\n",
              last_s * 1e3, held, all_s * 1e3, ok);
  return ok == held ? 0 : 1;
}

int Main(int argc, char** argv) {
  CLI::App app{"Loopback load driver for phalanx-extender (bench/RESULTS.md, Extender)"};
  std::string binary = "build/extender/phalanx-extender", names_list = "500,5000", verbs_list = "filter,prioritize";
  std::string clients_list = "1,2";
  int nodes = 5000, pods = 0, held = 0, busy_per_node = 0, bind_pods = 0, rounds = 1;
  double seconds = 5;
  std::string json_path;
  app.add_option("--extender", binary, "phalanx-extender binary")->capture_default_str();
  app.add_option("--nodes", nodes, "DGX H100 nodes in the snapshot")->capture_default_str();
  app.add_option("--pods", pods,
                 "Pods in the snapshot: 30% running 1-GPU pods (75% of the GPUs at 5,000 nodes), the rest CPU-only")
      ->capture_default_str();
  app.add_option("--names", names_list, "Candidate names per request (comma list; 0 = skip the load phase)")
      ->capture_default_str();
  app.add_option("--clients", clients_list, "Concurrent keep-alive clients (comma list)")->capture_default_str();
  app.add_option("--busy-per-node", busy_per_node,
                 "Running 1-GPU pods per node in the snapshot (>= 1: filter-nofit's 8-GPU pod fits nowhere)")
      ->capture_default_str()
      ->check(CLI::Range(0, 8));
  app.add_option("--bind-pods", bind_pods, "Pending 1-GPU pods in the snapshot for the bind verb (each bound once)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--verbs", verbs_list, "Comma list of echo, filter, filter-nofit, filter-nofit-cold, prioritize, bind")
      ->capture_default_str();
  app.add_option("--seconds", seconds, "Measured seconds per row (after 0.5 s warm-up per round)")
      ->capture_default_str();
  app.add_option("--rounds", rounds, "Interleave the verbs this many times (seconds/rounds each)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--json", json_path, "Also write the rows as JSON to this file (- = stdout)");
  app.add_option("--held-binds", held, "Bind requests to hold at one gang barrier (0 = skip)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  const std::string dir = (std::filesystem::temp_directory_path() / ("extender-load-" + std::to_string(::getpid()))).string();
  std::filesystem::create_directories(dir);
  SnapshotShape shape;
  shape.nodes = nodes;
  shape.bound_pods = std::min(pods * 3 / 10 + busy_per_node * nodes, nodes * 8);
  shape.cpu_pods = pods - pods * 3 / 10;
  shape.pending_pods = bind_pods;
  if (held > 0) {
    shape.gang = "big";
    shape.gang_members = held + 1;
  }
  const auto g0 = Clock::now();
  const std::string snapshot = dir + "/snapshot.json";
  std::ofstream(snapshot) << SnapshotJson(shape);
  std::printf("snapshot: %d nodes, %d GPU pods running, %d CPU-only pods, %d pending, %d gang members; %.1f MB, "
              "written in %.2f s\n",
              nodes, shape.bound_pods, shape.cpu_pods, shape.pending_pods, shape.gang_members,
              static_cast<double>(std::filesystem::file_size(snapshot)) / 1e6,
              std::chrono::duration<double>(Clock::now() - g0).count());
  Daemon d;
  if (!StartDaemon(binary, dir, snapshot, d)) return 1;
  std::printf("daemon: VmRSS %ld kB, VmHWM %ld kB, threads %ld after loading the snapshot\n", d.Status("VmRSS"),
              d.Status("VmHWM"), d.Status("Threads"));
  std::fflush(stdout);

  int rc = 0;
  if (names_list != "0") {
    std::printf("| verb | names | clients | req/s | p50 µs | p99 µs | p99.9 µs | daemon CPU (cores) | reply bytes "
                "| errors |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
    std::vector<std::string> verbs;
    std::stringstream vs(verbs_list);
    for (std::string verb; std::getline(vs, verb, ',');) {
      if (verb != "echo" && verb != "filter" && verb != "filter-nofit" && verb != "filter-nofit-cold" &&
          verb != "prioritize" && verb != "bind") {
        std::fprintf(stderr, "--verbs: unknown verb %s\n", verb.c_str());
        return 1;
      }
      verbs.push_back(verb);
    }
    std::vector<Row> rows;
    for (const std::string& verb : verbs) {
      for (int names : ParseList(names_list)) {
        for (int clients : ParseList(clients_list)) rows.push_back(Row{verb, std::min(names, nodes), clients});
      }
    }
    std::atomic<int> next_pod{0};
    auto run = [&](Row& row, double s) {
      Requests requests(row.verb, row.names, nodes, row.clients, &next_pod);
      requests.Limit(bind_pods);
      RunLoad(d, requests, row.clients, s, row);
      if (row.errors > 0) rc = 1;
    };
    // Binds change the cluster (each takes a GPU): they run after every round of the others.
    for (int round = 0; round < rounds; ++round) {
      for (Row& row : rows) {
        if (row.verb != "bind") run(row, seconds / rounds);
      }
    }
    for (Row& row : rows) {
      if (row.verb == "bind") run(row, seconds);
    }
    for (Row& row : rows) PrintRow(row);
    const bool binds = std::any_of(rows.begin(), rows.end(), [](const Row& r) { return r.verb == "bind"; });
    if (binds && next_pod.load() >= bind_pods) {
      std::printf("bind: all %d pending pods were bound before the time was up (raise --bind-pods)\n", bind_pods);
    }
    std::printf("daemon: VmRSS %ld kB, VmHWM %ld kB, threads %ld after the load\n", d.Status("VmRSS"),
                d.Status("VmHWM"), d.Status("Threads"));
    if (!json_path.empty()) {
      const json::Json head = {{"nodes", nodes},
                               {"busy_per_node", busy_per_node},
                               {"pods", pods},
                               {"seconds", seconds},
                               {"rounds", rounds},
                               {"cpus", std::thread::hardware_concurrency()}};
      if (!WriteJson(json_path, head, rows)) {
        std::fprintf(stderr, "--json %s: cannot write\n", json_path.c_str());
        rc = 1;
      }
    }
  }
  if (held > 0 && RunHeldBinds(d, held, nodes) != 0) rc = 1;
  std::filesystem::remove_all(dir);
  return rc;
}

}  // namespace
}  // namespace phalanx::extender::bench

int main(int argc, char** argv) { return phalanx::extender::bench::Main(argc, argv); }
