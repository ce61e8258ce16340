// The operator's controller against the fake API server over real HTTP: gated gang creation,
// whole-gang restart after a preemption with checkpoint resume, failure backoff and budgets,
// 409 on status writes, an API server outage in the middle of a restart, the progress endpoint
// with TokenReview, restoring a backed-up checkpoint record. The test plays the extender (lifts
// gates, binds) and the kubelet (runs containers, writes termination messages, finishes
// deletions). After every test, each request the operator sent must be one that
// docs/api-requests.md lists for it (and hence one the chart's RBAC grants, tests/chart).
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

namespace phalanx::op {
namespace {

namespace fa = fakes::apiserver;
using json::Json;
constexpr const char* kTj = "trainingjobs.phalanx.io";

Json JobJson(const std::string& name, int replicas) {
  return Json::parse(R"({"apiVersion": "phalanx.io/v1alpha1", "kind": "TrainingJob",
    "metadata": {"name": ")" + name + R"(", "namespace": "ml"},
    "spec": {"replicas": )" + std::to_string(replicas) + R"(, "gpusPerReplica": 8,
      "checkpoint": {"dir": "/ckpt", "flushSeconds": 30},
      "template": {"spec": {"containers": [{"name": "trainer", "image": "trainer:1"}]}}}})");
}

// One blocking HTTP/1.0 POST to 127.0.0.1:port; returns the status code (0: no answer).
int HttpPost(uint16_t port, const std::string& path, const std::string& bearer, const std::string& body) {
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
RequestKey KeyOf(const fa::RecordedRequest& r) {
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

std::string Env(const Json& pod, const std::string& name) {
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

TEST_F(OperatorIntegrationTest, CreatesGatedGangWithLabelsEnvAndOwners) {
  auto job = server_->Create(kTj, JobJson("llama", 2));
  ASSERT_TRUE(job.ok()) << job.status();
  auto pods = server_->WaitForCount("pods", "ml", "phalanx.io/job-name=llama", 2);
  ASSERT_TRUE(pods.ok()) << pods.status();
  auto pod = server_->Get("pods", "ml", "llama-a1-1");
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ((*pod)["metadata"]["labels"]["phalanx.io/gang"], "llama-a1");
  EXPECT_EQ((*pod)["metadata"]["labels"]["phalanx.io/replica-index"], "1");
  EXPECT_EQ((*pod)["metadata"]["annotations"]["phalanx.io/gang-min-members"], "2");
  EXPECT_EQ((*pod)["metadata"]["ownerReferences"][0]["uid"], (*job)["metadata"]["uid"]);
  EXPECT_EQ((*pod)["metadata"]["finalizers"][0], "phalanx.io/checkpoint");
  EXPECT_EQ((*pod)["spec"]["schedulingGates"][0]["name"], "phalanx.io/gang");
  EXPECT_EQ(Env(*pod, "RANK"), "1");
  EXPECT_EQ(Env(*pod, "WORLD_SIZE"), "2");
  EXPECT_EQ(Env(*pod, "MASTER_ADDR"), "llama-a1-0.llama.ml.svc");
  EXPECT_TRUE(server_->Get("services", "ml", "llama").ok());
  auto st = WaitJob("llama", [](const Json& s) { return s.value("phase", "") == "Queued"; });
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ((*st)["status"]["attempt"], 1);
}

TEST_F(OperatorIntegrationTest, PreemptedMemberRestartsWholeGangFromCheckpoint) {
  ASSERT_TRUE(server_->Create(kTj, JobJson("llama", 2)).ok());
  ASSERT_TRUE(server_->WaitForCount("pods", "ml", "phalanx.io/job-name=llama", 2).ok());
  RunPod("llama-a1-0", "gpu-0");
  RunPod("llama-a1-1", "gpu-1");
  ASSERT_TRUE(WaitJob("llama", [](const Json& s) { return s.value("phase", "") == "Running"; }).ok());
  // The dashboard's gang wait and GPU allocation series (metrics follow the status write).
  EXPECT_TRUE(EventuallyExposes("phalanx_trainingjob_gang_wait_seconds_count 1"));
  EXPECT_TRUE(EventuallyExposes("phalanx_trainingjob_gpus{phase=\"Running\"} 16"));
  // The scheduler preempts rank 1.
  Json cond = {{"status", {{"conditions", Json::array({Json{{"type", "DisruptionTarget"}, {"status", "True"},
                                                            {"reason", "PreemptionByScheduler"}}})}}}};
  ASSERT_TRUE(server_->Patch("pods", "ml", "llama-a1-1", fa::PatchType::kStrategic, cond.dump(), true).ok());
  ASSERT_TRUE(server_->Delete("pods", "ml", "llama-a1-1").ok());
  // The operator deletes the rest of the gang.
  ASSERT_TRUE(server_->WaitFor("pods", "ml", "llama-a1-0", [](const Json& p) {
                return p["metadata"].contains("deletionTimestamp");
              }).ok());
  const std::string ck = R"({"step":700,"path":"/ckpt/step-700","committed":true})";
  KubeletTerminate("llama-a1-0", ck);
  KubeletTerminate("llama-a1-1", ck);
  auto pods = server_->WaitForCount("pods", "ml", "phalanx.io/attempt=2", 2);
  ASSERT_TRUE(pods.ok()) << pods.status();
  auto pod = server_->Get("pods", "ml", "llama-a2-0");
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ(Env(*pod, "PHALANX_RESUME_FROM"), "/ckpt/step-700");
  EXPECT_EQ(Env(*pod, "PHALANX_RESTART_REASON"), "PreemptionByScheduler");
  auto job = server_->Get(kTj, "ml", "llama");
  ASSERT_TRUE(job.ok());
  const Json& s = (*job)["status"];
  EXPECT_EQ(s["attempt"], 2);
  EXPECT_EQ(s["disruptions"], 1);
  EXPECT_EQ(s["failures"], 0);
  EXPECT_FALSE(s["restart"].is_object());
  EXPECT_EQ(s["checkpoint"]["lastCommitted"]["step"], 700);
  EXPECT_FALSE(server_->Get("pods", "ml", "llama-a1-0").ok());  // finalizer released, gone
}

TEST_F(OperatorIntegrationTest, ApiServerOutageLosesNoCheckpointAndRestartsOnce) {
  ASSERT_TRUE(server_->Create(kTj, JobJson("llama", 2)).ok());
  ASSERT_TRUE(server_->WaitForCount("pods", "ml", "phalanx.io/job-name=llama", 2).ok());
  RunPod("llama-a1-0", "gpu-0");
  RunPod("llama-a1-1", "gpu-1");
  ASSERT_TRUE(WaitJob("llama", [](const Json& s) { return s.value("phase", "") == "Running"; }).ok());
  // Rank 0 crashes; the operator decides the restart and deletes rank 1.
  KubeletTerminate("llama-a1-0", R"({"step":300,"path":"/ckpt/step-300","committed":true})", /*finish_deletion=*/false);
  ASSERT_TRUE(server_->WaitFor("pods", "ml", "llama-a1-1", [](const Json& p) {
                return p["metadata"].contains("deletionTimestamp");
              }).ok());
  // The API server goes away while rank 1 saves a newer checkpoint and exits.
  server_->GoDown();
  KubeletTerminate("llama-a1-1", R"({"step":400,"path":"/ckpt/step-400","committed":true})");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // outage long enough for failed calls
  ASSERT_TRUE(server_->ComeUp().ok());
  auto pods = server_->WaitForCount("pods", "ml", "phalanx.io/attempt=2", 2);
  ASSERT_TRUE(pods.ok()) << pods.status();
  auto job = server_->Get(kTj, "ml", "llama");
  ASSERT_TRUE(job.ok());
  EXPECT_EQ((*job)["status"]["checkpoint"]["lastCommitted"]["step"], 400);  // the pod's finalizer kept it
  EXPECT_EQ((*job)["status"]["failures"], 1);
  EXPECT_EQ(Env(*server_->Get("pods", "ml", "llama-a2-1"), "PHALANX_RESUME_FROM"), "/ckpt/step-400");
}

TEST_F(OperatorIntegrationTest, OperatorRestartMidRestartCreatesNoDuplicates) {
  ASSERT_TRUE(server_->Create(kTj, JobJson("llama", 2)).ok());
  ASSERT_TRUE(server_->WaitForCount("pods", "ml", "phalanx.io/job-name=llama", 2).ok());
  RunPod("llama-a1-0", "gpu-0");
  RunPod("llama-a1-1", "gpu-1");
  ASSERT_TRUE(WaitJob("llama", [](const Json& s) { return s.value("phase", "") == "Running"; }).ok());
  Json cond = {{"status", {{"conditions", Json::array({Json{{"type", "DisruptionTarget"}, {"status", "True"},
                                                            {"reason", "EvictionByEvictionAPI"}}})}}}};
  ASSERT_TRUE(server_->Patch("pods", "ml", "llama-a1-0", fa::PatchType::kStrategic, cond.dump(), true).ok());
  ASSERT_TRUE(WaitJob("llama", [](const Json& s) { return s.value("phase", "") == "Restarting"; }).ok());
  // A new operator process takes over (nothing survives but the API objects).
  controller_->Stop();
  worker_.join();
  controller_.reset();
  ControllerOptions opts;
  opts.workers = 2;
  controller_ = std::make_unique<Controller>(*client_, opts, *metrics_,
                                             std::make_shared<spdlog::logger>("op2", std::make_shared<spdlog::sinks::null_sink_mt>()),
                                             RealClock::Instance());
  ASSERT_TRUE(controller_->StartInformers(std::chrono::seconds(20)).ok());
  worker_ = std::thread([this] { controller_->Run(); });
  for (const char* p : {"llama-a1-0", "llama-a1-1"}) {
    ASSERT_TRUE(server_->WaitFor("pods", "ml", p, [](const Json& x) { return x["metadata"].contains("deletionTimestamp"); }).ok());
    KubeletTerminate(p, "");
  }
  ASSERT_TRUE(server_->WaitForCount("pods", "ml", "phalanx.io/attempt=2", 2).ok());
  auto job = server_->Get(kTj, "ml", "llama");
  EXPECT_EQ((*job)["status"]["disruptions"], 1);
  EXPECT_EQ((*job)["status"]["attempt"], 2);
  EXPECT_EQ(server_->List("pods", "ml", "phalanx.io/job-name=llama")->size(), 2u);
}

TEST_F(OperatorIntegrationTest, GracefulPreemptionDrainsAfterANewerCheckpoint) {
  ASSERT_TRUE(server_->Create(kTj, JobJson("llama", 2)).ok());
  ASSERT_TRUE(server_->WaitForCount("pods", "ml", "phalanx.io/job-name=llama", 2).ok());
  RunPod("llama-a1-0", "gpu-0");
  RunPod("llama-a1-1", "gpu-1");
  ASSERT_TRUE(WaitJob("llama", [](const Json& s) { return s.value("phase", "") == "Running"; }).ok());
  // The extender asks for a graceful preemption with a far deadline.
  Json ann = {{"metadata", {{"annotations", {{"phalanx.io/preempt-request",
      R"({"requestId":"r1","deadline":"2099-01-01T00:00:00Z","reason":"tier","preemptor":"ml/big-0"})"}}}}}};
  ASSERT_TRUE(server_->Patch(kTj, "ml", "llama", fa::PatchType::kMerge, ann.dump()).ok());
  // Workers are notified through the pod annotation behind the downward-API preempt file.
  for (const char* p : {"llama-a1-0", "llama-a1-1"}) {
    auto pod = server_->WaitFor("pods", "ml", p, [](const Json& x) {
      return x["metadata"]["annotations"].contains("phalanx.io/preempt-notice");
    });
    ASSERT_TRUE(pod.ok()) << pod.status();
  }
  EXPECT_FALSE(server_->Get("pods", "ml", "llama-a1-0")->at("metadata").contains("deletionTimestamp"));
  // Rank 0 saves and reports it (the progress endpoint's work after TokenReview).
  auto pod0 = server_->Get("pods", "ml", "llama-a1-0");
  auto moved = controller_->ReportProgress("ml", "llama-a1-0", (*pod0)["metadata"]["uid"], {900, "/ckpt/step-900", true});
  ASSERT_TRUE(moved.ok()) << moved.status();
  EXPECT_TRUE(*moved);
  // The gang drains with DisruptionTarget and restarts from the new checkpoint.
  auto drained = server_->WaitFor("pods", "ml", "llama-a1-1", [](const Json& x) {
    return x["metadata"].contains("deletionTimestamp") && x["status"].dump().find("DisruptionTarget") != std::string::npos;
  });
  ASSERT_TRUE(drained.ok()) << drained.status();
  KubeletTerminate("llama-a1-0", "");
  KubeletTerminate("llama-a1-1", "");
  ASSERT_TRUE(server_->WaitForCount("pods", "ml", "phalanx.io/attempt=2", 2).ok());
  auto job = server_->Get(kTj, "ml", "llama");
  EXPECT_EQ((*job)["status"]["preemption"]["outcome"], "Checkpointed");
  EXPECT_EQ((*job)["status"]["disruptionsByReason"]["GracefulPreemption"], 1);
  EXPECT_EQ(Env(*server_->Get("pods", "ml", "llama-a2-0"), "PHALANX_RESUME_FROM"), "/ckpt/step-900");
}

TEST_F(OperatorIntegrationTest, SuspendAndResume) {
  ASSERT_TRUE(server_->Create(kTj, JobJson("llama", 2)).ok());
  ASSERT_TRUE(server_->WaitForCount("pods", "ml", "phalanx.io/job-name=llama", 2).ok());
  ASSERT_TRUE(server_->Patch(kTj, "ml", "llama", fa::PatchType::kMerge, R"({"spec":{"runPolicy":{"suspend":true}}})").ok());
  // Gated pods were never bound: the operator deletes them and releases its finalizer.
  ASSERT_TRUE(server_->WaitForCount("pods", "ml", "phalanx.io/job-name=llama", 0).ok());
  ASSERT_TRUE(WaitJob("llama", [](const Json& s) { return s.value("phase", "") == "Suspended"; }).ok());
  ASSERT_TRUE(server_->Patch(kTj, "ml", "llama", fa::PatchType::kMerge, R"({"spec":{"runPolicy":{"suspend":false}}})").ok());
  ASSERT_TRUE(server_->WaitForCount("pods", "ml", "phalanx.io/attempt=2", 2).ok());
  auto job = server_->Get(kTj, "ml", "llama");
  EXPECT_EQ((*job)["status"]["failures"], 0);
  EXPECT_EQ((*job)["status"]["disruptions"], 0);
}

TEST_F(OperatorIntegrationTest, FinishedJobIsDeletedAfterTtl) {
  Json j = JobJson("done", 1);
  j["spec"]["runPolicy"]["ttlSecondsAfterFinished"] = 0;
  ASSERT_TRUE(server_->Create(kTj, j).ok());
  ASSERT_TRUE(server_->WaitForCount("pods", "ml", "phalanx.io/job-name=done", 1).ok());
  RunPod("done-a1-0", "gpu-0");
  Json status = {{"status", {{"phase", "Succeeded"},
                             {"containerStatuses", Json::array({Json{{"name", "trainer"},
                                                                     {"state", {{"terminated", {{"exitCode", 0}, {"reason", "Completed"}}}}}}})}}}};
  ASSERT_TRUE(server_->Patch("pods", "ml", "done-a1-0", fa::PatchType::kMerge, status.dump(), true).ok());
  ASSERT_TRUE(server_->WaitForGone(kTj, "ml", "done").ok());
}

TEST_F(OperatorIntegrationTest, ConflictOnStatusWriteIsRetried) {
  server_->FailNext(fa::FaultRule{.verb = "update", .path_contains = "/status", .code = 409, .count = 2, .message = "injected conflict"});
  ASSERT_TRUE(server_->Create(kTj, JobJson("conflicted", 1)).ok());
  auto st = WaitJob("conflicted", [](const Json& s) { return s.value("attempt", 0) == 1; });
  ASSERT_TRUE(st.ok()) << st.status();
  auto pods = server_->WaitForCount("pods", "ml", "phalanx.io/job-name=conflicted", 1);
  ASSERT_TRUE(pods.ok()) << pods.status();
}

TEST_F(OperatorIntegrationTest, InvalidSpecEndsFailedWithTheReason) {
  Json j = JobJson("bad", 2);
  j["spec"]["checkpoint"]["flushSeconds"] = 90;  // > default grace 30; the fake does not run CEL
  ASSERT_TRUE(server_->Create(kTj, j).ok());
  auto st = WaitJob("bad", [](const Json& s) { return s.value("phase", "") == "Failed"; });
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_NE((*st)["status"].dump().find("InvalidSpec"), std::string::npos);
  EXPECT_TRUE(server_->List("pods", "ml", "phalanx.io/job-name=bad")->empty());
}

TEST_F(OperatorIntegrationTest, FailureBacksOffThenRestartsFromTheCheckpoint) {
  Json j = JobJson("crashy", 2);
  j["spec"]["failurePolicy"] = {{"maxFailures", 3}, {"backoff", {{"initialSeconds", 2}, {"maxSeconds", 60}}}};
  ASSERT_TRUE(server_->Create(kTj, j).ok());
  ASSERT_TRUE(server_->WaitForCount("pods", "ml", "phalanx.io/job-name=crashy", 2).ok());
  RunPod("crashy-a1-0", "gpu-0");
  RunPod("crashy-a1-1", "gpu-1");
  ASSERT_TRUE(WaitJob("crashy", [](const Json& s) { return s.value("phase", "") == "Running"; }).ok());
  // Rank 1 crashes (exit 143 without DisruptionTarget: a failure) after committing step 50.
  KubeletTerminate("crashy-a1-1", R"({"step":50,"path":"/ckpt/step-50","committed":true})", /*finish_deletion=*/false);
  auto decided = WaitJob("crashy", [](const Json& s) { return s.contains("restart") && s["restart"].contains("notBefore"); });
  ASSERT_TRUE(decided.ok()) << decided.status();
  const Json& r = (*decided)["status"]["restart"];
  auto decided_at = ParseRfc3339(r.value("decidedTime", ""));
  auto not_before = ParseRfc3339(r.value("notBefore", ""));
  ASSERT_TRUE(decided_at.ok() && not_before.ok()) << r.dump();
  EXPECT_GE(SecondsBetween(*decided_at, *not_before), 2.0) << "failures back off (initialSeconds 2)";
  EXPECT_EQ((*decided)["status"]["failures"], 1);
  // The rest of the gang is drained; the kubelet finishes the deletions.
  ASSERT_TRUE(server_->WaitFor("pods", "ml", "crashy-a1-0", [](const Json& p) {
                return p["metadata"].contains("deletionTimestamp");
              }).ok());
  KubeletTerminate("crashy-a1-0", "");
  (void)server_->Delete("pods", "ml", "crashy-a1-1", fa::DeleteOptions{.grace_period_seconds = 0});
  auto pods = server_->WaitForCount("pods", "ml", "phalanx.io/attempt=2", 2, std::chrono::seconds(60));
  ASSERT_TRUE(pods.ok()) << pods.status();
  for (const Json& pod : *pods) {
    auto created = ParseRfc3339(pod["metadata"].value("creationTimestamp", ""));
    ASSERT_TRUE(created.ok());
    EXPECT_GE(*created, *not_before) << "the new gang started before the backoff ended";
    EXPECT_EQ(Env(pod, "PHALANX_RESUME_FROM"), "/ckpt/step-50");
    EXPECT_EQ(Env(pod, "PHALANX_ATTEMPT"), "2");
  }
  auto job = server_->Get(kTj, "ml", "crashy");
  ASSERT_TRUE(job.ok());
  EXPECT_EQ((*job)["status"]["failures"], 1);
  EXPECT_EQ((*job)["status"]["disruptions"], 0);
  EXPECT_EQ((*job)["status"]["lastRestart"]["class"], "Failure");
}

// The backoff is in status.restart.notBefore: an operator restart during it neither forgets it
// nor counts the failure again.
TEST_F(OperatorIntegrationTest, BackoffSurvivesAnOperatorRestart) {
  Json j = JobJson("crashy", 2);
  j["spec"]["failurePolicy"] = {{"maxFailures", 3}, {"backoff", {{"initialSeconds", 3}, {"maxSeconds", 60}}}};
  ASSERT_TRUE(server_->Create(kTj, j).ok());
  ASSERT_TRUE(server_->WaitForCount("pods", "ml", "phalanx.io/job-name=crashy", 2).ok());
  RunPod("crashy-a1-0", "gpu-0");
  RunPod("crashy-a1-1", "gpu-1");
  ASSERT_TRUE(WaitJob("crashy", [](const Json& s) { return s.value("phase", "") == "Running"; }).ok());
  KubeletTerminate("crashy-a1-0", "", /*finish_deletion=*/false);
  auto decided = WaitJob("crashy", [](const Json& s) { return s.contains("restart") && s["restart"].contains("notBefore"); });
  ASSERT_TRUE(decided.ok()) << decided.status();
  auto not_before = ParseRfc3339((*decided)["status"]["restart"].value("notBefore", ""));
  ASSERT_TRUE(not_before.ok());
  ASSERT_TRUE(server_->WaitFor("pods", "ml", "crashy-a1-1", [](const Json& p) {
                return p["metadata"].contains("deletionTimestamp");
              }).ok());
  RestartController();
  KubeletTerminate("crashy-a1-1", "");
  (void)server_->Delete("pods", "ml", "crashy-a1-0", fa::DeleteOptions{.grace_period_seconds = 0});
  auto pods = server_->WaitForCount("pods", "ml", "phalanx.io/attempt=2", 2, std::chrono::seconds(60));
  ASSERT_TRUE(pods.ok()) << pods.status();
  for (const Json& pod : *pods) {
    auto created = ParseRfc3339(pod["metadata"].value("creationTimestamp", ""));
    ASSERT_TRUE(created.ok());
    EXPECT_GE(*created, *not_before) << "the restarted operator ignored the persisted backoff";
  }
  auto job = server_->Get(kTj, "ml", "crashy");
  EXPECT_EQ((*job)["status"]["failures"], 1) << "the failure was counted again after the restart";
  EXPECT_EQ((*job)["status"]["attempt"], 2);
}

TEST_F(OperatorIntegrationTest, MaxFailuresExceededFailsTheJobWithAReason) {
  Json j = JobJson("fragile", 2);
  j["spec"]["failurePolicy"] = {{"maxFailures", 0}};
  ASSERT_TRUE(server_->Create(kTj, j).ok());
  ASSERT_TRUE(server_->WaitForCount("pods", "ml", "phalanx.io/job-name=fragile", 2).ok());
  RunPod("fragile-a1-0", "gpu-0");
  RunPod("fragile-a1-1", "gpu-1");
  ASSERT_TRUE(WaitJob("fragile", [](const Json& s) { return s.value("phase", "") == "Running"; }).ok());
  KubeletTerminate("fragile-a1-0", "", /*finish_deletion=*/false);
  auto st = WaitJob("fragile", [](const Json& s) { return s.value("phase", "") == "Failed"; });
  ASSERT_TRUE(st.ok()) << st.status();
  bool reason_found = false;
  for (const Json& c : (*st)["status"]["conditions"]) {
    if (c.value("type", "") == "Failed" && c.value("status", "") == "True") {
      EXPECT_EQ(c.value("reason", ""), "MaxFailuresExceeded");
      EXPECT_FALSE(c.value("message", "").empty());
      reason_found = true;
    }
  }
  EXPECT_TRUE(reason_found) << (*st)["status"].dump();
  EXPECT_EQ((*st)["status"]["failures"], 1);
  EXPECT_TRUE(server_->List("pods", "ml", "phalanx.io/attempt=2")->empty());
  // cleanPodPolicy Running (default): the still-running rank is deleted.
  ASSERT_TRUE(server_->WaitFor("pods", "ml", "fragile-a1-1", [](const Json& p) {
                return p["metadata"].contains("deletionTimestamp");
              }).ok());
}

TEST_F(OperatorIntegrationTest, ProgressEndpointAuthenticatesThePodAndMovesTheRecord) {
  ASSERT_TRUE(server_->Create(kTj, JobJson("llama", 2)).ok());
  ASSERT_TRUE(server_->WaitForCount("pods", "ml", "phalanx.io/job-name=llama", 2).ok());
  auto pod0 = server_->Get("pods", "ml", "llama-a1-0");
  ASSERT_TRUE(pod0.ok());
  const std::string uid = (*pod0)["metadata"]["uid"];
  auto bound = [](const std::string& pod, const std::string& pod_uid) {
    return fa::TokenUser{"system:serviceaccount:ml:default", "sa-uid", {"system:serviceaccounts"},
                         {{"authentication.kubernetes.io/pod-name", {pod}},
                          {"authentication.kubernetes.io/pod-uid", {pod_uid}}}};
  };
  server_->AddToken("rank0-token", bound("llama-a1-0", uid));
  server_->AddToken("stale-token", bound("llama-a1-0", "uid-of-an-earlier-pod"));
  server_->AddToken("stranger-token", bound("not-a-member", "x"));
  server_->AddToken("unbound-token", fa::TokenUser{"system:serviceaccount:ml:default", "sa-uid", {}, {}});
  const uint16_t port = StartProgressEndpoint();
  const std::string report = R"({"step":1200,"path":"/ckpt/step-1200","committed":true})";
  EXPECT_EQ(HttpPost(port, "/progress", "", report), 401);
  EXPECT_EQ(HttpPost(port, "/progress", "forged-token", report), 401);
  EXPECT_EQ(HttpPost(port, "/progress", "unbound-token", report), 403);
  EXPECT_EQ(HttpPost(port, "/progress", "stale-token", report), 403);
  EXPECT_EQ(HttpPost(port, "/progress", "stranger-token", report), 404);
  EXPECT_EQ(HttpPost(port, "/progress", "rank0-token", "{not json"), 400);
  EXPECT_EQ(HttpPost(port, "/progress", "rank0-token", report), 200);
  auto st = WaitJob("llama", [](const Json& s) {
    return s.contains("checkpoint") && s["checkpoint"]["lastCommitted"].value("step", 0) == 1200;
  });
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ((*st)["status"]["checkpoint"]["lastCommitted"]["path"], "/ckpt/step-1200");
  EXPECT_TRUE((*st)["status"].contains("preemptionCost"));
  // Only forward: an older report is accepted but does not move the record back.
  EXPECT_EQ(HttpPost(port, "/progress", "rank0-token", R"({"step":900,"path":"/ckpt/step-900","committed":true})"), 200);
  EXPECT_EQ((*server_->Get(kTj, "ml", "llama"))["status"]["checkpoint"]["lastCommitted"]["step"], 1200);
  // The audience the operator asked for.
  bool audience = false;
  for (const auto& r : server_->Requests()) {
    if (r.target.find("tokenreviews") != std::string::npos) audience = audience || r.body.find("\"phalanx\"") != std::string::npos;
  }
  EXPECT_TRUE(audience) << "TokenReview without audience phalanx";
}

// docs/operations.md "Backup of TrainingJobs": created suspended, checkpoint record put back
// through the status subresource, resumed -> the first attempt resumes from it.
TEST_F(OperatorIntegrationTest, RestoredCheckpointRecordIsResumedFrom) {
  Json j = JobJson("restored", 2);
  j["spec"]["runPolicy"]["suspend"] = true;
  ASSERT_TRUE(server_->Create(kTj, j).ok());
  ASSERT_TRUE(WaitJob("restored", [](const Json& s) { return s.value("phase", "") == "Suspended"; }).ok());
  EXPECT_TRUE(server_->List("pods", "ml", "phalanx.io/job-name=restored")->empty());
  const std::string patch = R"({"status":{"checkpoint":{"lastCommitted":
      {"step":4200,"path":"/ckpt/step-4200","time":"2026-11-20T10:00:00Z","attempt":7}}}})";
  auto patched = server_->Patch(kTj, "ml", "restored", fa::PatchType::kMerge, patch, /*status=*/true);
  ASSERT_TRUE(patched.ok()) << patched.status();
  ASSERT_TRUE(server_->Patch(kTj, "ml", "restored", fa::PatchType::kMerge, R"({"spec":{"runPolicy":{"suspend":false}}})").ok());
  auto pods = server_->WaitForCount("pods", "ml", "phalanx.io/job-name=restored", 2);
  ASSERT_TRUE(pods.ok()) << pods.status();
  for (const Json& pod : *pods) EXPECT_EQ(Env(pod, "PHALANX_RESUME_FROM"), "/ckpt/step-4200");
  auto job = server_->Get(kTj, "ml", "restored");
  ASSERT_TRUE(job.ok());
  EXPECT_EQ((*job)["status"]["checkpoint"]["lastCommitted"]["step"], 4200);
  EXPECT_EQ((*job)["status"]["failures"], 0);
}


