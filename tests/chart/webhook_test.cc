// The chart's gang-gate admission webhook (templates/scheduler/webhook.yaml): on by default with
// the extender's self-managed certificate; with it, a helm-made certificate or cert-manager, the
// MutatingWebhookConfiguration, the Service, the extender's flags and the certificate's Secret
// must agree, and the helm-made certificate must be one the API server accepts and the extender
// loads. (webhook_install_test.cc runs a default install against the fake API server.)
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "core/kube/config.h"
#include "extender/webhook/webhook_cert_rotator.h"
#include "extender/webhook/webhook_server.h"
#include "tests/chart/chart_env.h"
#include "tests/chart/rendering.h"

namespace phalanx::chart_test {
namespace {

const std::string kScheduler = std::string(kRelease) + "-scheduler";
const std::string kServiceDns = kScheduler + "." + kNamespace + ".svc";
// Each entry's objectSelector: the two gang labels, then implicit gangs of one (a queue label
// and neither gang label, so that no pod is reviewed by two entries).
const std::vector<std::vector<std::pair<std::string, std::string>>> kSelectors = {
    {{"phalanx.io/gang", "Exists"}},
    {{"scheduling.x-k8s.io/pod-group", "Exists"}},
    {{"phalanx.io/queue", "Exists"}, {"phalanx.io/gang", "DoesNotExist"}, {"scheduling.x-k8s.io/pod-group", "DoesNotExist"}}};

const Rendering& SelfSigned() { return Render({"--set", "webhook.selfManaged.enabled=false"}); }
const Rendering& CertManager() {
  return Render({"--set", "webhook.enabled=true", "--set", "webhook.certManager.enabled=true"});
}

YAML::Node Extender(const Rendering& r) {
  for (const auto& c : At(r.Get("Deployment", kScheduler), {"spec", "template", "spec", "containers"})) {
    if (Str(c, {"name"}) == "phalanx-extender") return c;
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

std::string Flag(const YAML::Node& container, const std::string& name) {
  for (const auto& a : At(container, {"args"})) {
    const std::string s = a.as<std::string>();
    if (s.rfind("--" + name + "=", 0) == 0) return s.substr(name.size() + 3);
  }
  return "";
}

std::vector<std::string> WebhookFlags(const YAML::Node& container) {
  std::vector<std::string> out;
  for (const auto& a : At(container, {"args"})) {
    if (a.as<std::string>().rfind("--webhook", 0) == 0) out.push_back(a.as<std::string>());
  }
  return out;
}

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::path(::testing::TempDir()) / ("phalanx-chart-webhook-" + name)).string();
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  return path;
}

std::string Decode(const std::string& b64) {
  auto d = kube::Base64Decode(b64);
  EXPECT_TRUE(d.ok()) << d.status().message();
  return d.ok() ? *d : "";
}

// What both certificate sources share: the configuration, Service port, flags and mount.
void ExpectWiredTogether(const Rendering& r) {
  YAML::Node mwc = r.Get("MutatingWebhookConfiguration", kScheduler + "-gang-gate");
  ASSERT_TRUE(mwc.IsDefined()) << r.text;
  const YAML::Node hooks = At(mwc, {"webhooks"});
  ASSERT_EQ(hooks.size(), kSelectors.size());
  std::set<std::string> names;
  for (size_t i = 0; i < hooks.size(); ++i) {
    const YAML::Node h = hooks[i];
    SCOPED_TRACE(Str(h, {"name"}));
    EXPECT_TRUE(names.insert(Str(h, {"name"})).second);
    EXPECT_EQ(At(h, {"admissionReviewVersions"}).size(), 1u);
    EXPECT_EQ(At(h, {"admissionReviewVersions"})[0].as<std::string>(), "v1");
    EXPECT_EQ(Str(h, {"sideEffects"}), "None");
    EXPECT_EQ(Str(h, {"failurePolicy"}), "Ignore") << "the webhook must never block pod creation";
    EXPECT_EQ(Str(h, {"timeoutSeconds"}), "5");
    // Neither the release's own pods nor kube-system's ever wait on the webhook.
    const YAML::Node ns = At(h, {"namespaceSelector", "matchExpressions"});
    ASSERT_EQ(ns.size(), 1u);
    EXPECT_EQ(Str(ns[0], {"key"}), "kubernetes.io/metadata.name");
    EXPECT_EQ(Str(ns[0], {"operator"}), "NotIn");
    std::set<std::string> excluded;
    for (const auto& v : At(ns[0], {"values"})) excluded.insert(v.as<std::string>());
    EXPECT_EQ(excluded, (std::set<std::string>{kNamespace, "kube-system"}));
    EXPECT_FALSE(At(h, {"matchConditions"}).IsDefined()) << "matchConditions is beta only from Kubernetes 1.28";
    const YAML::Node expr = At(h, {"objectSelector", "matchExpressions"});
    ASSERT_EQ(expr.size(), kSelectors[i].size());
    for (size_t e = 0; e < expr.size(); ++e) {
      EXPECT_EQ(Str(expr[e], {"key"}), kSelectors[i][e].first);
      EXPECT_EQ(Str(expr[e], {"operator"}), kSelectors[i][e].second);
    }
    const YAML::Node rules = At(h, {"rules"});
    ASSERT_EQ(rules.size(), 1u);
    EXPECT_EQ(At(rules[0], {"operations"}).size(), 1u);
    EXPECT_EQ(At(rules[0], {"operations"})[0].as<std::string>(), "CREATE");
    EXPECT_EQ(At(rules[0], {"resources"})[0].as<std::string>(), "pods");
    EXPECT_EQ(At(rules[0], {"apiGroups"})[0].as<std::string>(), "");
    EXPECT_EQ(Str(h, {"clientConfig", "service", "name"}), kScheduler);
    EXPECT_EQ(Str(h, {"clientConfig", "service", "namespace"}), kNamespace);
    EXPECT_EQ(Str(h, {"clientConfig", "service", "path"}), "/mutate-pods");
    EXPECT_EQ(Str(h, {"clientConfig", "service", "port"}), "443");
  }
  // Service 443 -> the extender's `webhook` port -> --webhook-addr.
  YAML::Node service = r.Get("Service", kScheduler);
  std::string target;
  for (const auto& p : At(service, {"spec", "ports"})) {
    if (Str(p, {"port"}) == "443") target = Str(p, {"targetPort"});
  }
  ASSERT_EQ(target, "webhook");
  const YAML::Node ext = Extender(r);
  std::string container_port;
  for (const auto& p : At(ext, {"ports"})) {
    if (Str(p, {"name"}) == target) container_port = Str(p, {"containerPort"});
  }
  EXPECT_EQ(Flag(ext, "webhook-addr"), ":" + container_port);
  EXPECT_EQ(Flag(ext, "webhook-scheduler-name"), "phalanx-scheduler");
  if (!Flag(ext, "webhook-cert-secret").empty()) return;  // self-managed: OnByDefault...
  // The cert and key flags point into the mounted webhook Secret.
  std::string mount;
  for (const auto& m : At(ext, {"volumeMounts"})) {
    if (Str(m, {"name"}) == "webhook-tls") mount = Str(m, {"mountPath"});
  }
  ASSERT_FALSE(mount.empty());
  EXPECT_EQ(Flag(ext, "webhook-tls-cert"), mount + "/tls.crt");
  EXPECT_EQ(Flag(ext, "webhook-tls-key"), mount + "/tls.key");
  std::string secret;
  for (const auto& v : At(r.Get("Deployment", kScheduler), {"spec", "template", "spec", "volumes"})) {
    if (Str(v, {"name"}) == "webhook-tls") secret = Str(v, {"secret", "secretName"});
  }
  EXPECT_EQ(secret, kScheduler + "-webhook-tls");
}

TEST(WebhookChartTest, OnByDefaultWithTheExtendersOwnCertificate) {
  const Rendering& r = Render();
  ASSERT_RENDERED(r);
  ExpectWiredTogether(r);
  EXPECT_TRUE(r.OfKind("Certificate").empty());
  // An empty Secret for the extender to fill: no data, so upgrades keep what it wrote.
  const std::string secret_name = kScheduler + "-webhook-certs";
  YAML::Node secret = r.Get("Secret", secret_name);
  ASSERT_TRUE(secret.IsDefined()) << r.text;
  EXPECT_EQ(Str(secret, {"type"}), "Opaque");
  EXPECT_FALSE(At(secret, {"data"}).IsDefined());
  YAML::Node mwc = r.Get("MutatingWebhookConfiguration", kScheduler + "-gang-gate");
  for (const auto& h : At(mwc, {"webhooks"})) {
    EXPECT_FALSE(At(h, {"clientConfig", "caBundle"}).IsDefined()) << "the extender patches it in";
  }
  EXPECT_FALSE(At(mwc, {"metadata", "annotations", "cert-manager.io/inject-ca-from"}).IsDefined());
  const YAML::Node ext = Extender(r);
  EXPECT_EQ(Flag(ext, "webhook-cert-secret"), std::string(kNamespace) + "/" + secret_name);
  EXPECT_EQ(Flag(ext, "webhook-configuration"), kScheduler + "-gang-gate");
  EXPECT_EQ(Flag(ext, "webhook-service"), kScheduler);
  EXPECT_EQ(Flag(ext, "webhook-cert-validity"), "365d");
  EXPECT_EQ(Flag(ext, "webhook-cert-ca-validity"), "3650d");
  EXPECT_EQ(Flag(ext, "webhook-cert-renew-before"), "30d");
  EXPECT_TRUE(Flag(ext, "webhook-tls-cert").empty());
  // The certificate directory is a writable emptyDir (the root file system is read-only).
  std::string mount;
  for (const auto& m : At(ext, {"volumeMounts"})) {
    if (Str(m, {"name"}) == "webhook-certs") mount = Str(m, {"mountPath"});
  }
  EXPECT_EQ(Flag(ext, "webhook-cert-dir"), mount);
  bool empty_dir = false;
  for (const auto& v : At(r.Get("Deployment", kScheduler), {"spec", "template", "spec", "volumes"})) {
    if (Str(v, {"name"}) == "webhook-certs") empty_dir = At(v, {"emptyDir"}).IsMap();
  }
  EXPECT_TRUE(empty_dir);
  // The flags are the ones the extender accepts.
  auto options = extender::WebhookCertOptionsFromFlags(
      Flag(ext, "webhook-cert-secret"), Flag(ext, "webhook-configuration"), Flag(ext, "webhook-service"),
      ::testing::TempDir() + "/phalanx-chart-webhook-certs", Flag(ext, "webhook-cert-validity"),
      Flag(ext, "webhook-cert-ca-validity"), Flag(ext, "webhook-cert-renew-before"));
  ASSERT_TRUE(options.ok()) << options.status().message();
  ASSERT_TRUE(options->has_value());
  EXPECT_EQ((*options)->policy.dns_names.front(), kServiceDns);
}

TEST(WebhookChartTest, OffWhenDisabled) {
  for (const Rendering* r : {&Render({"--set", "webhook.enabled=false"}),
                             &Render({"--set", "webhook.enabled=false", "--set", "webhook.certManager.enabled=true"})}) {
    ASSERT_RENDERED(*r);
    EXPECT_TRUE(r->OfKind("MutatingWebhookConfiguration").empty());
    EXPECT_TRUE(r->OfKind("Secret").empty());
    EXPECT_TRUE(r->OfKind("Certificate").empty());
    EXPECT_TRUE(WebhookFlags(Extender(*r)).empty());
    EXPECT_EQ(r->text.find("webhook-tls"), std::string::npos);
    EXPECT_EQ(r->text.find("webhook-certs"), std::string::npos);
    for (const auto& p : At(r->Get("Service", kScheduler), {"spec", "ports"})) EXPECT_NE(Str(p, {"port"}), "443");
  }
}

TEST(WebhookChartTest, HelmMadeCertificateIsTrustedByTheCaBundleAndLoadsInTheExtender) {
  const Rendering& r = SelfSigned();
  ASSERT_RENDERED(r);
  ExpectWiredTogether(r);
  EXPECT_TRUE(r.OfKind("Certificate").empty());
  YAML::Node secret = r.Get("Secret", kScheduler + "-webhook-tls");
  ASSERT_TRUE(secret.IsDefined());
  EXPECT_EQ(Str(secret, {"type"}), "kubernetes.io/tls");
  YAML::Node mwc = r.Get("MutatingWebhookConfiguration", kScheduler + "-gang-gate");
  EXPECT_FALSE(At(mwc, {"metadata", "annotations", "cert-manager.io/inject-ca-from"}).IsDefined());
  const std::string ca_bundle = Str(At(mwc, {"webhooks"})[0], {"clientConfig", "caBundle"});
  EXPECT_EQ(Str(At(mwc, {"webhooks"})[1], {"clientConfig", "caBundle"}), ca_bundle);
  EXPECT_EQ(ca_bundle, Str(secret, {"data", "ca.crt"}));

  const std::string ca = WriteTemp("ca.crt", Decode(ca_bundle));
  const std::string crt = WriteTemp("tls.crt", Decode(Str(secret, {"data", "tls.crt"})));
  const std::string key = WriteTemp("tls.key", Decode(Str(secret, {"data", "tls.key"})));
  // The API server dials <service>.<namespace>.svc and checks the name against the SANs.
  CommandResult verify = RunCommand({"openssl", "verify", "-CAfile", ca, "-verify_hostname", kServiceDns, crt});
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  CommandResult wrong = RunCommand({"openssl", "verify", "-CAfile", ca, "-verify_hostname", "evil.example.com", crt});
  EXPECT_NE(wrong.exit_code, 0) << "the hostname check is not effective";
  // The pair loads the way the extender loads its flags.
  auto options = extender::WebhookOptionsFromFlags(":9443", crt, key, "phalanx-scheduler");
  EXPECT_TRUE(options.ok()) << options.status().message();
}

TEST(WebhookChartTest, CertManagerIssuesTheCertificateAndInjectsTheCa) {
  const Rendering& r = CertManager();
  ASSERT_RENDERED(r);
  ExpectWiredTogether(r);
  EXPECT_TRUE(r.OfKind("Secret").empty()) << "cert-manager writes the Secret";
  YAML::Node cert = r.Get("Certificate", kScheduler + "-webhook");
  ASSERT_TRUE(cert.IsDefined()) << r.text;
  EXPECT_EQ(Str(cert, {"metadata", "namespace"}), kNamespace);
  EXPECT_EQ(Str(cert, {"spec", "secretName"}), kScheduler + "-webhook-tls");
  std::set<std::string> dns;
  for (const auto& d : At(cert, {"spec", "dnsNames"})) dns.insert(d.as<std::string>());
  EXPECT_TRUE(dns.count(kServiceDns));
  const std::string issuer = Str(cert, {"spec", "issuerRef", "name"});
  YAML::Node iss = r.Get("Issuer", issuer);
  ASSERT_TRUE(iss.IsDefined()) << "issuerRef " << issuer << " not rendered";
  EXPECT_TRUE(At(iss, {"spec", "selfSigned"}).IsMap());
  YAML::Node mwc = r.Get("MutatingWebhookConfiguration", kScheduler + "-gang-gate");
  EXPECT_EQ(Str(mwc, {"metadata", "annotations", "cert-manager.io/inject-ca-from"}),
            std::string(kNamespace) + "/" + kScheduler + "-webhook");
  for (const auto& h : At(mwc, {"webhooks"})) {
    EXPECT_FALSE(At(h, {"clientConfig", "caBundle"}).IsDefined()) << "cainjector fills it";
  }

  const Rendering& own = Render({"--set", "webhook.enabled=true", "--set", "webhook.certManager.enabled=true", "--set",
                                 "webhook.certManager.issuerRef.kind=ClusterIssuer", "--set",
                                 "webhook.certManager.issuerRef.name=corp-ca"});
  ASSERT_RENDERED(own);
  EXPECT_TRUE(own.OfKind("Issuer").empty());
  YAML::Node ref = At(own.Get("Certificate", kScheduler + "-webhook"), {"spec", "issuerRef"});
  EXPECT_EQ(Str(ref, {"name"}), "corp-ca");
  EXPECT_EQ(Str(ref, {"kind"}), "ClusterIssuer");
  EXPECT_EQ(Str(ref, {"group"}), "cert-manager.io");
}

TEST(WebhookChartTest, RendersForTheOldestSupportedKubernetes) {
  const HelmLocation& helm = Helm();
  ASSERT_TRUE(helm.error.empty()) << helm.error;
  CommandResult r = RunCommand({helm.path, "template", kRelease, SourceDir() + "/helm/phalanx", "-n", kNamespace,
                                "--kube-version", "1.27.0", "--set", "webhook.enabled=true"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("admissionregistration.k8s.io/v1\n"), std::string::npos);
}

TEST(WebhookChartTest, InvalidWebhookValuesAreRejected) {
  const HelmLocation& helm = Helm();
  ASSERT_TRUE(helm.error.empty()) << helm.error;
  struct Case { const char* set; const char* message; };
  for (const auto& c : {Case{"webhook.timeoutSeconds=60", "timeoutSeconds"}, Case{"webhook.port=0", "port"},
                        Case{"webhook.selfManaged.renewBefore=30", "renewBefore"},
                        Case{"webhook.selfManaged.certValidity=1y", "certValidity"},
                        Case{"webhook.certManager.issuerRef.kind=Vault", "kind"},
                        Case{"webhook.enable=true", "enable"}}) {
    SCOPED_TRACE(c.set);
    CommandResult r = RunCommand({helm.path, "template", kRelease, SourceDir() + "/helm/phalanx", "--set", c.set});
    EXPECT_NE(r.exit_code, 0) << "accepted " << c.set;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace phalanx::chart_test
