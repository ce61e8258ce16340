// Harness for the extender's API-server mode tests: the real `phalanx-extender` binary
// (spawned from PHALANX_TEST_BINARY_DIR) against the in-process fake API server, with a
// tiny blocking HTTP client that plays kube-scheduler's part (filter, bind, preempt).
// Everything waits by polling a condition under a generous deadline (other sessions load
// the machine): nothing sleeps and then asserts.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/base/ids.h"
#include "core/json/json.h"
#include "core/topology/reference_machines.h"
#include "core/topology/topology_codec.h"
#include "tests/e2e/harness/process.h"
#include "tests/fakes/apiserver/fake_apiserver.h"
#include "tests/integration/extender/run_dir.h"

namespace phalanx::extender::itest {

namespace fa = fakes::apiserver;
using json::Json;

inline constexpr auto kDeadline = std::chrono::seconds(60);

inline uint16_t FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

struct HttpReply {
  int status = 0;  // 0 = no answer (connection refused, reset, timeout)
  std::string body;
};

// One blocking HTTP/1.1 exchange with Connection: close. A held bind keeps the call open.
inline HttpReply Http(uint16_t port, const std::string& method, const std::string& path, const std::string& body = "",
                      std::chrono::seconds timeout = std::chrono::seconds(120)) {
  HttpReply out;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{static_cast<time_t>(timeout.count()), 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return out;
  }
  std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  if (!body.empty() || method == "POST") {
    req += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  req += "\r\n" + body;
  for (size_t sent = 0; sent < req.size();) {
    ssize_t n = write(fd, req.data() + sent, req.size() - sent);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  std::string raw;
  char buf[8192];
  for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) raw.append(buf, static_cast<size_t>(n));
  close(fd);
  if (raw.rfind("HTTP/1.", 0) != 0 || raw.size() < 12) return out;
  out.status = std::stoi(raw.substr(9, 3));
  const auto head_end = raw.find("\r\n\r\n");
  std::string payload = head_end == std::string::npos ? "" : raw.substr(head_end + 4);
  const std::string head = raw.substr(0, head_end);
  if (head.find("chunked") != std::string::npos || head.find("Chunked") != std::string::npos) {
    std::string joined;
    size_t pos = 0;
    while (pos < payload.size()) {
      const auto eol = payload.find("\r\n", pos);
      if (eol == std::string::npos) break;
      const size_t len = std::stoul(payload.substr(pos, eol - pos), nullptr, 16);
      if (len == 0) break;
      joined += payload.substr(eol + 2, len);
      pos = eol + 2 + len + 2;
    }
    payload = std::move(joined);
  }
  out.body = std::move(payload);
  return out;
}

inline bool WaitUntil(const std::function<bool()>& cond, std::chrono::seconds deadline = kDeadline) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (!cond()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));  // polling interval, not a wait for an outcome
  }
  return true;
}

// The real daemon, run by the tests' process runner (e2e::Process: its own process group);
// logs appended to <RunDir>/<name>.out and .err (a restart under the same name keeps them).
class ExtenderProcess {
 public:
  ExtenderProcess(std::string name, const std::string& kubeconfig, std::vector<std::string> extra = {})
      : name_(std::move(name)), port_(FreePort()), metrics_port_(FreePort()) {
    std::vector<std::string> args = {"--kubeconfig", kubeconfig,
                                     "--listen", "127.0.0.1:" + std::to_string(port_),
                                     "--metrics-addr", "127.0.0.1:" + std::to_string(metrics_port_),
                                     "--lease-namespace", "phalanx-system",
                                     "--log-format", "json", "--v", "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto p = e2e::Process::Start({.name = name_,
                                  .binary = std::string(PHALANX_TEST_BINARY_DIR) + "/extender/phalanx-extender",
                                  .args = std::move(args),
                                  .env = {},
                                  .log_dir = RunDir()});
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    if (p.ok()) process_ = std::move(*p);
  }
  ~ExtenderProcess() {
    if (process_ && process_->Running()) process_->Kill();  // a crash, as before: no graceful stop
  }
  ExtenderProcess(const ExtenderProcess&) = delete;
  ExtenderProcess& operator=(const ExtenderProcess&) = delete;

  uint16_t port() const { return port_; }
  uint16_t metrics_port() const { return metrics_port_; }
  void Signal(int sig) {
    if (process_) process_->Signal(sig);
  }
  // Exit status (waits): the code, or 128 + the signal that killed it.
  int Wait() {
    if (!process_) return -1;
    while (process_->Running()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return process_->exit_status().value_or(-1);
  }
  // True once the process has exited (non-blocking).
  bool Exited() { return !process_ || !process_->Running(); }
  std::string Log() const {
    if (!process_) return "";
    std::string out;
    for (const std::string& path : {process_->stdout_path(), process_->stderr_path()}) {
      std::ifstream in(path);
      std::stringstream ss;
      ss << in.rdbuf();
      out += ss.str();
    }
    return out;
  }

  bool Ready() { return Http(metrics_port_, "GET", "/readyz").status == 200; }
  bool WaitReady(std::chrono::seconds deadline = kDeadline) { return WaitUntil([&] { return Ready(); }, deadline); }
  Json State() {
    auto r = Http(metrics_port_, "GET", "/debug/state");
    auto j = json::Parse(r.body);
    return j.ok() ? *j : Json();
  }
  double Metric(const std::string& name) {
    const std::string text = Http(metrics_port_, "GET", "/metrics").body;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind(name + " ", 0) == 0) return std::stod(line.substr(name.size() + 1));
    }
    return -1;
  }
  HttpReply Post(const std::string& verb, const Json& body) {
    return Http(port_, "POST", "/v1/" + verb, json::Dump(body));
  }

 private:
  std::string name_;
  uint16_t port_, metrics_port_;
  std::unique_ptr<e2e::Process> process_;
};

