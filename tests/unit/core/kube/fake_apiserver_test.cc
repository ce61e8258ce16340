// The client against the project's fake API server (tests/fakes/apiserver): real semantics for
// resourceVersions, conflicts, status split, binding, eviction, watch windows, faults, restarts.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <set>

#include "core/kube/client.h"
#include "core/kube/informer.h"
#include "core/kube/leader_election.h"
#include "core/kube/retry.h"
#include "tests/fakes/apiserver/fake_apiserver.h"
#include "tests/unit/core/http/test_certs.h"
#include "tests/unit/core/kube/test_server.h"

namespace phalanx::kube {
namespace {

using namespace std::chrono_literals;
using fakes::apiserver::FakeApiServer;
using fakes::apiserver::FakeApiServerOptions;
using fakes::apiserver::FaultRule;
using testing::WaitUntil;

Json Pod(const std::string& name, const std::string& app = "train") {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "ml"}, {"labels", {{"app", app}}}}},
          {"spec", {{"containers", Json::array({{{"name", "c"}, {"image", "busybox"}}})}}}};
}

class FakeApiServerTest : public ::testing::Test {
 protected:
  void SetUp() override { Boot({}); }
  void Boot(FakeApiServerOptions o) {
    client_.reset();
    server_.reset();
    auto s = FakeApiServer::Start(std::move(o));
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
    auto path = dir_.path() + "/kubeconfig";
    ASSERT_TRUE(server_->WriteKubeconfig(path).ok());
    auto config = LoadKubeconfigFile(path);
    ASSERT_TRUE(config.ok()) << config.status();
    ClientOptions co;
    co.qps = 0;
    co.retry_backoff = {1ms, 5ms, 0ms, false};
    auto c = KubeClient::Create(*config, co);
    ASSERT_TRUE(c.ok()) << c.status();
    client_ = std::move(*c);
  }

  phalanx::testing::TempDir dir_;
  std::unique_ptr<FakeApiServer> server_;
  std::unique_ptr<KubeClient> client_;
};

TEST_F(FakeApiServerTest, RestVerbsAndTypedErrors) {
  using resources::kPods;
  auto created = client_->Create(kPods, "ml", Pod("a"));
  ASSERT_TRUE(created.ok()) << created.status();
  const std::string rv1 = (*created)["metadata"]["resourceVersion"];
  EXPECT_TRUE(IsAlreadyExists(client_->Create(kPods, "ml", Pod("a")).status()));

  auto missing = client_->Get(kPods, "ml", "nope");
  EXPECT_TRUE(IsNotFound(missing.status()));
  EXPECT_NE(missing.status().message().find("\"nope\""), std::string::npos) << missing.status();

  ASSERT_TRUE(client_->Create(kPods, "ml", Pod("b", "serve")).ok());
  ListOptions lo;
  lo.label_selector = "app=train";
  auto list = client_->List(kPods, "ml", lo);
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ((*list)["items"].size(), 1u);
  EXPECT_EQ((*list)["items"][0]["metadata"]["name"], "a");

  // Merge patch, JSON patch, server-side apply.
  ASSERT_TRUE(client_->Patch(kPods, "ml", "a", PatchType::kMerge,
                             Json{{"metadata", {{"annotations", {{"phalanx.io/devices", "{}"}}}}}})
                  .ok());
  auto jp = client_->Patch(kPods, "ml", "a", PatchType::kJsonPatch,
                           std::string_view(R"([{"op":"add","path":"/metadata/labels/extra","value":"1"}])"));
  ASSERT_TRUE(jp.ok()) << jp.status();
  EXPECT_EQ((*jp)["metadata"]["labels"]["extra"], "1");
  EXPECT_EQ((*jp)["metadata"]["annotations"]["phalanx.io/devices"], "{}");
  Json applied = {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "cfg"}, {"namespace", "ml"}}},
                  {"data", {{"k", "v"}}}};
  auto ap = client_->Apply(resources::kConfigMaps, "ml", applied, "phalanx-test", true);
  ASSERT_TRUE(ap.ok()) << ap.status();
  EXPECT_EQ((*ap)["data"]["k"], "v");

  // Stale update -> Conflict; RetryOnConflict re-reads and succeeds.
  Json stale = *created;
  stale["metadata"]["labels"]["x"] = "y";
  auto conflict = client_->Update(kPods, "ml", stale);
  EXPECT_TRUE(IsConflict(conflict.status())) << conflict.status();
  int attempts = 0;
  Status s = RetryOnConflict([&]() -> Status {
    ++attempts;
    PHX_ASSIGN_OR_RETURN(Json fresh, client_->Get(kPods, "ml", "a"));
    if (attempts == 1) fresh["metadata"]["resourceVersion"] = rv1;  // simulate a racing writer
    fresh["metadata"]["labels"]["x"] = "y";
    return client_->Update(kPods, "ml", fresh).status();
  });
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(attempts, 2);

  // Binding, then a second binding is refused.
  ASSERT_TRUE(client_->Bind("ml", "a", "node-1").ok());
  EXPECT_EQ((*client_->Get(kPods, "ml", "a"))["spec"]["nodeName"], "node-1");
  EXPECT_FALSE(client_->Bind("ml", "a", "node-2").ok());

  // Eviction and deletion.
  EXPECT_TRUE(client_->Evict("ml", "b").ok());
  auto del = client_->Delete(kPods, "ml", "a", {.grace_period_seconds = 0});
  EXPECT_TRUE(del.ok()) << del.status();
  EXPECT_TRUE(server_->WaitForGone("pods", "ml", "a").ok());
}

