// Chart checks that run the real helm binary: lint, template with default and non-default
// values, what kube-apiserver would check on the rendered objects, and install.yaml in sync.
// Without helm these tests FAIL with the reason (see chart_env.h), they never skip.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <regex>
#include <set>

#include "tests/chart/render_checks.h"

namespace phalanx::chart_test {
namespace {

// --- helm itself ---------------------------------------------------------------------------

TEST(HelmTest, LintStrictPassesWithDefaultAndNonDefaultValues) {
  const HelmLocation& helm = Helm();
  ASSERT_TRUE(helm.error.empty()) << helm.error;
  const std::string chart = SourceDir() + "/helm/phalanx";
  for (const auto& extra : std::vector<std::vector<std::string>>{
           {}, {"-f", chart + "/ci/nondefault-values.yaml"}}) {
    std::vector<std::string> argv = {helm.path, "lint", "--strict", chart};
    argv.insert(argv.end(), extra.begin(), extra.end());
    CommandResult r = RunCommand(argv);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("0 chart(s) failed"), std::string::npos) << r.out;
  }
}

TEST(HelmTest, InvalidValuesAreRejectedWithAClearMessage) {
  const HelmLocation& helm = Helm();
  ASSERT_TRUE(helm.error.empty()) << helm.error;
  struct Case { const char* name; const char* set; const char* message; };
  for (const auto& c : {Case{"weight below 12", "scheduler.extender.weight=5", "weight"},
                        Case{"misspelt key", "scheduler.replica=2", "replica"},
                        Case{"unknown MIG strategy", "devicePlugin.config.flags.migStrategy=auto", "migStrategy"},
                        Case{"bad log format", "global.logFormat=xml", "logFormat"},
                        Case{"short bind timeout", "scheduler.extender.httpTimeoutSeconds=5", "httpTimeoutSeconds"},
                        Case{"negative reclaim delay", "extender.config.teamQueues.reclaimAfterSeconds=-5",
                             "reclaimAfterSeconds"},
                        Case{"cross-queue priority below -1", "extender.config.teamQueues.crossQueuePreemptionPriority=-2",
                             "crossQueuePreemptionPriority"},
                        Case{"misspelt team-queue key", "extender.config.teamQueues.reclaimAfter=5", "reclaimAfter"},
                        Case{"queue status every 0 s", "extender.queueStatusIntervalSeconds=0", "queueStatusIntervalSeconds"},
                        Case{"alert duration without unit", "metrics.prometheusRule.queueBelowNominalFor=15",
                             "queueBelowNominalFor"}}) {
    SCOPED_TRACE(c.name);
    CommandResult r = RunCommand({helm.path, "template", kRelease, SourceDir() + "/helm/phalanx", "--set", c.set});
    EXPECT_NE(r.exit_code, 0) << "accepted " << c.set;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
  }
}

// --- what the API server would check ---------------------------------------------------------

const std::map<std::string, std::pair<std::string, bool>>& KnownKinds() {
  // kind -> (apiVersion, namespaced)
  static const std::map<std::string, std::pair<std::string, bool>> kinds = {
      {"ServiceAccount", {"v1", true}},
      {"ConfigMap", {"v1", true}},
      {"Service", {"v1", true}},
      {"Namespace", {"v1", false}},
      {"Deployment", {"apps/v1", true}},
      {"DaemonSet", {"apps/v1", true}},
      {"ClusterRole", {"rbac.authorization.k8s.io/v1", false}},
      {"ClusterRoleBinding", {"rbac.authorization.k8s.io/v1", false}},
      {"Role", {"rbac.authorization.k8s.io/v1", true}},
      {"RoleBinding", {"rbac.authorization.k8s.io/v1", true}},
      {"PriorityClass", {"scheduling.k8s.io/v1", false}},
      {"ServiceMonitor", {"monitoring.coreos.com/v1", true}},
      {"PrometheusRule", {"monitoring.coreos.com/v1", true}},
      {"CustomResourceDefinition", {"apiextensions.k8s.io/v1", false}},
      // The gang-gate admission webhook (webhook.enabled) and its certificate.
      {"MutatingWebhookConfiguration", {"admissionregistration.k8s.io/v1", false}},
      {"Secret", {"v1", true}},
      {"Certificate", {"cert-manager.io/v1", true}},
      {"Issuer", {"cert-manager.io/v1", true}},
      // The CRD upgrade hook (crds.upgradeHook).
      {"Job", {"batch/v1", true}},
  };
  return kinds;
}

TEST(RenderedObjectsTest, KindsNamesNamespacesAndLabelsAreValid) {
  const std::regex dns1123_label("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$");
  const std::regex dns1123_subdomain("^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$");
  const std::regex rbac_name("^[^/%]+$");  // RBAC names are path segments (system:... allowed)
  const std::regex label_value("^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$");
  for (const auto& cfg : Configs()) {
    SCOPED_TRACE(cfg.name);
    const Rendering& r = cfg.render();
    ASSERT_RENDERED(r);
    ASSERT_GE(r.docs.size(), 20u);
    std::set<std::string> seen;
    for (const auto& d : r.docs) {
      const std::string kind = Str(d, {"kind"});
      const std::string name = Str(d, {"metadata", "name"});
      SCOPED_TRACE(kind + "/" + name);
      auto known = KnownKinds().find(kind);
      ASSERT_NE(known, KnownKinds().end()) << "unexpected kind";
      EXPECT_EQ(Str(d, {"apiVersion"}), known->second.first);
      const std::string ns = Str(d, {"metadata", "namespace"});
      EXPECT_EQ(!ns.empty(), known->second.second) << "namespace set on a cluster-scoped kind, or missing";
      EXPECT_TRUE(seen.insert(kind + "/" + ns + "/" + name).second) << "rendered twice";
      if (kind.find("Role") != std::string::npos) {
        EXPECT_TRUE(std::regex_match(name, rbac_name));
      } else if (kind == "Service" || kind == "Namespace") {
        EXPECT_TRUE(std::regex_match(name, dns1123_label) && name.size() <= 63) << "not a DNS-1123 label";
      } else {
        EXPECT_TRUE(std::regex_match(name, dns1123_subdomain) && name.size() <= 253);
      }
      for (const auto& [k, v] : StrMap(At(d, {"metadata", "labels"}))) {
        EXPECT_TRUE(v.size() <= 63 && std::regex_match(v, label_value)) << "label " << k << "=" << v;
      }
      EXPECT_EQ(Str(d, {"metadata", "labels", "app.kubernetes.io/part-of"}), "phalanx");
    }
  }
}

TEST(RenderedObjectsTest, WorkloadsAreConsistentWithTheirPodsServicesAndVolumes) {
  for (const auto& cfg : Configs()) {
    SCOPED_TRACE(cfg.name);
    const Rendering& r = cfg.render();
    ASSERT_RENDERED(r);
    std::vector<YAML::Node> workloads = r.OfKind("Deployment");
    for (auto& ds : r.OfKind("DaemonSet")) workloads.push_back(ds);
    ASSERT_EQ(workloads.size(), 3u);
    for (const auto& w : workloads) {
      SCOPED_TRACE(Str(w, {"metadata", "name"}));
      auto selector = StrMap(At(w, {"spec", "selector", "matchLabels"}));
      auto pod_labels = StrMap(At(w, {"spec", "template", "metadata", "labels"}));
      ASSERT_FALSE(selector.empty());
      EXPECT_TRUE(IsSubset(selector, pod_labels)) << "selector does not match the pod template labels";
      YAML::Node pod = At(w, {"spec", "template", "spec"});
      std::string sa = Str(pod, {"serviceAccountName"});
      EXPECT_TRUE(r.Get("ServiceAccount", sa).IsDefined()) << "ServiceAccount " << sa << " not rendered";
      std::set<std::string> volumes;
      for (const auto& v : At(pod, {"volumes"})) {
        volumes.insert(Str(v, {"name"}));
        std::string cm = Str(v, {"configMap", "name"});
        if (!cm.empty()) {
          EXPECT_TRUE(r.Get("ConfigMap", cm).IsDefined()) << "ConfigMap " << cm;
        }
      }
      for (const auto& c : At(pod, {"containers"})) {
        SCOPED_TRACE(Str(c, {"name"}));
        EXPECT_FALSE(Str(c, {"image"}).empty());
        EXPECT_NE(Str(c, {"image"}).find(':'), std::string::npos) << "image without a tag";
        EXPECT_TRUE(At(c, {"resources", "requests"}).IsMap()) << "no resource requests";
        std::map<std::string, int> ports;
        for (const auto& p : At(c, {"ports"})) {
          std::string pn = Str(p, {"name"});
          EXPECT_LE(pn.size(), 15u) << "port names are IANA_SVC_NAMEs";
          EXPECT_TRUE(ports.emplace(pn, At(p, {"containerPort"}).as<int>()).second) << "duplicate port " << pn;
        }
        for (const char* probe : {"livenessProbe", "readinessProbe"}) {
          YAML::Node port = At(c, {probe, "httpGet", "port"});
          ASSERT_TRUE(port.IsDefined()) << probe << " missing";
          EXPECT_TRUE(ports.count(port.Scalar())) << probe << " points at port " << port.Scalar()
                                                  << " the container does not declare";
        }
        for (const auto& m : At(c, {"volumeMounts"})) {
          EXPECT_TRUE(volumes.count(Str(m, {"name"}))) << "mount of undeclared volume " << Str(m, {"name"});
        }
        // Daemons serve /metrics, /healthz and /readyz on --metrics-addr: it must be the port the
        // probes and Prometheus use.
        auto flags = Flags(c);
        if (flags.count("metrics-addr")) {
          ASSERT_TRUE(ports.count("metrics"));
          EXPECT_EQ(flags["metrics-addr"], ":" + std::to_string(ports["metrics"]));
        }
        EXPECT_EQ(Str(c, {"securityContext", "allowPrivilegeEscalation"}), "false");
        EXPECT_EQ(Str(c, {"securityContext", "readOnlyRootFilesystem"}), "true");
        EXPECT_NE(Str(c, {"securityContext", "privileged"}), "true");
      }
    }
    // Every Service selects a rendered pod template and targets ports its containers declare.
    for (const auto& s : r.OfKind("Service")) {
      SCOPED_TRACE("Service/" + Str(s, {"metadata", "name"}));
      auto sel = StrMap(At(s, {"spec", "selector"}));
      ASSERT_FALSE(sel.empty());
      bool found = false;
      for (const auto& w : workloads) {
        if (!IsSubset(sel, StrMap(At(w, {"spec", "template", "metadata", "labels"})))) continue;
        found = true;
        std::set<std::string> names;
        for (const auto& c : At(w, {"spec", "template", "spec", "containers"})) {
          for (const auto& p : At(c, {"ports"})) names.insert(Str(p, {"name"}));
        }
        for (const auto& p : At(s, {"spec", "ports"})) {
          EXPECT_TRUE(names.count(Str(p, {"targetPort"}))) << "targetPort " << Str(p, {"targetPort"});
        }
      }
      EXPECT_TRUE(found) << "selects no pods";
    }
  }
}

// --- install.yaml ----------------------------------------------------------------------------

TEST(InstallManifestTest, IsInSyncWithTheChart) {
  const HelmLocation& helm = Helm();
  ASSERT_TRUE(helm.error.empty()) << helm.error;
  setenv("HELM", helm.path.c_str(), 1);
  CommandResult r = RunCommand({SourceDir() + "/scripts/render-manifests.sh", "--check"});
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out.substr(0, 4000);
}

TEST(InstallManifestTest, CreatesTheNamespaceFirstAndCarriesEveryChartObject) {
  std::string error;
  auto docs = ParseDocs(ReadFile(SourceDir() + "/manifests/install.yaml"), &error);
  ASSERT_TRUE(error.empty()) << error;
  ASSERT_FALSE(docs.empty());
  EXPECT_EQ(Str(docs[0], {"kind"}), "Namespace");
  EXPECT_EQ(Str(docs[0], {"metadata", "name"}), kNamespace);
  // CRDs come before the objects that use them (kubectl applies in file order).
  const Rendering& r = Render();
  ASSERT_RENDERED(r);
  size_t crds = 0;  // every file the chart ships under crds/ (helm --include-crds)
  for (const auto& e : std::filesystem::directory_iterator(SourceDir() + "/helm/phalanx/crds"))
    crds += e.path().extension() == ".yaml" ? 1 : 0;
  // Hooks need helm (install.yaml is for kubectl): rendered without them.
  const size_t hooks = static_cast<size_t>(std::count_if(r.docs.begin(), r.docs.end(), [](const YAML::Node& d) {
    return !Str(d, {"metadata", "annotations", "helm.sh/hook"}).empty();
  }));
  EXPECT_EQ(hooks, 4u);
  EXPECT_EQ(docs.size(), r.docs.size() - hooks + 1 + crds);
  if (FileExists(SourceDir() + "/helm/phalanx/crds/phalanx.io_trainingjobs.yaml")) {
    EXPECT_EQ(Str(docs[1], {"kind"}), "CustomResourceDefinition");
  }
}

}  // namespace
}  // namespace phalanx::chart_test