// --- objects -----------------------------------------------------------------------------

inline Json DgxNode(const std::string& name, const std::string& product = "H100") {
  auto topo = topology::MakeDgxH100Node();
  for (size_t i = 0; i < topo.gpus.size(); ++i) topo.gpus[i].uuid = GpuUuid("GPU-" + name + "-" + std::to_string(i));
  auto encoded = topology::EncodeTopology(topo);
  EXPECT_TRUE(encoded.ok()) << encoded.status();
  return Json{{"apiVersion", "v1"},
              {"kind", "Node"},
              {"metadata",
               {{"name", name},
                {"labels", {{"kubernetes.io/hostname", name}, {"phalanx.io/gpu.product", product}}},
                {"annotations", {{"phalanx.io/gpu-topology", encoded.ok() ? *encoded : ""}}}}},
              {"spec", Json::object()},
              {"status",
               {{"allocatable", {{"nvidia.com/gpu", "8"}, {"cpu", "64"}}},
                {"capacity", {{"nvidia.com/gpu", "8"}, {"cpu", "64"}}},
                {"conditions", Json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
}

// The a100-mig reference machine (GPU 0 = 7 x 1g.10gb, GPU 1 = 3g.40gb + 2g.20gb + 2 x 1g.10gb,
// GPUs 2-7 whole) with node-unique UUIDs.
inline Json A100MigNode(const std::string& name) {
  auto topo = topology::MakeA100MigNode();
  for (size_t i = 0; i < topo.gpus.size(); ++i) {
    topo.gpus[i].uuid = GpuUuid("GPU-" + name + "-" + std::to_string(i));
    for (size_t k = 0; k < topo.gpus[i].mig_devices.size(); ++k) {
      topo.gpus[i].mig_devices[k].uuid = GpuUuid("MIG-" + name + "-" + std::to_string(i) + "-" + std::to_string(k));
    }
  }
  auto encoded = topology::EncodeTopology(topo);
  EXPECT_TRUE(encoded.ok()) << encoded.status();
  Json node = DgxNode(name, "A100");
  node["metadata"]["annotations"]["phalanx.io/gpu-topology"] = encoded.ok() ? *encoded : "";
  node["status"]["allocatable"] = {{"nvidia.com/gpu", "6"}, {"nvidia.com/mig-3g.40gb", "1"},
                                   {"nvidia.com/mig-2g.20gb", "1"}, {"nvidia.com/mig-1g.10gb", "9"}};
  return node;
}

struct PodSpec {
  std::string ns = "ml";
  std::string name;
  int gpus = 1;
  std::string gang;       // "" = not a gang member
  int min_members = 0;    // 0 = no annotation
  int timeout_seconds = 0;
  bool gated = false;
  int priority = 0;
  std::string node;       // seeded bound
  std::string devices;    // phalanx.io/devices value
  std::string training_job;
};

inline Json Pod(const PodSpec& s) {
  Json labels = Json::object();
  Json annotations = Json::object();
  if (!s.gang.empty()) labels["phalanx.io/gang"] = s.gang;
  if (s.min_members > 0) annotations["phalanx.io/gang-min-members"] = std::to_string(s.min_members);
  if (s.timeout_seconds > 0) annotations["phalanx.io/gang-timeout-seconds"] = std::to_string(s.timeout_seconds);
  if (!s.devices.empty()) annotations["phalanx.io/devices"] = s.devices;
  Json meta = {{"name", s.name}, {"namespace", s.ns}, {"labels", labels}, {"annotations", annotations}};
  if (!s.training_job.empty()) {
    meta["ownerReferences"] = Json::array({{{"apiVersion", "phalanx.io/v1alpha1"},
                                            {"kind", "TrainingJob"},
                                            {"name", s.training_job},
                                            {"uid", "tj-uid-" + s.training_job},
                                            {"controller", true}}});
  }
  Json spec = {{"schedulerName", "phalanx-scheduler"},
               {"priority", s.priority},
               {"containers", Json::array({{{"name", "main"},
                                            {"image", "trainer:1"},
                                            {"resources", {{"limits", {{"nvidia.com/gpu", std::to_string(s.gpus)}}},
                                                           {"requests", {{"nvidia.com/gpu", std::to_string(s.gpus)}}}}}}})}};
  if (s.gated) spec["schedulingGates"] = Json::array({{{"name", "phalanx.io/gang"}}});
  if (!s.node.empty()) spec["nodeName"] = s.node;
  Json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", meta}, {"spec", spec}};
  pod["status"] = {{"phase", s.node.empty() ? "Pending" : "Running"}};
  return pod;
}

inline Json TrainingJob(const std::string& ns, const std::string& name, double at_risk, double notice) {
  return Json{{"apiVersion", "phalanx.io/v1alpha1"},
              {"kind", "TrainingJob"},
              {"metadata", {{"name", name}, {"namespace", ns}, {"uid", "tj-uid-" + name}}},
              {"spec", {{"replicas", 2}, {"gpusPerReplica", 8}}},
              {"status", {{"phase", "Running"},
                          {"preemptionCost", {{"gpuSecondsAtRisk", at_risk}, {"noticeSecondsNeeded", notice}}}}}};
}

inline Json FilterBody(const Json& pod, const std::vector<std::string>& nodes) {
  return Json{{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", nodes}};
}

inline Json BindBody(const Json& pod, const std::string& node) {
  return Json{{"PodName", pod["metadata"]["name"]},
              {"PodNamespace", pod["metadata"]["namespace"]},
              {"PodUID", pod["metadata"]["uid"]},
              {"Node", node}};
}

// Names in a filter reply's NodeNames.
inline std::vector<std::string> Passed(const HttpReply& r) {
  std::vector<std::string> out;
  auto j = json::Parse(r.body);
  if (!j.ok() || !j->contains("NodeNames") || !(*j)["NodeNames"].is_array()) return out;
  for (const auto& n : (*j)["NodeNames"]) out.push_back(n.get<std::string>());
  return out;
}

// The bind reply's Error ("" = bound); "<no reply>" when nothing came back.
inline std::string BindError(const HttpReply& r) {
  if (r.status == 0) return "<no reply>";
  auto j = json::Parse(r.body);
  if (!j.ok()) return "<bad reply " + std::to_string(r.status) + ": " + r.body + ">";
  return j->contains("Error") && (*j)["Error"].is_string() ? (*j)["Error"].get<std::string>() : "";
}

inline bool HasGate(const Json& pod) {
  return pod["spec"].contains("schedulingGates") && !pod["spec"]["schedulingGates"].empty();
}
inline bool IsBound(const Json& pod) { return !pod["spec"].value("nodeName", "").empty(); }
inline bool HasDevices(const Json& pod) {
  return pod["metadata"].contains("annotations") && pod["metadata"]["annotations"].contains("phalanx.io/devices");
}

// A fake API server with a kubeconfig file for the daemon.
struct Cluster {
  std::unique_ptr<fa::FakeApiServer> server;
  std::string kubeconfig;

  void Start(const std::string& name) {
    auto s = fa::FakeApiServer::Start();
    ASSERT_TRUE(s.ok()) << s.status();
    server = std::move(*s);
    kubeconfig = RunDir() + "/" + name + "-kubeconfig";
    ASSERT_TRUE(server->WriteKubeconfig(kubeconfig).ok());
  }
  Json Seed(const Json& object) {
    auto r = server->Seed(object);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : Json();
  }
  Json Get(const std::string& ns, const std::string& name) {
    auto r = server->Get("pods", ns, name);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : Json();
  }
};

}  // namespace phalanx::extender::itest