TEST_F(FakeApiServerTest, StatusSubresourceIsSeparate) {
  auto created = client_->Create(resources::kPods, "ml", Pod("a"));
  ASSERT_TRUE(created.ok());
  Json obj = *created;
  obj["status"]["phase"] = "Running";
  auto st = client_->UpdateStatus(resources::kPods, "ml", obj);
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ((*st)["status"]["phase"], "Running");
  auto merged = client_->Patch(resources::kPods, "ml", "a", PatchType::kMerge,
                               Json{{"status", {{"phase", "Failed"}}}});  // main resource: ignored
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ((*merged)["status"]["phase"], "Running");
}

TEST_F(FakeApiServerTest, RetriesInjected429And500OnReads) {
  server_->FailNext(FaultRule{.verb = "get", .path_contains = "/pods/", .code = 429, .count = 1, .message = "slow down"});
  server_->FailNext(FaultRule{.verb = "get", .path_contains = "/pods/", .code = 500, .count = 1, .message = "boom"});
  ASSERT_TRUE(client_->Create(resources::kPods, "ml", Pod("a")).ok());
  const uint64_t before = client_->requests_sent();
  auto got = client_->Get(resources::kPods, "ml", "a");
  EXPECT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(client_->requests_sent() - before, 3u);
  server_->FailNext(FaultRule{.verb = "create", .code = 500, .count = 1, .message = "etcd leader changed"});
  auto failed = client_->Create(resources::kPods, "ml", Pod("b"));
  EXPECT_EQ(failed.status().message(), "InternalError (HTTP 500): etcd leader changed");
}

class Recorder {
 public:
  JsonInformer::Handlers Handlers() {
    return {[this](const Json& o) { Push("add " + Name(o)); },
            [this](const Json& a, const Json& b) {
              if (a["metadata"]["resourceVersion"] != b["metadata"]["resourceVersion"]) Push("update " + Name(b));
            },
            [this](const Json& o) { Push("delete " + Name(o)); }};
  }
  std::multiset<std::string> Events() const {
    std::lock_guard lock(mu_);
    return {events_.begin(), events_.end()};
  }
  size_t Count() const {
    std::lock_guard lock(mu_);
    return events_.size();
  }

 private:
  static std::string Name(const Json& o) { return o["metadata"]["name"].get<std::string>(); }
  void Push(std::string s) {
    std::lock_guard lock(mu_);
    events_.push_back(std::move(s));
  }
  mutable std::mutex mu_;
  std::vector<std::string> events_;
};

InformerOptions PodInformer() {
  InformerOptions o;
  o.resource = resources::kPods;
  o.ns = "ml";
  o.page_size = 2;
  o.backoff = {10ms, 100ms, 0ms, false};
  return o;
}

