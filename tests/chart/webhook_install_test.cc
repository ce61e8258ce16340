// A fresh install with default values gates gangs (issue 26 item 1): the chart's rendered
// Secret, Service and MutatingWebhookConfiguration are applied to the fake API server, the real
// phalanx-extender runs with the chart's own flags (addresses, paths and the kubeconfig
// replaced), makes its certificate, publishes the CA bundle, and the fake API server calls the
// webhook over TLS, verifying the certificate against that bundle for
// phalanx-scheduler.phalanx-system.svc, as kube-apiserver does.
#include <gtest/gtest.h>

#include <yaml-cpp/yaml.h>

#include <set>

#include "core/kube/client.h"
#include "tests/chart/chart_env.h"
#include "tests/chart/rendering.h"
#include "tests/e2e/harness/apply.h"
#include "tests/e2e/harness/files.h"
#include "tests/e2e/harness/poll.h"
#include "tests/e2e/harness/ports.h"
#include "tests/e2e/harness/process.h"
#include "tests/fakes/apiserver/fake_apiserver.h"

namespace phalanx::chart_test {
namespace {

using kube::Json;

const std::string kScheduler = std::string(kRelease) + "-scheduler";
const std::string kConfigurations = "mutatingwebhookconfigurations.admissionregistration.k8s.io";

std::string Yaml(const YAML::Node& node) {
  YAML::Emitter out;
  out << node;
  return out.c_str();
}

// The rendered extender's arguments with this machine's addresses, files and API server.
std::vector<std::string> ExtenderArgs(const YAML::Node& container, const std::map<std::string, std::string>& replace) {
  std::vector<std::string> args;
  std::set<std::string> done;
  for (const auto& a : At(container, {"args"})) {
    std::string arg = a.as<std::string>();
    const std::string name = arg.substr(0, arg.find('='));
    if (auto it = replace.find(name); it != replace.end()) {
      arg = name + "=" + it->second;
      done.insert(name);
    }
    args.push_back(arg);
  }
  for (const auto& [name, value] : replace) {
    if (!done.count(name)) args.push_back(name + "=" + value);
  }
  return args;
}

Json Pod(const std::string& ns, const std::string& name, const std::map<std::string, std::string>& labels) {
  Json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", ns}, {"labels", Json::object()}}},
              {"spec",
               {{"schedulerName", "phalanx-scheduler"},
                {"containers",
                 {{{"name", "c"}, {"image", "trainer:1"}, {"resources", {{"limits", {{"nvidia.com/gpu", "8"}}}}}}}}}}};
  for (const auto& [k, v] : labels) pod["metadata"]["labels"][k] = v;
  return pod;
}

bool Gated(const Json& pod) {
  for (const auto& g : pod["spec"].value("schedulingGates", Json::array())) {
    if (g.value("name", "") == "phalanx.io/gang") return true;
  }
  return false;
}

TEST(WebhookInstallTest, DefaultValuesGateGangsThroughTheApiServerWithTheExtendersOwnCertificate) {
  const Rendering& r = Render();
  ASSERT_RENDERED(r);
  auto binary = DaemonBinary("extender", "phalanx-extender");
  ASSERT_TRUE(binary) << "phalanx-extender is not built";

  auto started = fakes::apiserver::FakeApiServer::Start();
  ASSERT_TRUE(started.ok()) << started.status();
  auto& server = **started;
  e2e::TempDir dir;
  const std::string kubeconfig = dir.path() + "/kubeconfig";
  ASSERT_TRUE(server.WriteKubeconfig(kubeconfig).ok());
  kube::KubeConfig config;
  config.server = server.url();
  config.token = "fake-token";
  auto client = kube::KubeClient::Create(config, {});
  ASSERT_TRUE(client.ok()) << client.status();

  // `helm install -n phalanx-system --create-namespace`: the namespace, then the chart's objects
  // the webhook needs (the rest, workloads and RBAC, has no effect on the fake).
  for (const char* ns : {kNamespace, "ml", "kube-system"}) {
    auto made = server.Create("namespaces", {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}});
    ASSERT_TRUE(made.ok() || IsAlreadyExists(made.status())) << made.status();  // the fake has default, kube-system
  }
  std::string manifest;
  for (const auto& [kind, name] : std::vector<std::pair<std::string, std::string>>{
           {"Secret", kScheduler + "-webhook-certs"},
           {"Service", kScheduler},
           {"MutatingWebhookConfiguration", kScheduler + "-gang-gate"}}) {
    const YAML::Node doc = r.Get(kind, name);
    ASSERT_TRUE(doc.IsDefined()) << kind << " " << name << " not rendered";
    manifest += "---\n" + Yaml(doc) + "\n";
  }
  auto applied = e2e::ApplyManifest(**client, manifest, kNamespace);
  ASSERT_TRUE(applied.ok()) << applied.status();
  ASSERT_EQ(applied->size(), 3u) << manifest;