namespace phalanx::chart_test {
namespace {

// helm upgrade never updates crds/: a pre-upgrade hook applies them with the operator image, with
// a ServiceAccount whose only rights are Phalanx's two CRDs by name, created before the Job.
TEST(CrdUpgradeHookTest, APreUpgradeJobAppliesTheCrdsWithRightsOnlyToThem) {
  const Rendering& r = Render();
  ASSERT_RENDERED(r);
  const YAML::Node job = r.Get("Job", "phalanx-crd-upgrade");
  ASSERT_TRUE(job.IsDefined());
  EXPECT_EQ(Str(job, {"metadata", "annotations", "helm.sh/hook"}), "pre-upgrade");
  EXPECT_EQ(Str(job, {"metadata", "annotations", "helm.sh/hook-weight"}), "0");
  const YAML::Node pod = At(job, {"spec", "template", "spec"});
  EXPECT_EQ(Str(pod, {"serviceAccountName"}), "phalanx-crd-upgrade");
  EXPECT_EQ(Str(pod, {"restartPolicy"}), "Never");
  const YAML::Node c = pod["containers"][0];
  EXPECT_EQ(Str(c, {"image"}).find("phalanx-operator"), Str(c, {"image"}).rfind("/") + 1) << Str(c, {"image"});
  EXPECT_EQ(c["args"][0].as<std::string>(), "apply-crds");
  EXPECT_EQ(c["args"][1].as<std::string>(), "--timeout-seconds=60");
  for (const char* kind : {"ServiceAccount", "ClusterRole", "ClusterRoleBinding"}) {
    const YAML::Node o = r.Get(kind, "phalanx-crd-upgrade");
    ASSERT_TRUE(o.IsDefined()) << kind;
    EXPECT_EQ(Str(o, {"metadata", "annotations", "helm.sh/hook"}), "pre-upgrade") << kind;
    EXPECT_EQ(Str(o, {"metadata", "annotations", "helm.sh/hook-weight"}), "-10") << kind << ": before the Job";
  }
  const YAML::Node rules = r.Get("ClusterRole", "phalanx-crd-upgrade")["rules"];
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_EQ(rules[0]["resources"][0].as<std::string>(), "customresourcedefinitions");
  std::set<std::string> names;
  for (const auto& n : rules[0]["resourceNames"]) names.insert(n.as<std::string>());
  EXPECT_EQ(names, (std::set<std::string>{"gpuqueues.phalanx.io", "trainingjobs.phalanx.io"}));

  const Rendering& off = Render({"--set", "crds.upgradeHook.enabled=false"});
  ASSERT_RENDERED(off);
  EXPECT_TRUE(off.OfKind("Job").empty());
  EXPECT_FALSE(off.Get("ClusterRole", "phalanx-crd-upgrade").IsDefined());
}

}  // namespace
}  // namespace phalanx::chart_test