TEST_F(FakeApiServerTest, InformerSurvivesWatchDropsCompactionAndRestart) {
  for (const char* n : {"a", "b", "c"}) ASSERT_TRUE(client_->Create(resources::kPods, "ml", Pod(n)).ok());
  JsonInformer inf(*client_, PodInformer(), JsonIdentity());
  Recorder rec;
  inf.AddHandlers(rec.Handlers());
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(20s));
  ASSERT_TRUE(server_->WaitForWatches(1));

  // 1. Dropped watch: resumes from the last version; changes made meanwhile arrive once.
  server_->DropWatches();
  ASSERT_TRUE(server_->Create("pods", Pod("d")).ok());
  ASSERT_TRUE(WaitUntil([&] { return rec.Count() == 4; }));

  // 2. Compaction while disconnected: 410 -> relist, diffed (update/delete/add exactly once).
  ASSERT_TRUE(WaitUntil([&] { return server_->watch_count() == 1; }));
  const uint64_t lists = inf.reflector().lists();
  server_->GoDown();
  ASSERT_TRUE(server_->Patch("pods", "ml", "a", fakes::apiserver::PatchType::kMerge,
                             R"({"metadata":{"labels":{"touched":"1"}}})").ok());
  ASSERT_TRUE(server_->Delete("pods", "ml", "b", {.grace_period_seconds = 0}).ok());
  ASSERT_TRUE(server_->Create("pods", Pod("e")).ok());
  server_->CompactHistory();
  ASSERT_TRUE(server_->ComeUp().ok());  // 3. the restart is also a network error for the watch
  ASSERT_TRUE(WaitUntil([&] { return rec.Count() == 7; })) << rec.Count();
  EXPECT_GT(inf.reflector().lists(), lists);
  EXPECT_EQ(rec.Events(), (std::multiset<std::string>{"add a", "add b", "add c", "add d", "update a", "delete b",
                                                      "add e"}));
  EXPECT_EQ(inf.Size(), 4u);
  // Nothing more trickles in (no duplicates after the relist).
  ASSERT_TRUE(server_->Create("pods", Pod("f")).ok());
  ASSERT_TRUE(WaitUntil([&] { return rec.Count() == 8; }));
  EXPECT_EQ(rec.Events().count("add f"), 1u);
}

TEST_F(FakeApiServerTest, HttpGoneAlsoRelists) {
  FakeApiServerOptions o;
  o.gone_as_http_status = true;
  Boot(o);
  ASSERT_TRUE(client_->Create(resources::kPods, "ml", Pod("a")).ok());
  JsonInformer inf(*client_, PodInformer(), JsonIdentity());
  Recorder rec;
  inf.AddHandlers(rec.Handlers());
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(20s));
  ASSERT_TRUE(server_->WaitForWatches(1));
  server_->GoDown();
  ASSERT_TRUE(server_->Create("pods", Pod("b")).ok());
  server_->CompactHistory();
  ASSERT_TRUE(server_->ComeUp().ok());
  ASSERT_TRUE(WaitUntil([&] { return rec.Count() == 2; }));
  EXPECT_EQ(inf.reflector().lists(), 2u);
  EXPECT_EQ(rec.Events(), (std::multiset<std::string>{"add a", "add b"}));
}

TEST_F(FakeApiServerTest, LeaderFailoverBetweenTwoClients) {
  auto other = KubeClient::Create(client_->config(), client_->options());
  ASSERT_TRUE(other.ok());
  LeaderElectionConfig a_cfg{"kube-system", "phalanx-extender", "a", 1000ms, 600ms, 100ms, false};
  LeaderElectionConfig b_cfg{"kube-system", "phalanx-extender", "b", 1000ms, 600ms, 100ms, true};
  LeaderElector a(*client_, a_cfg);
  LeaderElector b(**other, b_cfg);
  auto a_run = std::async(std::launch::async, [&] { return a.Run(); });
  ASSERT_TRUE(WaitUntil([&] { return a.IsLeader(); }));
  auto b_run = std::async(std::launch::async, [&] { return b.Run(); });
  a.Stop();  // stops renewing without releasing
  ASSERT_TRUE(a_run.get().ok());
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitUntil([&] { return b.IsLeader(); }));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  auto lease = server_->Get("leases.coordination.k8s.io", "kube-system", "phalanx-extender");
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_EQ((*lease)["spec"]["holderIdentity"], "b");
  b.Stop();
  EXPECT_TRUE(b_run.get().ok());
}

}  // namespace
}  // namespace phalanx::kube