  YAML::Node extender;
  for (const auto& c : At(r.Get("Deployment", kScheduler), {"spec", "template", "spec", "containers"})) {
    if (Str(c, {"name"}) == "phalanx-extender") extender.reset(c);
  }
  ASSERT_TRUE(extender.IsDefined());
  const std::string config_file = dir.path() + "/extender.yaml";
  ASSERT_TRUE(
      e2e::WriteFile(config_file, Str(r.Get("ConfigMap", kScheduler + "-config"), {"data", "extender.yaml"})));
  const uint16_t webhook_port = e2e::FreePort();
  auto args = ExtenderArgs(extender, {{"--listen", "127.0.0.1:" + std::to_string(e2e::FreePort())},
                                      {"--metrics-addr", "127.0.0.1:" + std::to_string(e2e::FreePort())},
                                      {"--config", config_file},
                                      {"--webhook-addr", "127.0.0.1:" + std::to_string(webhook_port)},
                                      {"--webhook-cert-dir", dir.path() + "/webhook-certs"},
                                      {"--kubeconfig", kubeconfig}});
  auto process = e2e::Process::Start({.name = "extender",
                                      .binary = *binary,
                                      .args = args,
                                      .env = {{"POD_NAMESPACE", kNamespace}, {"POD_NAME", kScheduler + "-0"}},
                                      .log_dir = dir.path()});
  ASSERT_TRUE(process.ok()) << process.status();

  // The Service's webhook port resolves to this extender (kube-proxy and the Endpoints
  // controller's part).
  std::string port_name;
  for (const auto& p : At(r.Get("Service", kScheduler), {"spec", "ports"})) {
    if (Str(p, {"port"}) == "443") port_name = Str(p, {"name"});
  }
  ASSERT_TRUE(server
                  .Seed({{"apiVersion", "v1"},
                         {"kind", "Endpoints"},
                         {"metadata", {{"name", kScheduler}, {"namespace", kNamespace}}},
                         {"subsets",
                          {{{"addresses", {{{"ip", "127.0.0.1"}}}},
                            {"ports", {{{"name", port_name}, {"port", webhook_port}}}}}}}})
                  .ok());

  // The extender fills the Secret and the caBundle of every webhook.
  std::string bundle;
  EXPECT_TRUE(e2e::PollUntil([&] {
    auto mwc = server.Get(kConfigurations, "", kScheduler + "-gang-gate");
    if (!mwc.ok()) return false;
    std::set<std::string> bundles;
    for (const auto& h : (*mwc)["webhooks"]) bundles.insert(h["clientConfig"].value("caBundle", ""));
    if (bundles.size() != 1 || bundles.begin()->empty()) return false;
    bundle = *bundles.begin();
    return true;
  })) << (*process)->LogTail();
  auto secret = server.Get("secrets", kNamespace, kScheduler + "-webhook-certs");
  ASSERT_TRUE(secret.ok());
  EXPECT_EQ((*secret)["data"].value("ca.crt", ""), bundle);

  // A gang member is gated once the listener is up (a pod created before then is admitted
  // ungated: failurePolicy Ignore).
  Json gated_pod;
  int attempt = 0;
  EXPECT_TRUE(e2e::PollUntil(
      [&] {
        auto pod = (*client)->Create(kube::resources::kPods, "ml",
                                     Pod("ml", "llm-" + std::to_string(attempt++), {{"phalanx.io/gang", "llm"}}));
        if (!pod.ok() || !Gated(*pod)) return false;
        gated_pod = *pod;
        return true;
      },
      e2e::kHangDeadline, std::chrono::milliseconds(100)))
      << (*process)->LogTail();
  bool patched = false;
  for (const auto& call : server.WebhookCalls()) patched = patched || call.outcome == "patched";
  EXPECT_TRUE(patched);
  // The other two ways in: the pod-group label, and a queue-labelled single pod (a gang of one).
  for (const auto& [name, labels] : std::vector<std::pair<std::string, std::map<std::string, std::string>>>{
           {"pg-0", {{"scheduling.x-k8s.io/pod-group", "pg"}}}, {"queued-0", {{"phalanx.io/queue", "team-a"}}}}) {
    auto pod = (*client)->Create(kube::resources::kPods, "ml", Pod("ml", name, labels));
    ASSERT_TRUE(pod.ok()) << pod.status();
    EXPECT_TRUE(Gated(*pod)) << name;
  }
  // Unlabelled pods, and labelled pods in excluded namespaces, never reach the webhook.
  const size_t calls = server.WebhookCalls().size();
  for (const auto& [ns, labels] : std::vector<std::pair<std::string, std::map<std::string, std::string>>>{
           {"ml", {}}, {"kube-system", {{"phalanx.io/gang", "x"}}}, {kNamespace, {{"phalanx.io/gang", "x"}}}}) {
    auto pod = (*client)->Create(kube::resources::kPods, ns, Pod(ns, "other-" + ns, labels));
    ASSERT_TRUE(pod.ok()) << pod.status();
    EXPECT_FALSE(Gated(*pod)) << ns;
  }
  EXPECT_EQ(server.WebhookCalls().size(), calls);
  (*process)->Stop();
}

}  // namespace
}  // namespace phalanx::chart_test
