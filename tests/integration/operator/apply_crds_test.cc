// `phalanx-operator apply-crds`, the chart's pre-upgrade hook, against the fake API server: an
// upgrade from a release without GpuQueue and with an older TrainingJob schema ends with exactly
// this release's CRDs (a field the old release applied and this one does not is gone), served at
// once; a second run changes nothing; bad configuration is exit code 2 and writes nothing.
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "core/kube/client.h"
#include "core/kube/config.h"
#include "core/kube/crd_apply.h"
#include "tests/fakes/apiserver/fake_apiserver.h"
#include "tests/fakes/apiserver/patch.h"

namespace phalanx::op {
namespace {

namespace fa = fakes::apiserver;
using json::Json;

constexpr const char* kCrds = "customresourcedefinitions.apiextensions.k8s.io";

std::string ShippedYaml(const std::string& file) {
  std::ifstream in(std::string(PHALANX_TEST_SOURCE_DIR) + "/helm/phalanx/crds/" + file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

Json ShippedSpec(const std::string& file) {
  auto crd = fa::YamlToJson(ShippedYaml(file));
  EXPECT_TRUE(crd.ok()) << crd.status();
  return crd.ok() ? (*crd)["spec"] : Json();
}

struct CommandRun {
  int exit_code = -1;
  std::string output;
};

CommandRun ApplyCrds(const std::string& args) {
  const std::string cmd =
      std::string(PHALANX_TEST_BINARY_DIR) + "/operator/phalanx-operator apply-crds " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  CommandRun run;
  if (p == nullptr) return run;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), p)) > 0;) run.output.append(buf, n);
  const int status = pclose(p);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

std::string ResourceVersion(fa::FakeApiServer& server, const std::string& crd) {
  auto got = server.Get(kCrds, "", crd);
  return got.ok() ? (*got)["metadata"].value("resourceVersion", "") : "";
}

TEST(ApplyCrdsTest, UpgradesFromAnOlderReleaseToExactlyThisReleasesCrds) {
  auto server = fa::FakeApiServer::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string kubeconfig = ::testing::TempDir() + "/apply-crds-kubeconfig";
  ASSERT_TRUE((*server)->WriteKubeconfig(kubeconfig).ok());

  // The older release: no GpuQueue CRD; its TrainingJob CRD had a spec field this one dropped,
  // applied by the same field manager as the hook's.
  Json old_crd = *fa::YamlToJson(ShippedYaml("phalanx.io_trainingjobs.yaml"));
  Json& spec_props = old_crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
  ASSERT_TRUE(spec_props.is_object()) << old_crd.dump();
  spec_props["legacyPlacement"] = {{"type", "string"}};
  auto applied = (*server)->Patch(kCrds, "", "trainingjobs.phalanx.io", fa::PatchType::kApply,
                                  old_crd.dump(), false, "phalanx-crds");
  ASSERT_TRUE(applied.ok()) << applied.status();
  ASSERT_FALSE((*server)->Get(kCrds, "", "gpuqueues.phalanx.io").ok());

  const CommandRun first = ApplyCrds("--kubeconfig " + kubeconfig);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_NE(first.output.find("gpuqueues.phalanx.io"), std::string::npos) << first.output;
  EXPECT_NE(first.output.find("created"), std::string::npos) << first.output;
  EXPECT_NE(first.output.find("updated"), std::string::npos) << first.output;
  for (const std::string file : {"phalanx.io_gpuqueues.yaml", "phalanx.io_trainingjobs.yaml"}) {
    const std::string name = file.substr(std::string("phalanx.io_").size(),
                                         file.size() - std::string("phalanx.io_.yaml").size()) + ".phalanx.io";
    auto crd = (*server)->Get(kCrds, "", name);
    ASSERT_TRUE(crd.ok()) << name << ": " << crd.status();
    EXPECT_EQ((*crd)["spec"], ShippedSpec(file)) << name;  // legacyPlacement is gone
  }
  // Served at once: a GpuQueue can be created.
  auto queue = (*server)->Create("gpuqueues.phalanx.io", Json::parse(R"({"apiVersion":"phalanx.io/v1alpha1",
    "kind":"GpuQueue","metadata":{"name":"team-a"},"spec":{"cohort":"lab","quotas":[{"pool":"H100","nominal":8}]}})"));
  EXPECT_TRUE(queue.ok()) << queue.status();

  // Idempotent: a second run writes nothing.
  const std::string rv_tj = ResourceVersion(**server, "trainingjobs.phalanx.io");
  const std::string rv_q = ResourceVersion(**server, "gpuqueues.phalanx.io");
  const CommandRun second = ApplyCrds("--kubeconfig " + kubeconfig);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("unchanged"), std::string::npos) << second.output;
  EXPECT_EQ(second.output.find("updated"), std::string::npos) << second.output;
  EXPECT_EQ(ResourceVersion(**server, "trainingjobs.phalanx.io"), rv_tj);
  EXPECT_EQ(ResourceVersion(**server, "gpuqueues.phalanx.io"), rv_q);
}

TEST(ApplyCrdsTest, NoApiServerIsExitCodeTwo) {
  const CommandRun run = ApplyCrds("--kubeconfig /nonexistent/kubeconfig");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("/nonexistent/kubeconfig"), std::string::npos) << run.output;
}

// Bad input changes nothing: every manifest is checked before the first write.
TEST(ApplyCrdsTest, AMalformedManifestIsRefusedBeforeAnythingIsWritten) {
  auto server = fa::FakeApiServer::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string kubeconfig = ::testing::TempDir() + "/apply-crds-bad-kubeconfig";
  ASSERT_TRUE((*server)->WriteKubeconfig(kubeconfig).ok());
  auto config = kube::ResolveConfig(kubeconfig);
  ASSERT_TRUE(config.ok()) << config.status();
  auto client = kube::KubeClient::Create(*config);
  ASSERT_TRUE(client.ok()) << client.status();
  struct Case {
    std::string yaml, error;
  };
  for (const Case& c : {Case{"kind: ConfigMap\napiVersion: v1\n", "want apiextensions.k8s.io/v1 CustomResourceDefinition"},
                        Case{"apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: x.phalanx.io}\n"
                             "spec: {group: phalanx.io, names: {plural: y}, versions: [{name: v1}]}\n",
                             "metadata.name: x.phalanx.io must be spec.names.plural + \".\" + spec.group (y.phalanx.io)"},
                        Case{"[unclosed", "not YAML"}}) {
    auto applied = kube::ApplyCrds(**client, {ShippedYaml("phalanx.io_gpuqueues.yaml"), c.yaml});
    ASSERT_FALSE(applied.ok()) << c.yaml;
    EXPECT_EQ(applied.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(applied.status().message().find("CRD manifest 1: "), std::string::npos) << applied.status();
    EXPECT_NE(applied.status().message().find(c.error), std::string::npos) << applied.status();
    EXPECT_FALSE((*server)->Get(kCrds, "", "gpuqueues.phalanx.io").ok()) << "the valid manifest before it was applied";
  }
}

}  // namespace
}  // namespace phalanx::op
