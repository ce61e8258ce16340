#include "core/kube/config.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>

#include "tests/unit/core/http/test_certs.h"

namespace phalanx::kube {
namespace {

constexpr const char* kBasic = R"(apiVersion: v1
kind: Config
current-context: dev
contexts:
- name: dev
  context: {cluster: c1, user: u1, namespace: ml}
- name: other
  context: {cluster: c2, user: u2}
clusters:
- name: c1
  cluster:
    server: https://10.0.0.1:6443/
    certificate-authority-data: Q0EtUEVN
- name: c2
  cluster:
    server: http://127.0.0.1:8080
    insecure-skip-tls-verify: true
users:
- name: u1
  user:
    token: abc
    client-certificate-data: Q0VSVA==
    client-key-data: S0VZ
- name: u2
  user:
    exec: {command: aws}
)";

TEST(Base64Test, DecodesWithAndWithoutPadding) {
  EXPECT_EQ(*Base64Decode("aGVsbG8="), "hello");
  EXPECT_EQ(*Base64Decode("aGVsbG8"), "hello");
  EXPECT_EQ(*Base64Decode("aGVs\nbG8h"), "hello!");
  EXPECT_FALSE(Base64Decode("a$bc").ok());
  EXPECT_FALSE(Base64Decode("a").ok());
}

TEST(KubeconfigTest, CurrentContextWithInlineData) {
  auto c = ParseKubeconfig(kBasic, "k.yaml", "/etc");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://10.0.0.1:6443");  // trailing slash dropped
  EXPECT_EQ(c->ca_pem, "CA-PEM");
  EXPECT_EQ(c->client_cert_pem, "CERT");
  EXPECT_EQ(c->client_key_pem, "KEY");
  EXPECT_EQ(c->token, "abc");
  EXPECT_EQ(c->default_namespace, "ml");
  EXPECT_FALSE(c->insecure_skip_tls_verify);
  EXPECT_EQ(c->source, "kubeconfig k.yaml (context dev)");
}

TEST(KubeconfigTest, ExecPluginIsRejectedClearly) {
  auto c = ParseKubeconfig(kBasic, "k.yaml", "/etc", "other");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("user \"u2\": exec and auth-provider plugins are not supported"),
            std::string::npos)
      << c.status();
}