// status.usage with the real controller: priced by each pod's node model, written by the periodic
// update, and exactly the pods' held time after operator restarts (no double counting: everything
// before accountedUntil came from earlier writes and is never counted again).
TEST_F(OperatorIntegrationTest, UsageIsPricedPerNodeModelAndNeverDoubleCountedAcrossRestarts) {
  // Static: the controller (stopped only in TearDown) keeps a pointer to it.
  static const PriceTable prices{.currency = "USD",
                                 .gpu_hourly = {{"NVIDIA-H100-80GB-HBM3", 3.6}, {"NVIDIA-A100-SXM4-80GB", 1.8}},
                                 .default_gpu_hourly = 100};
  ControllerOptions opts;
  opts.reconcile.prices = &prices;
  opts.reconcile.usage_update = std::chrono::seconds(1);
  RestartController(opts);
  for (const auto& [node, model] : {std::pair{"gpu-0", "NVIDIA-H100-80GB-HBM3"}, {"gpu-1", "NVIDIA-A100-SXM4-80GB"}}) {
    ASSERT_TRUE(server_->Create("nodes", Json{{"apiVersion", "v1"}, {"kind", "Node"},
                                              {"metadata", {{"name", node}, {"labels", {{"phalanx.io/gpu.product", model}}}}}})
                    .ok());
  }
  ASSERT_TRUE(server_->Create(kTj, JobJson("usage", 2)).ok());
  ASSERT_TRUE(server_->WaitForCount("pods", "ml", "phalanx.io/job-name=usage", 2).ok());
  const std::string started = FormatRfc3339(std::chrono::system_clock::now());
  for (int i = 0; i < 2; ++i) {
    const std::string name = "usage-a1-" + std::to_string(i);
    // The kubelet admits the pod (startTime: its GPUs are allocated), then runs it.
    ASSERT_TRUE(server_->Patch("pods", "ml", name, fa::PatchType::kMerge,
                               Json{{"status", {{"startTime", started}}}}.dump(), /*status=*/true)
                    .ok());
    RunPod(name, "gpu-" + std::to_string(i));
  }
  ASSERT_TRUE(server_->Patch("pods", "ml", "usage-a1-1", fa::PatchType::kMerge,
                             Json{{"metadata", {{"annotations", {{"phalanx.io/idle-since", started}}}}}}.dump())
                  .ok());
  // Held time of each pod = accountedUntil - max(since, startTime); rank 1 idle all along.
  auto expect_exact = [&](const Json& u) {
    const SystemTime since = *ParseRfc3339(u.value("since", "")), until = *ParseRfc3339(u.value("accountedUntil", ""));
    const double held = SecondsBetween(std::max(since, *ParseRfc3339(started)), until);
    EXPECT_DOUBLE_EQ(u.value("gpuSeconds", -1.0), 16 * held) << u.dump();
    EXPECT_DOUBLE_EQ(u.value("idleGpuSeconds", -1.0), 8 * held) << u.dump();
    EXPECT_NEAR(u.value("cost", -1.0), 8 * held * (3.6 + 1.8) / 3600, 1e-9) << u.dump();
    EXPECT_NEAR(u.value("idleCost", -1.0), 8 * held * 1.8 / 3600, 1e-9) << u.dump();
    return held;
  };
  // Also until the idle annotation was seen: a write before the operator's watch delivered it
  // counts no idle time yet (the next one catches up from `since`), and a loaded machine can
  // delay the watch past a few 1 s writes.
  auto st = WaitJob("usage", [](const Json& s) {
    return s.contains("usage") && s["usage"].value("gpuSeconds", 0.0) >= 16 * 3 && s["usage"].contains("idlePods") &&
           s["usage"]["idlePods"].contains("usage-a1-1");
  });
  ASSERT_TRUE(st.ok()) << st.status();
  const double first = expect_exact((*st)["status"]["usage"]);
  for (int restart = 0; restart < 2; ++restart) {
    RestartController(opts);
    const double before = (*st)["status"]["usage"].value("gpuSeconds", 0.0);
    st = WaitJob("usage", [&](const Json& s) { return s["usage"].value("gpuSeconds", 0.0) >= before + 16 * 2; });
    ASSERT_TRUE(st.ok()) << st.status();
    EXPECT_GT(expect_exact((*st)["status"]["usage"]), first);
  }
  EXPECT_TRUE(EventuallyExposes("phalanx_trainingjob_idle_gpus{namespace=\"ml\",tier=\"standard\"} 8"));
}

}  // namespace
}  // namespace phalanx::op
