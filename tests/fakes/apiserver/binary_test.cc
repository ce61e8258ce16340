// The fake-apiserver binary as end-to-end tests run it: --port 0 with --port-file and the port
// on stdout, --write-kubeconfig usable by core/kube, --seed (objects kept as given, status
// included), --write-latency-ms, the /fake control endpoints, clean exit on SIGTERM, one clear
// error on bad flags.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "core/kube/config.h"
#include "tests/e2e/harness/files.h"
#include "tests/e2e/harness/poll.h"
#include "tests/e2e/harness/process.h"
#include "tests/fakes/apiserver/raw_client.h"

namespace phalanx::fakes::apiserver {
namespace {

using json::Json;
using testing::RawClient;

const std::string kBinary = std::string(PHALANX_TEST_BINARY_DIR) + "/tests/fakes/apiserver/fake-apiserver";

constexpr const char* kSeed = R"(apiVersion: v1
kind: Node
metadata:
  name: node-a
  labels:
    nvidia.com/gpu.product: H100
status:
  allocatable:
    nvidia.com/gpu: "8"
---
apiVersion: v1
kind: Namespace
metadata:
  name: ml
)";

std::unique_ptr<e2e::Process> Start(const e2e::TempDir& dir, std::vector<std::string> args) {
  e2e::ProcessOptions options;
  options.name = "fake-apiserver";
  options.binary = kBinary;
  options.args = std::move(args);
  options.log_dir = dir.path();
  auto started = e2e::Process::Start(std::move(options));
  EXPECT_TRUE(started.ok()) << started.status();
  return started.ok() ? std::move(started).value() : nullptr;
}

TEST(FakeApiServerBinaryTest, PortFileKubeconfigSeedAndControlEndpoints) {
  e2e::TempDir dir;
  ASSERT_TRUE(e2e::WriteFile(dir.path() + "/seed.yaml", kSeed));
  const std::string port_file = dir.path() + "/port", kubeconfig = dir.path() + "/kubeconfig";
  auto process = Start(dir, {"--port", "0", "--port-file", port_file, "--write-kubeconfig", kubeconfig,
                             "--seed", dir.path() + "/seed.yaml"});
  ASSERT_TRUE(process);
  ASSERT_TRUE(e2e::PollUntil([&] { return e2e::ReadFile(port_file).has_value() || !process->Running(); }))
      << process->LogTail();
  ASSERT_TRUE(process->Running()) << process->LogTail();
  const int port = std::stoi(*e2e::ReadFile(port_file));
  ASSERT_GT(port, 0);
  // The port is also the first line on stdout.
  ASSERT_TRUE(e2e::PollUntil([&] {
    auto out = e2e::ReadFile(process->stdout_path());
    return out && out->find('\n') != std::string::npos;
  }));
  EXPECT_EQ(std::stoi(*e2e::ReadFile(process->stdout_path())), port);

  auto config = kube::LoadKubeconfigFile(kubeconfig);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "http://127.0.0.1:" + std::to_string(port));
  EXPECT_EQ(config->token, "fake-token");

  RawClient client(config->server);
  auto node = client.Get("/api/v1/nodes/node-a");
  ASSERT_EQ(node.status, 200) << node.body;
  EXPECT_EQ(node.Json()["status"]["allocatable"]["nvidia.com/gpu"], "8");
  EXPECT_EQ(node.Json()["metadata"]["labels"]["nvidia.com/gpu.product"], "H100");
  EXPECT_FALSE(node.Json()["metadata"]["uid"].get<std::string>().empty());
  EXPECT_EQ(client.Get("/api/v1/namespaces/ml").status, 200);

  // Control endpoints: a fault, the request log, the state.
  ASSERT_EQ(client.Post("/fake/faults", Json{{"verb", "get"}, {"pathContains", "/nodes/"}, {"code", 503}}).status,
            200);
  EXPECT_EQ(client.Get("/api/v1/nodes/node-a").status, 503);
  EXPECT_EQ(client.Get("/api/v1/nodes/node-a").status, 200);
  const Json state = client.Get("/fake/state").Json();
  EXPECT_GT(state["resourceVersion"].get<uint64_t>(), 0u);
  ASSERT_EQ(client.Post("/fake/seed", Json{{"apiVersion", "v1"}, {"kind", "Node"},
                                           {"metadata", {{"name", "node-b"}}}})
                .status,
            200);
  EXPECT_EQ(client.Get("/api/v1/nodes").Json()["items"].size(), 2u);
  const Json requests = client.Get("/fake/requests").Json();
  ASSERT_TRUE(requests.is_array());
  EXPECT_GE(requests.size(), 4u);