TEST(KubeconfigTest, ErrorsAreOneClearLine) {
  struct Case {
    std::string yaml, context, expect;
  };
  const std::vector<Case> cases = {
      {kBasic, "nope", "kubeconfig k.yaml: context \"nope\" not found (known: dev, other)"},
      {"current-context: x\n", "", "context \"x\" not found (known: none)"},
      {"clusters: []\n", "", "no current-context and no context given"},
      {"a: [1, 2\n", "", "kubeconfig k.yaml: line"},
      {"- 1\n", "", "not a YAML map"},
      {R"(current-context: a
contexts: [{name: a, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: 10.0.0.1}}]
users: [{name: u, user: {}}]
)",
       "", "cluster \"c\": server \"10.0.0.1\" must start with https:// or http://"},
      {R"(current-context: a
contexts: [{name: a, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: https://x}}]
users: [{name: u, user: {client-key-data: "!!"}}]
)",
       "", "user \"u\": client-key-data is not valid base64"},
      {R"(current-context: a
contexts: [{name: a, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: https://x}}]
users: [{name: u, user: {client-certificate-data: Q0VSVA==}}]
)",
       "", "client certificate and client key must be given together"},
      {R"(current-context: a
contexts: [{name: a, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: https://x, certificate-authority: missing-ca.pem}}]
users: [{name: u, user: {}}]
)",
       "", "certificate-authority /etc/missing-ca.pem: cannot read file"},
      {R"(current-context: a
contexts: [{name: a, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: https://x, insecure-skip-tls-verify: maybe}}]
users: [{name: u, user: {}}]
)",
       "", "insecure-skip-tls-verify must be true or false"},
  };
  for (const auto& tc : cases) {
    auto c = ParseKubeconfig(tc.yaml, "k.yaml", "/etc", tc.context);
    ASSERT_FALSE(c.ok()) << tc.expect;
    EXPECT_NE(c.status().message().find(tc.expect), std::string::npos) << c.status();
    EXPECT_EQ(c.status().message().find('\n'), std::string::npos) << c.status();
  }
}

TEST(KubeconfigTest, FilePathsResolveAgainstTheKubeconfigDirectory) {
  phalanx::testing::TempDir dir;
  auto certs = phalanx::testing::GenerateTestCerts(dir.path());
  ASSERT_TRUE(certs.ok()) << certs.status();
  {
    std::ofstream(dir.path() + "/tok") << "file-token\n";
    std::ofstream(dir.path() + "/config") << R"(current-context: a
contexts: [{name: a, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", certificate-authority: ca.pem, insecure-skip-tls-verify: true}}]
users: [{name: u, user: {client-certificate: client.pem, client-key: client-key.pem, tokenFile: tok}}]
)";
  }
  auto c = LoadKubeconfigFile(dir.path() + "/config");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->ca_pem, certs->ca_cert_pem);
  EXPECT_EQ(c->client_cert_pem, certs->client_cert_pem);
  EXPECT_EQ(c->client_key_pem, certs->client_key_pem);
  EXPECT_EQ(c->token_file, dir.path() + "/tok");
  EXPECT_TRUE(c->insecure_skip_tls_verify);
  EXPECT_EQ(c->default_namespace, "default");

  auto missing = LoadKubeconfigFile(dir.path() + "/nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "kubeconfig " + dir.path() + "/nope: cannot read file");
}

TEST(ResolveConfigTest, FlagThenKubeconfigEnvList) {
  phalanx::testing::TempDir dir;
  const std::string good = dir.path() + "/good";
  std::ofstream(good) << "current-context: a\n"
                      << "contexts: [{name: a, context: {cluster: c, user: u}}]\n"
                      << "clusters: [{name: c, cluster: {server: \"https://k:6443\"}}]\n"
                      << "users: [{name: u, user: {token: t}}]\n";
  const char* saved = std::getenv("KUBECONFIG");
  const std::string saved_value = saved ? saved : "";
  ::setenv("KUBECONFIG", (dir.path() + "/missing:" + good).c_str(), 1);
  auto from_env = ResolveConfig("");
  ASSERT_TRUE(from_env.ok()) << from_env.status();
  EXPECT_EQ(from_env->server, "https://k:6443");
  ::setenv("KUBECONFIG", (dir.path() + "/missing").c_str(), 1);
  auto none = ResolveConfig("");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no such file"), std::string::npos) << none.status();
  auto flag = ResolveConfig(good);  // the flag wins over the environment
  EXPECT_TRUE(flag.ok()) << flag.status();
  if (saved) {
    ::setenv("KUBECONFIG", saved_value.c_str(), 1);
  } else {
    ::unsetenv("KUBECONFIG");
  }
}

TEST(InClusterTest, ReadsEnvironmentAndServiceAccountFiles) {
  phalanx::testing::TempDir dir;
  std::ofstream(dir.path() + "/token") << "sa-token";
  std::ofstream(dir.path() + "/ca.crt") << "CA";
  std::ofstream(dir.path() + "/namespace") << "phalanx-system\n";
  std::map<std::string, std::string> env = {{"KUBERNETES_SERVICE_HOST", "fd00::1"},
                                            {"KUBERNETES_SERVICE_PORT", "443"}};
  auto getenv = [&](const char* n) -> std::optional<std::string> {
    auto it = env.find(n);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  auto c = LoadInClusterConfig(dir.path(), getenv);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://[fd00::1]:443");
  EXPECT_EQ(c->token_file, dir.path() + "/token");
  EXPECT_EQ(c->ca_pem, "CA");
  EXPECT_EQ(c->default_namespace, "phalanx-system");
  EXPECT_EQ(c->source, "in-cluster");

  env.erase("KUBERNETES_SERVICE_PORT");
  auto no_env = LoadInClusterConfig(dir.path(), getenv);
  ASSERT_FALSE(no_env.ok());
  EXPECT_NE(no_env.status().message().find("KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT"),
            std::string::npos);

  env["KUBERNETES_SERVICE_PORT"] = "443";
  auto no_token = LoadInClusterConfig(dir.path() + "/missing", getenv);
  ASSERT_FALSE(no_token.ok());
  EXPECT_NE(no_token.status().message().find("token"), std::string::npos) << no_token.status();
}

}  // namespace
}  // namespace phalanx::kube
