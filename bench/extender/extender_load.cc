// Loopback load driver for the real phalanx-extender binary (DESIGN §6): it writes a synthetic
// cluster snapshot, starts the daemon in embedded mode, and measures
//   rss       the daemon's memory (VmRSS, VmHWM) and threads after loading the snapshot
//   filter / prioritize
//             sustained req/s and client-side latency p50/p99 with N closed-loop clients, each on
//             its own keep-alive connection, K candidate names per request
//   held-binds
//             H bind requests of one gang (H+1 members, min H+1) held open at the barrier at once:
//             the daemon's threads and memory while they wait, then the time from the last
//             member's bind to every held reply
// Usage:
//   extender_load --extender build/extender/phalanx-extender --nodes 5000 --names 500,5000
//       --clients 1,2 --seconds 5 [--pods 100000] [--held-binds 2000] [--verbs filter,prioritize]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
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

void RunLoad(const Daemon& d, const std::string& verb, int names, int clients, double seconds) {
  std::vector<std::string> requests;
  for (int c = 0; c < clients; ++c) {
    // Different pods per client so no cache can hide work; names from the start of the cluster.
    requests.push_back(Conn::Format("POST", "/v1/" + verb, FilterBody(WorkerPodJson(fmt::format("w-{}", c), 4), names)));
  }
  std::atomic<bool> measuring{false}, stop{false};
  std::vector<std::vector<double>> latencies(static_cast<size_t>(clients));
  std::atomic<long> errors{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      Conn conn(d.port);
      if (!conn.ok()) {
        errors++;
        return;
      }
      std::string body;
      auto& mine = latencies[static_cast<size_t>(c)];
      mine.reserve(1 << 20);
      while (!stop.load(std::memory_order_relaxed)) {
        const auto t0 = Clock::now();
        const int status = conn.Call(requests[static_cast<size_t>(c)], &body);
        const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
        if (status != 200) {
          errors++;
          return;
        }
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
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  const double cpu = d.CpuSeconds() - cpu0;
  stop = true;
  for (auto& t : threads) t.join();
  std::vector<double> all;
  for (auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  const size_t n = all.size();
  const double p50 = Percentile(all, 0.50), p99 = Percentile(all, 0.99), p999 = Percentile(all, 0.999);
  std::printf("| %s | %d | %d | %.0f | %.0f | %.0f | %.0f | %.2f | %ld |\n", verb.c_str(), names, clients,
              static_cast<double>(n) / wall, p50, p99, p999, cpu / wall, errors.load());
  std::fflush(stdout);
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
  int nodes = 5000, pods = 0, held = 0;
  double seconds = 5;
  app.add_option("--extender", binary, "phalanx-extender binary")->capture_default_str();
  app.add_option("--nodes", nodes, "DGX H100 nodes in the snapshot")->capture_default_str();
  app.add_option("--pods", pods,
                 "Pods in the snapshot: 30% running 1-GPU pods (75% of the GPUs at 5,000 nodes), the rest CPU-only")
      ->capture_default_str();
  app.add_option("--names", names_list, "Candidate names per request (comma list; 0 = skip the load phase)")
      ->capture_default_str();
  app.add_option("--clients", clients_list, "Concurrent keep-alive clients (comma list)")->capture_default_str();
  app.add_option("--verbs", verbs_list, "filter and/or prioritize")->capture_default_str();
  app.add_option("--seconds", seconds, "Measured seconds per row (after 0.5 s warm-up)")->capture_default_str();
  app.add_option("--held-binds", held, "Bind requests to hold at one gang barrier (0 = skip)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  const std::string dir = (std::filesystem::temp_directory_path() / ("extender-load-" + std::to_string(::getpid()))).string();
  std::filesystem::create_directories(dir);
  SnapshotShape shape;
  shape.nodes = nodes;
  shape.bound_pods = std::min(pods * 3 / 10, nodes * 8);
  shape.cpu_pods = pods - shape.bound_pods;
  if (held > 0) {
    shape.gang = "big";
    shape.gang_members = held + 1;
  }
  const auto g0 = Clock::now();
  const std::string snapshot = dir + "/snapshot.json";
  std::ofstream(snapshot) << SnapshotJson(shape);
  std::printf("snapshot: %d nodes, %d GPU pods running, %d CPU-only pods, %d gang members; %.1f MB, written in %.2f s\n",
              nodes, shape.bound_pods, shape.cpu_pods, shape.gang_members,
              static_cast<double>(std::filesystem::file_size(snapshot)) / 1e6,
              std::chrono::duration<double>(Clock::now() - g0).count());
  Daemon d;
  if (!StartDaemon(binary, dir, snapshot, d)) return 1;
  std::printf("daemon: VmRSS %ld kB, VmHWM %ld kB, threads %ld after loading the snapshot\n", d.Status("VmRSS"),
              d.Status("VmHWM"), d.Status("Threads"));
  std::fflush(stdout);

  int rc = 0;
  if (names_list != "0") {
    std::printf("| verb | names | clients | req/s | p50 µs | p99 µs | p99.9 µs | daemon CPU (cores) | errors |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|\n");
    std::stringstream vs(verbs_list);
    for (std::string verb; std::getline(vs, verb, ',');) {
      for (int names : ParseList(names_list)) {
        for (int clients : ParseList(clients_list)) RunLoad(d, verb, std::min(names, nodes), clients, seconds);
      }
    }
    std::printf("daemon: VmRSS %ld kB, VmHWM %ld kB, threads %ld after the load\n", d.Status("VmRSS"),
                d.Status("VmHWM"), d.Status("Threads"));
  }
  if (held > 0) rc = RunHeldBinds(d, held, nodes);
  std::filesystem::remove_all(dir);
  return rc;
}

}  // namespace
}  // namespace phalanx::extender::bench

int main(int argc, char** argv) { return phalanx::extender::bench::Main(argc, argv); }
