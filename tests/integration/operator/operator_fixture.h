// The fixture of the operator's integration tests (operator_integration_test.cc: gangs, restarts,
// outages; operator_failure_integration_test.cc: failures, backoff, the progress endpoint, usage):
// the controller against the fake API server over real HTTP, the test playing the extender and the
// kubelet. After every test, each request the operator sent must be one that docs/api-requests.md
// lists for it (and hence one the chart's RBAC grants, tests/chart).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <thread>

#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>

#include "core/kube/client.h"
#include "core/kube/config.h"
#include "core/metrics/registry.h"
#include "operator/api/time_format.h"
#include "operator/controller/controller.h"
#include "operator/controller/progress_service.h"
#include "tests/chart/chart_env.h"
#include "tests/chart/rbac_model.h"
#include "tests/fakes/apiserver/fake_apiserver.h"

namespace phalanx::op::integration {

namespace fa = fakes::apiserver;
using json::Json;
inline constexpr const char* kTj = "trainingjobs.phalanx.io";

inline Json JobJson(const std::string& name, int replicas) {
  return Json::parse(R"({"apiVersion": "phalanx.io/v1alpha1", "kind": "TrainingJob",
    "metadata": {"name": ")" + name + R"(", "namespace": "ml"},
    "spec": {"replicas": )" + std::to_string(replicas) + R"(, "gpusPerReplica": 8,
      "checkpoint": {"dir": "/ckpt", "flushSeconds": 30},
      "template": {"spec": {"containers": [{"name": "trainer", "image": "trainer:1"}]}}}})");
}

// One blocking HTTP/1.0 POST to 127.0.0.1:port; returns the status code (0: no answer).
inline int HttpPost(uint16_t port, const std::string& path, const std::string& bearer, const std::string& body) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return 0;
  }
  std::string req = "POST " + path + " HTTP/1.0\r\nHost: x\r\nContent-Type: application/json\r\n";
  if (!bearer.empty()) req += "Authorization: Bearer " + bearer + "\r\n";
  req += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  (void)!write(fd, req.data(), req.size());
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fd);
  if (out.size() < 12) return 0;
  return std::stoi(out.substr(9, 3));
}

// (verb, group, resource[/subresource]) of an API request path; empty resource: not an API object.
struct RequestKey {
  std::string verb, group, resource;
};
inline RequestKey KeyOf(const fa::RecordedRequest& r) {
  RequestKey k{r.verb, "", ""};
  std::string path = r.target.substr(0, r.target.find('?'));
  std::vector<std::string> parts;
  for (size_t start = 1; start <= path.size();) {
    size_t slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    parts.push_back(path.substr(start, slash - start));
    start = slash + 1;
  }
  size_t i = 0;
  if (parts.size() >= 2 && parts[0] == "api") {
    i = 2;  // api/v1
  } else if (parts.size() >= 3 && parts[0] == "apis") {
    k.group = parts[1];
    i = 3;  // apis/<group>/<version>
  } else {
    return k;
  }
  if (i + 1 < parts.size() && parts[i] == "namespaces") i += 2;
  if (i >= parts.size()) return k;
  k.resource = parts[i];
  if (i + 2 < parts.size()) k.resource += "/" + parts[i + 2];
  return k;
}

inline std::string Env(const Json& pod, const std::string& name) {
  for (const auto& e : pod["spec"]["containers"][0]["env"]) {
    if (e["name"] == name) return e["value"];
  }
  return "<missing>";
}

class OperatorIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = fa::FakeApiServer::Start();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    auto cfg = kube::ParseKubeconfig(server_->Kubeconfig(), "test", "/tmp", "");
    ASSERT_TRUE(cfg.ok()) << cfg.status();
    kube::ClientOptions co;
    co.qps = 0;
    auto client = kube::KubeClient::Create(*cfg, co);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = std::move(*client);
    auto m = OperatorMetrics::Create(registry_);
    ASSERT_TRUE(m.ok());
    metrics_ = std::move(*m);
    ControllerOptions opts;
    opts.workers = 2;
    opts.min_watch_timeout = std::chrono::seconds(30);
    controller_ = std::make_unique<Controller>(*client_, opts, *metrics_,
                                               std::make_shared<spdlog::logger>("op", std::make_shared<spdlog::sinks::null_sink_mt>()),
                                               RealClock::Instance());
    ASSERT_TRUE(controller_->StartInformers(std::chrono::seconds(20)).ok());
    worker_ = std::thread([this] { controller_->Run(); });
  }
  void TearDown() override {
    if (progress_) progress_->Stop();
    if (progress_server_) progress_server_->Shutdown(std::chrono::seconds(2));
    if (controller_) controller_->Stop();
    if (worker_.joinable()) worker_.join();
    controller_.reset();
    if (server_) ExpectOnlyDocumentedRequests();
  }

  void ExpectOnlyDocumentedRequests() {
    std::string error;
    const auto rows = chart_test::ParseApiRequests(
        chart_test::ReadFile(std::string(PHALANX_TEST_SOURCE_DIR) + "/docs/api-requests.md"), &error);
    ASSERT_TRUE(error.empty()) << error;
    for (const auto& r : server_->Requests()) {
      const RequestKey k = KeyOf(r);
      if (k.resource.empty() || k.verb.empty()) continue;  // discovery, /version
      if (k.resource == "pods/binding") continue;         // the test's own extender role
      const bool documented = std::any_of(rows.begin(), rows.end(), [&](const chart_test::ApiRequest& q) {
        return q.component == "operator" && q.group == k.group && q.resource == k.resource &&
               std::find(q.verbs.begin(), q.verbs.end(), k.verb) != q.verbs.end();
      });
      EXPECT_TRUE(documented) << "the operator sent " << r.method << " " << r.target << " (" << k.verb << " "
                              << (k.group.empty() ? "core" : k.group) << " " << k.resource
                              << "), which docs/api-requests.md does not list for it";
    }
  }

  // The progress endpoint as phalanx-operator serves it.
  uint16_t StartProgressEndpoint() {
    http::ServerOptions o;
    o.address = "127.0.0.1";
    o.port = 0;
    progress_server_ = std::make_unique<http::HttpServer>(o);
    progress_ = std::make_unique<ProgressService>(*client_, *controller_,
                                                  std::make_shared<spdlog::logger>("p", std::make_shared<spdlog::sinks::null_sink_mt>()));
    progress_->Register(*progress_server_);
    EXPECT_TRUE(progress_server_->Start().ok());
    return progress_server_->port();
  }

  Result<Json> WaitJob(const std::string& name, const std::function<bool(const Json&)>& pred) {
    return server_->WaitFor(kTj, "ml", name, [&](const Json& j) { return j.contains("status") && pred(j["status"]); });
  }

  bool EventuallyExposes(const std::string& line) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (registry_.Expose().find(line) == std::string::npos) {
      if (std::chrono::steady_clock::now() > end) {
        ADD_FAILURE() << "metrics never showed " << line << ":\n" << registry_.Expose();
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));  // polling interval
    }
    return true;
  }

  // A new operator process takes over (nothing survives but the API objects).
  void RestartController(ControllerOptions opts = {}) {
    controller_->Stop();
    worker_.join();
    controller_.reset();
    opts.workers = 2;
    controller_ = std::make_unique<Controller>(*client_, opts, *metrics_,
                                               std::make_shared<spdlog::logger>("op2", std::make_shared<spdlog::sinks::null_sink_mt>()),
                                               RealClock::Instance());
    ASSERT_TRUE(controller_->StartInformers(std::chrono::seconds(20)).ok());
    worker_ = std::thread([this] { controller_->Run(); });
  }

  // The extender and the kubelet: lift the gate, bind, run.
  void RunPod(const std::string& name, const std::string& node) {
    ASSERT_TRUE(server_->Patch("pods", "ml", name, fa::PatchType::kMerge, R"({"spec":{"schedulingGates":null}})").ok());
    ASSERT_TRUE(client_->Bind("ml", name, node).ok());
    Json status = {{"status", {{"phase", "Running"},
                               {"containerStatuses", Json::array({Json{{"name", "trainer"}, {"state", {{"running", Json::object()}}}}})}}}};
    auto s = server_->Patch("pods", "ml", name, fa::PatchType::kMerge, status.dump(), /*status=*/true);
    ASSERT_TRUE(s.ok()) << s.status();
  }
  // The kubelet after SIGTERM: the container saved and exited; the kubelet finishes the deletion.
  void KubeletTerminate(const std::string& name, const std::string& message, bool finish_deletion = true) {
    Json status = {{"status", {{"phase", "Failed"},
                               {"containerStatuses", Json::array({Json{{"name", "trainer"},
                                                                       {"state", {{"terminated", {{"exitCode", 143}, {"reason", "Error"}, {"message", message}}}}}}})}}}};
    auto s = server_->Patch("pods", "ml", name, fa::PatchType::kMerge, status.dump(), true);
    ASSERT_TRUE(s.ok()) << s.status();
    if (!finish_deletion) return;  // a crash: the pod stays Failed
    fa::DeleteOptions d;
    d.grace_period_seconds = 0;
    (void)server_->Delete("pods", "ml", name, d);
  }

  std::unique_ptr<fa::FakeApiServer> server_;
  std::unique_ptr<kube::KubeClient> client_;
  metrics::Registry registry_;
  std::unique_ptr<OperatorMetrics> metrics_;
  std::unique_ptr<Controller> controller_;
  std::thread worker_;
  std::unique_ptr<http::HttpServer> progress_server_;
  std::unique_ptr<ProgressService> progress_;
};

}  // namespace phalanx::op::integration
