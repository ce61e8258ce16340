#include "core/kube/kube_flags.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/unit/core/http/test_certs.h"
#include "tests/unit/core/kube/test_server.h"

namespace phalanx::kube {
namespace {

TEST(KubeFlagsTest, DefaultsAndParsing) {
  CLI::App app;
  KubeFlags flags;
  AddKubeFlags(app, flags);
  std::vector<std::string> args = {"--kube-api-burst", "300", "--kube-api-qps", "150.5", "--kubeconfig", "/k"};
  std::reverse(args.begin(), args.end());
  app.parse(args);
  EXPECT_EQ(flags.burst, 300);
  EXPECT_DOUBLE_EQ(flags.qps, 150.5);
  EXPECT_EQ(flags.kubeconfig, "/k");

  KubeFlags defaults;
  EXPECT_EQ(defaults.qps, 50);
  EXPECT_EQ(defaults.burst, 100);
  CLI::App bad;
  AddKubeFlags(bad, defaults);
  std::vector<std::string> zero = {"0", "--kube-api-qps"};
  EXPECT_THROW(bad.parse(zero), CLI::ValidationError);
}

TEST(KubeFlagsTest, ConnectFromFlagsUsesTheKubeconfig) {
  testing::ScriptedServer server;
  phalanx::testing::TempDir dir;
  const std::string path = dir.path() + "/kubeconfig";
  std::ofstream(path) << "current-context: a\n"
                      << "contexts: [{name: a, context: {cluster: c, user: u}}]\n"
                      << "clusters: [{name: c, cluster: {server: \"" << server.url() << "\"}}]\n"
                      << "users: [{name: u, user: {token: from-file}}]\n";
  KubeFlags flags;
  flags.kubeconfig = path;
  flags.qps = 7;
  flags.burst = 9;
  auto client = ConnectFromFlags(flags, "phalanx-test/1");
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_EQ((*client)->options().qps, 7);
  EXPECT_EQ((*client)->options().burst, 9);
  ASSERT_TRUE((*client)->Get(resources::kNodes, "", "n").ok());
  EXPECT_EQ(server.requests()[0].authorization, "Bearer from-file");

  flags.kubeconfig = dir.path() + "/missing";
  auto missing = ConnectFromFlags(flags, "x");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "kubeconfig " + flags.kubeconfig + ": cannot read file");
}

}  // namespace
}  // namespace phalanx::kube
