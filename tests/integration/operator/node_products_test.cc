// NodeProducts against the fake API server: a node's phalanx.io/gpu.product is read with one GET
// and cached; an unknown node prices at the default ("") and is asked again only after the retry
// delay; a cached model is re-read after its TTL.
#include <gtest/gtest.h>

#include "core/kube/client.h"
#include "core/kube/config.h"
#include "operator/controller/node_products.h"
#include "tests/fakes/apiserver/fake_apiserver.h"
#include "tests/fakes/clock/fake_clock.h"

namespace phalanx::op {
namespace {

namespace fa = fakes::apiserver;

TEST(NodeProductsTest, ReadsTheLabelOnceAndCachesIt) {
  auto server = fa::FakeApiServer::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  auto cfg = kube::ParseKubeconfig((*server)->Kubeconfig(), "test", "/tmp", "");
  ASSERT_TRUE(cfg.ok());
  auto client = kube::KubeClient::Create(*cfg, kube::ClientOptions{});
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*server)
                  ->Create("nodes", json::Json::parse(R"({"apiVersion":"v1","kind":"Node",
                      "metadata":{"name":"gpu-1","labels":{"phalanx.io/gpu.product":"NVIDIA-H100-80GB-HBM3"}}})"))
                  .ok());
  phalanx::testing::FakeClock clock;
  NodeProducts products(**client, clock, std::chrono::hours(1), std::chrono::minutes(1));
  EXPECT_EQ(products.Product("gpu-1"), "NVIDIA-H100-80GB-HBM3");
  EXPECT_EQ(products.Product("gpu-1"), "NVIDIA-H100-80GB-HBM3");
  EXPECT_EQ(products.reads(), 1u);
  EXPECT_EQ(products.Product(""), "");  // unbound pod: no read
  EXPECT_EQ(products.reads(), 1u);

  EXPECT_EQ(products.Product("gone"), "");
  EXPECT_EQ(products.Product("gone"), "");
  EXPECT_EQ(products.reads(), 2u);  // a miss is cached too ...
  clock.Advance(std::chrono::seconds(61));
  ASSERT_TRUE((*server)
                  ->Create("nodes", json::Json::parse(R"({"apiVersion":"v1","kind":"Node",
                      "metadata":{"name":"gone","labels":{"phalanx.io/gpu.product":"NVIDIA-A100-SXM4-80GB"}}})"))
                  .ok());
  EXPECT_EQ(products.Product("gone"), "NVIDIA-A100-SXM4-80GB");  // ... but only for the retry delay
  EXPECT_EQ(products.reads(), 3u);
  EXPECT_EQ(products.Product("gpu-1"), "NVIDIA-H100-80GB-HBM3");  // within its TTL: cached
  EXPECT_EQ(products.reads(), 3u);
  clock.Advance(std::chrono::minutes(91));  // past 1.5 x TTL: read again
  EXPECT_EQ(products.Product("gpu-1"), "NVIDIA-H100-80GB-HBM3");
  EXPECT_EQ(products.reads(), 4u);
}

}  // namespace
}  // namespace phalanx::op
