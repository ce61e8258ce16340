// Per-client request counters: every request is counted once under its client (User-Agent),
// verb and resource, through the library API and GET /fake/request-counts, and cleared.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "core/kube/client.h"
#include "core/kube/config.h"
#include "core/kube/resource.h"
#include "core/kube/watch.h"
#include "tests/fakes/apiserver/fake_apiserver.h"
#include "tests/fakes/apiserver/raw_client.h"

namespace phalanx::fakes::apiserver {
namespace {

using json::Json;

Json Pod(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "ml"}}},
          {"spec", {{"containers", Json::array({{{"name", "c"}, {"image", "busybox"}}})}}}};
}

class RequestCountsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto started = FakeApiServer::Start();
    ASSERT_TRUE(started.ok()) << started.status();
    server_ = std::move(started).value();
  }
  std::unique_ptr<kube::KubeClient> Client(const std::string& user_agent) {
    kube::KubeConfig config;
    config.server = server_->url();
    config.token = "fake-token";
    kube::ClientOptions options;
    options.user_agent = user_agent;
    options.qps = 1000;
    options.burst = 1000;
    options.max_retries = 0;
    auto c = kube::KubeClient::Create(config, options);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? std::move(c).value() : nullptr;
  }
  std::unique_ptr<FakeApiServer> server_;
};

TEST_F(RequestCountsTest, CountsEachRequestByClientVerbAndResource) {
  auto plugin = Client("phalanx-device-plugin");
  auto other = Client("phalanx-extender");
  ASSERT_TRUE(plugin && other);
  using kube::resources::kNodes;
  using kube::resources::kPods;

  ASSERT_TRUE(plugin->Create(kPods, "ml", Pod("a")).ok());
  ASSERT_TRUE(plugin->Create(kPods, "ml", Pod("b")).ok());
  ASSERT_TRUE(plugin->List(kPods, "ml").ok());
  ASSERT_TRUE(plugin->List(kPods, "", {.field_selector = "spec.nodeName=n1"}).ok());
  ASSERT_TRUE(plugin->Get(kPods, "ml", "a").ok());
  EXPECT_FALSE(plugin->Get(kPods, "ml", "missing").ok());  // a 404 is still a request
  ASSERT_TRUE(plugin->Patch(kPods, "ml", "a", kube::PatchType::kMerge, Json{{"metadata", {{"labels", {{"x", "y"}}}}}})
                  .ok());
  ASSERT_TRUE(other->Bind("ml", "b", "n1").ok());
  ASSERT_TRUE(other->List(kNodes, "").ok());
  ASSERT_TRUE(other->Delete(kPods, "ml", "a").ok());
  {
    kube::WatchOptions w;
    w.resource_version = std::to_string(server_->resource_version());
    auto watch = kube::OpenWatch(*plugin, kPods, "", w);
    ASSERT_TRUE(watch.ok()) << watch.status();
  }
  testing::RawClient raw(server_->url());  // its transport's own User-Agent, whatever that is
  ASSERT_EQ(raw.Get("/api/v1/namespaces/ml/pods").status, 200);

  EXPECT_EQ(server_->RequestCount("phalanx-device-plugin", "create", "pods"), 2u);
  EXPECT_EQ(server_->RequestCount("phalanx-device-plugin", "list", "pods"), 2u);
  EXPECT_EQ(server_->RequestCount("phalanx-device-plugin", "get", "pods"), 2u);
  EXPECT_EQ(server_->RequestCount("phalanx-device-plugin", "patch", "pods"), 1u);
  EXPECT_EQ(server_->RequestCount("phalanx-device-plugin", "watch", "pods"), 1u);
  EXPECT_EQ(server_->RequestCount("phalanx-device-plugin", "delete", ""), 0u);
  EXPECT_EQ(server_->RequestCount("phalanx-extender", "create", "pods/binding"), 1u);
  EXPECT_EQ(server_->RequestCount("phalanx-extender", "list", "nodes"), 1u);
  EXPECT_EQ(server_->RequestCount("phalanx-extender", "delete", "pods"), 1u);
  EXPECT_EQ(server_->RequestCount("phalanx-extender", "list", "pods"), 0u);
  // "" matches any: all pod LISTs, whoever sent them; everything the plugin sent.
  EXPECT_EQ(server_->RequestCount("", "list", "pods"), 3u);
  EXPECT_EQ(server_->RequestCount("phalanx-device-plugin", "", ""), 8u);

  // The same numbers over HTTP, for tests that run the binary.
  testing::RawClient control(server_->url());
  auto counts = control.Get("/fake/request-counts");
  ASSERT_EQ(counts.status, 200) << counts.body;
  const Json j = counts.Json();
  EXPECT_EQ(j["phalanx-device-plugin"]["list"]["pods"], 2);
  EXPECT_EQ(j["phalanx-device-plugin"]["watch"]["pods"], 1);
  EXPECT_EQ(j["phalanx-extender"]["create"]["pods/binding"], 1);

  // Cleared: counting starts again from zero (the control endpoints themselves are not counted).
  ASSERT_EQ(control.Delete("/fake/request-counts").status, 200);
  EXPECT_EQ(server_->RequestCount("", "", ""), 0u);
  ASSERT_TRUE(plugin->List(kPods, "ml").ok());
  EXPECT_EQ(server_->RequestCount("", "", ""), 1u);
  server_->ClearRequestCounts();
  EXPECT_TRUE(server_->request_counts().Snapshot().empty());
}

TEST(RequestCountsUnitTest, ClientWithoutUserAgentIsUnknown) {
  RequestCounts counts;
  counts.Add("", "list", "pods");
  counts.Add("", "list", "pods");
  counts.Add("x", "watch", "pods");
  EXPECT_EQ(counts.Count("unknown", "list", "pods"), 2u);
  EXPECT_EQ(counts.Count("", "", "pods"), 3u);
  EXPECT_EQ(counts.ToJson()["unknown"]["list"]["pods"], 2);
  EXPECT_EQ(counts.ToJson()["x"]["watch"]["pods"], 1);
}

TEST_F(RequestCountsTest, FaultedAndFailedRequestsAreCounted) {
  auto plugin = Client("p");
  ASSERT_TRUE(plugin);
  server_->FailNext({.verb = "list", .path_contains = "/pods", .code = 500, .count = 1});
  EXPECT_FALSE(plugin->List(kube::resources::kPods, "").ok());
  EXPECT_EQ(server_->RequestCount("p", "list", "pods"), 1u);
  ASSERT_TRUE(plugin->Get(kube::resources::kNodes, "", "n1").status().code() == StatusCode::kNotFound);
  EXPECT_EQ(server_->RequestCount("p", "get", "nodes"), 1u);
}

}  // namespace
}  // namespace phalanx::fakes::apiserver