  EXPECT_EQ(process->Stop(), 0) << process->LogTail();
}

TEST(FakeApiServerBinaryTest, RestartEndpointKeepsObjects) {
  e2e::TempDir dir;
  const std::string port_file = dir.path() + "/port";
  auto process = Start(dir, {"--listen", "127.0.0.1:0", "--port-file", port_file});
  ASSERT_TRUE(process);
  ASSERT_TRUE(e2e::PollUntil([&] { return e2e::ReadFile(port_file).has_value() || !process->Running(); }));
  RawClient client("http://127.0.0.1:" + std::to_string(std::stoi(*e2e::ReadFile(port_file))));
  ASSERT_EQ(client.Post("/api/v1/namespaces/ml/configmaps", Json{{"metadata", {{"name", "kept"}}}}).status, 201);
  ASSERT_EQ(client.Post("/fake/restart?downMs=1500", Json::object()).status, 202);
  // Down for a while (connections refused), then up on the same port with the same objects.
  ASSERT_TRUE(e2e::PollUntil([&] { return client.Get("/fake/state").status == 0; }, std::chrono::seconds(30),
                             std::chrono::milliseconds(5)));
  ASSERT_TRUE(e2e::PollUntil([&] { return client.Get("/api/v1/namespaces/ml/configmaps/kept").status == 200; }));
  EXPECT_EQ(process->Stop(), 0) << process->LogTail();
}

TEST(FakeApiServerBinaryTest, WriteLatencyFlagDelaysWritesOnly) {
  e2e::TempDir dir;
  const std::string port_file = dir.path() + "/port";
  auto process = Start(dir, {"--port-file", port_file, "--write-latency-ms", "800"});
  ASSERT_TRUE(process);
  ASSERT_TRUE(e2e::PollUntil([&] { return e2e::ReadFile(port_file).has_value() || !process->Running(); }))
      << process->LogTail();
  RawClient client("http://127.0.0.1:" + std::to_string(std::stoi(*e2e::ReadFile(port_file))));
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(client.Post("/api/v1/namespaces/ml/configmaps", Json{{"metadata", {{"name", "c"}}}}).status, 201);
  const auto written = std::chrono::steady_clock::now();
  ASSERT_EQ(client.Get("/api/v1/namespaces/ml/configmaps/c").status, 200);
  const auto read = std::chrono::steady_clock::now();
  EXPECT_GE(written - start, std::chrono::milliseconds(800));
  EXPECT_LT(read - written, std::chrono::milliseconds(400));  // a read takes a few ms
  EXPECT_EQ(process->Stop(), 0) << process->LogTail();

  auto bad = Start(dir, {"--write-latency-ms", "-1"});
  ASSERT_TRUE(bad);
  ASSERT_TRUE(e2e::PollUntil([&] { return !bad->Running(); }));
  EXPECT_NE(bad->exit_status(), 0);
  EXPECT_NE(e2e::ReadFile(bad->stderr_path()).value_or("").find("--write-latency-ms"), std::string::npos)
      << e2e::ReadFile(bad->stderr_path()).value_or("");
}

TEST(FakeApiServerBinaryTest, BadSeedFailsWithOneClearLine) {
  e2e::TempDir dir;
  ASSERT_TRUE(e2e::WriteFile(dir.path() + "/bad.yaml", "apiVersion: v1\nkind: NoSuchKind\nmetadata:\n  name: x\n"));
  auto process = Start(dir, {"--seed", dir.path() + "/bad.yaml"});
  ASSERT_TRUE(process);
  ASSERT_TRUE(e2e::PollUntil([&] { return !process->Running(); }));
  EXPECT_NE(process->exit_status(), 0);
  const std::string err = e2e::ReadFile(process->stderr_path()).value_or("");
  EXPECT_NE(err.find("fake-apiserver: "), std::string::npos) << err;
  EXPECT_NE(err.find("NoSuchKind"), std::string::npos) << err;
}

}  // namespace
}  // namespace phalanx::fakes::apiserver
