// The phalanx-operator binary end to end: flags, kubeconfig, informers, reconcile, /readyz,
// /metrics, and a clean exit on SIGTERM, against the in-process fake API server.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "tests/e2e/harness/process.h"
#include "tests/fakes/apiserver/fake_apiserver.h"

namespace phalanx::op {
namespace {

namespace fa = fakes::apiserver;

uint16_t FreePort() {
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

// One blocking HTTP/1.0 GET; "" when the server is not answering.
std::string HttpGet(uint16_t port, const std::string& path) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return "";
  }
  const std::string req = "GET " + path + " HTTP/1.0\r\nHost: x\r\n\r\n";
  (void)!write(fd, req.data(), req.size());
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

bool WaitUntil(const std::function<bool()>& cond) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!cond()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling interval
  }
  return true;
}

TEST(DaemonSmokeTest, RunsJobsServesMetricsAndExitsOnSigterm) {
  auto server = fa::FakeApiServer::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string dir = ::testing::TempDir();
  const std::string kubeconfig = dir + "/operator-smoke-kubeconfig";
  ASSERT_TRUE((*server)->WriteKubeconfig(kubeconfig).ok());
  const std::string binary = std::string(PHALANX_TEST_BINARY_DIR) + "/operator/phalanx-operator";
  const uint16_t port = FreePort();
  const std::string metrics = "--metrics-addr=127.0.0.1:" + std::to_string(port);
  auto op = e2e::Process::Start({.name = "operator-smoke", .binary = binary,
                                 .args = {"--kubeconfig", kubeconfig, metrics, "--progress-addr=127.0.0.1:0",
                                          "--log-format", "json"},
                                 .env = {}, .log_dir = dir});
  ASSERT_TRUE(op.ok()) << op.status();

  ASSERT_TRUE((*server)->Create("trainingjobs.phalanx.io", json::Json::parse(R"({"apiVersion":"phalanx.io/v1alpha1",
    "kind":"TrainingJob","metadata":{"name":"smoke","namespace":"ml"},
    "spec":{"replicas":3,"gpusPerReplica":1,"template":{"spec":{"containers":[{"name":"t","image":"t:1"}]}}}})")).ok());
  auto pods = (*server)->WaitForCount("pods", "ml", "phalanx.io/job-name=smoke", 3, std::chrono::seconds(30));
  EXPECT_TRUE(pods.ok()) << pods.status();
  EXPECT_TRUE(WaitUntil([&] { return HttpGet(port, "/readyz").find(" 200 ") != std::string::npos; }));
  std::string body;
  EXPECT_TRUE(WaitUntil([&] {
    body = HttpGet(port, "/metrics");
    return body.find("phalanx_trainingjob_phase{phase=\"Queued\"} 1") != std::string::npos;
  })) << body;
  EXPECT_NE(body.find("phalanx_operator_reconcile_total"), std::string::npos);

  EXPECT_EQ((*op)->Stop(), 0) << (*op)->LogTail();  // SIGTERM: a clean exit
}

// Configuration is checked at start: a malformed price table is exit code 2 with the field named,
// before any API server is contacted.
TEST(DaemonSmokeTest, MalformedPriceTableExitsTwoNamingTheField) {
  const std::string file = ::testing::TempDir() + "/operator-bad-prices.json";
  {
    std::ofstream out(file);
    out << R"({"currency":"USD","defaultGpuHourly":2,"gpuHourly":{"NVIDIA-H100-80GB-HBM3":-1}})";
  }
  const std::string binary = std::string(PHALANX_TEST_BINARY_DIR) + "/operator/phalanx-operator";
  const std::string cmd = binary + " --kubeconfig /nonexistent --price-table " + file + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[1024];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), p)) > 0;) out.append(buf, n);
  const int status = pclose(p);
  ASSERT_TRUE(WIFEXITED(status)) << out;
  EXPECT_EQ(WEXITSTATUS(status), 2) << out;
  EXPECT_NE(out.find("--price-table " + file + ": gpuHourly.NVIDIA-H100-80GB-HBM3: must be a number >= 0, got -1"),
            std::string::npos)
      << out;
}

std::unique_ptr<e2e::Process> SpawnOperator(const std::string& name, const std::vector<std::string>& args) {
  auto p = e2e::Process::Start({.name = name,
                                .binary = std::string(PHALANX_TEST_BINARY_DIR) + "/operator/phalanx-operator",
                                .args = args, .env = {}, .log_dir = ::testing::TempDir()});
  return p.ok() ? std::move(*p) : nullptr;
}

std::string LeaseHolder(fa::FakeApiServer& server) {
  auto lease = server.Get("leases.coordination.k8s.io", "phalanx-system", "phalanx-operator");
  if (!lease.ok()) return "";
  return (*lease).value("spec", json::Json::object()).value("holderIdentity", std::string());
}

json::Json SmallJob(const std::string& name) {
  return json::Json::parse(R"({"apiVersion":"phalanx.io/v1alpha1","kind":"TrainingJob",
    "metadata":{"name":")" + name + R"(","namespace":"ml"},
    "spec":{"replicas":3,"gpusPerReplica":1,"template":{"spec":{"containers":[{"name":"t","image":"t:1"}]}}}})");
}

// Two replicas with --leader-elect (the chart's HA setup): only the Lease holder acts; when it
// stops it releases the Lease and the standby takes over without creating anything twice.
TEST(DaemonSmokeTest, LeaderElectionHandsOverWithoutDuplicates) {
  auto server = fa::FakeApiServer::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string kubeconfig = ::testing::TempDir() + "/operator-le-kubeconfig";
  ASSERT_TRUE((*server)->WriteKubeconfig(kubeconfig).ok());
  auto flags = [&](uint16_t port) {
    return std::vector<std::string>{"--kubeconfig", kubeconfig, "--leader-elect", "--leader-election-namespace",
                                    "phalanx-system", "--metrics-addr=127.0.0.1:" + std::to_string(port),
                                    "--progress-addr=127.0.0.1:0", "--log-format", "json"};
  };
  auto first = SpawnOperator("operator-le-first", flags(FreePort()));
  ASSERT_TRUE(first);
  std::string holder;
  ASSERT_TRUE(WaitUntil([&] { return !(holder = LeaseHolder(**server)).empty(); })) << "the first replica never led";
  auto second = SpawnOperator("operator-le-second", flags(FreePort()));
  ASSERT_TRUE(second);
  ASSERT_TRUE((*server)->Create("trainingjobs.phalanx.io", SmallJob("one")).ok());
  EXPECT_TRUE((*server)->WaitForCount("pods", "ml", "phalanx.io/job-name=one", 3, std::chrono::seconds(30)).ok());
  EXPECT_EQ(LeaseHolder(**server), holder) << "the standby took the Lease from a healthy leader";

  EXPECT_EQ(first->Stop(), 0) << first->LogTail();
  std::string successor;
  EXPECT_TRUE(WaitUntil([&] {
    successor = LeaseHolder(**server);
    return !successor.empty() && successor != holder;
  })) << "the standby did not take over";
  ASSERT_TRUE((*server)->Create("trainingjobs.phalanx.io", SmallJob("two")).ok());
  EXPECT_TRUE((*server)->WaitForCount("pods", "ml", "phalanx.io/job-name=two", 3, std::chrono::seconds(30)).ok());
  EXPECT_EQ((*server)->List("pods", "ml", "phalanx.io/job-name=one")->size(), 3u) << "pods created twice";
  EXPECT_EQ(second->Stop(), 0) << second->LogTail();
}

}  // namespace
}  // namespace phalanx::op
