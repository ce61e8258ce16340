// Chart checks that run the real helm binary: lint, template with default and non-default
// values, and what kube-apiserver (and the daemons) would check on the rendered objects.
// Without helm these tests FAIL with the reason (see chart_env.h), they never skip.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "tests/chart/chart_env.h"
#include "tests/chart/rbac_model.h"
#include "tests/chart/rendering.h"

namespace phalanx::chart_test {
namespace {

#define ASSERT_RENDERED(r) ASSERT_TRUE((r).error.empty()) << (r).error

struct Config {
  const char* name;
  const Rendering& (*render)();
};
const Rendering& RenderDefault() { return Render(); }
// ci/nondefault-values.yaml has the webhook with cert-manager; this one the helm-made certificate.
const Rendering& RenderWebhook() { return Render({"--set", "webhook.enabled=true"}); }
const std::vector<Config>& Configs() {
  static const std::vector<Config> configs = {{"default values", &RenderDefault},
                                              {"ci/nondefault-values.yaml", &RenderNonDefault},
                                              {"webhook.enabled=true", &RenderWebhook}};
  return configs;
}

std::vector<std::string> Seq(const YAML::Node& n) {
  std::vector<std::string> out;
  if (n.IsDefined() && n.IsSequence()) {
    for (const auto& v : n) out.push_back(v.as<std::string>());
  }
  return out;
}

std::map<std::string, std::string> StrMap(const YAML::Node& n) {
  std::map<std::string, std::string> out;
  if (n.IsDefined() && n.IsMap()) {
    for (const auto& kv : n) out[kv.first.as<std::string>()] = kv.second.as<std::string>();
  }
  return out;
}

bool IsSubset(const std::map<std::string, std::string>& sel, const std::map<std::string, std::string>& labels) {
  for (const auto& [k, v] : sel) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  return true;
}

// Flags of a container: "--name=value" / "--name" -> {name: value}.
std::map<std::string, std::string> Flags(const YAML::Node& container) {
  std::map<std::string, std::string> out;
  std::vector<std::string> words = Seq(At(container, {"command"}));
  for (auto& a : Seq(At(container, {"args"}))) words.push_back(a);
  for (const auto& w : words) {
    if (w.rfind("--", 0) != 0) continue;
    size_t eq = w.find('=');
    out[w.substr(2, eq == std::string::npos ? std::string::npos : eq - 2)] =
        eq == std::string::npos ? "" : w.substr(eq + 1);
  }
  return out;
}

YAML::Node Container(const YAML::Node& workload, const std::string& name) {
  for (const auto& c : At(workload, {"spec", "template", "spec", "containers"})) {
    if (Str(c, {"name"}) == name) return c;
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

std::string Full(const std::string& suffix) { return std::string(kRelease) + "-" + suffix; }

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

// --- scheduler -------------------------------------------------------------------------------

struct SchedulerView {
  YAML::Node deployment, scheduler_container, extender_container, config, extender_config;
};

SchedulerView Scheduler(const Rendering& r) {
  SchedulerView v;
  v.deployment = r.Get("Deployment", Full("scheduler"));
  v.scheduler_container = Container(v.deployment, "kube-scheduler");
  v.extender_container = Container(v.deployment, "phalanx-extender");
  YAML::Node cm = r.Get("ConfigMap", Full("scheduler-config"));
  v.config = YAML::Load(Str(cm, {"data", "scheduler-config.yaml"}));
  v.extender_config = YAML::Load(Str(cm, {"data", "extender.yaml"}));
  return v;
}

TEST(SchedulerTest, ConfigHasTheExtenderEntryExactlyAsDesigned) {
  for (const auto& cfg : Configs()) {
    SCOPED_TRACE(cfg.name);
    const Rendering& r = cfg.render();
    ASSERT_RENDERED(r);
    SchedulerView s = Scheduler(r);
    ASSERT_TRUE(s.deployment.IsDefined() && s.scheduler_container.IsDefined() && s.extender_container.IsDefined());
    const YAML::Node& c = s.config;
    EXPECT_EQ(Str(c, {"apiVersion"}), "kubescheduler.config.k8s.io/v1");
    EXPECT_EQ(Str(c, {"kind"}), "KubeSchedulerConfiguration");
    EXPECT_EQ(Str(c, {"percentageOfNodesToScore"}), "100");
    ASSERT_EQ(At(c, {"profiles"}).size(), 1u);
    EXPECT_EQ(Str(At(c, {"profiles"})[0], {"schedulerName"}), "phalanx-scheduler");
    ASSERT_EQ(At(c, {"extenders"}).size(), 1u);
    YAML::Node e = At(c, {"extenders"})[0];
    EXPECT_EQ(Str(e, {"filterVerb"}), "filter");
    EXPECT_EQ(Str(e, {"prioritizeVerb"}), "prioritize");
    EXPECT_EQ(Str(e, {"preemptVerb"}), "preempt");
    EXPECT_EQ(Str(e, {"bindVerb"}), "bind");
    EXPECT_EQ(Str(e, {"nodeCacheCapable"}), "true");
    EXPECT_EQ(Str(e, {"ignorable"}), "false");
    EXPECT_EQ(Str(e, {"enableHTTPS"}), "false");
    EXPECT_GE(At(e, {"weight"}).as<int>(), 12);
    // httpTimeout is a Go duration; held binds need >= gang timeout (120 s) + 10 s.
    std::smatch m;
    std::string timeout = Str(e, {"httpTimeout"});
    ASSERT_TRUE(std::regex_match(timeout, m, std::regex("^([0-9]+)s$"))) << timeout;
    int timeout_s = std::stoi(m[1]);
    EXPECT_GE(timeout_s, 130);
    // The extender derives its barrier timeout from the same number.
    EXPECT_EQ(At(s.extender_config, {"httpTimeoutSeconds"}).as<int>(), timeout_s);
    std::set<std::string> managed;
    for (const auto& mr : At(e, {"managedResources"})) {
      managed.insert(Str(mr, {"name"}));
      EXPECT_EQ(Str(mr, {"ignoredByScheduler"}), "false") << "kube-scheduler must still count GPUs on nodes";
    }
    EXPECT_TRUE(managed.count("nvidia.com/gpu"));
    EXPECT_TRUE(std::any_of(managed.begin(), managed.end(),
                            [](const std::string& n) { return n.rfind("nvidia.com/mig-", 0) == 0; }));
    // The extender is reached on loopback at the port its --listen flag binds.
    auto ext_flags = Flags(s.extender_container);
    std::string url = Str(e, {"urlPrefix"});
    ASSERT_TRUE(std::regex_match(url, m, std::regex("^http://127\\.0\\.0\\.1:([0-9]+)/v1$"))) << url;
    EXPECT_EQ(ext_flags["listen"], "127.0.0.1:" + m[1].str());
    EXPECT_EQ(ext_flags["config"], "/etc/phalanx/extender.yaml");
  }
  SchedulerView nd = Scheduler(RenderNonDefault());
  YAML::Node e = At(nd.config, {"extenders"})[0];
  EXPECT_EQ(At(e, {"weight"}).as<int>(), 20);
  EXPECT_EQ(Str(e, {"httpTimeout"}), "300s");
  EXPECT_EQ(Str(e, {"urlPrefix"}), "http://127.0.0.1:18888/v1");
  EXPECT_EQ(Str(nd.scheduler_container, {"image"}), "registry.k8s.io/kube-scheduler:v1.30.4");
}

TEST(SchedulerTest, LeasesAreOwnAndConfigFilesAreMountedWhereFlagsPoint) {
  const Rendering& r = Render();
  ASSERT_RENDERED(r);
  SchedulerView s = Scheduler(r);
  EXPECT_EQ(Str(s.config, {"leaderElection", "leaderElect"}), "true");
  EXPECT_EQ(Str(s.config, {"leaderElection", "resourceLock"}), "leases");
  EXPECT_EQ(Str(s.config, {"leaderElection", "resourceNamespace"}), kNamespace);
  EXPECT_EQ(Str(s.config, {"leaderElection", "resourceName"}), "phalanx-scheduler")
      << "must differ from the default scheduler's kube-system/kube-scheduler";
  // Tiers handed to the extender are the PriorityClasses the chart creates, highest first; the
  // lowest also takes every pod below it (no priority class = spot).
  std::vector<std::pair<std::string, int64_t>> tiers;
  for (const auto& t : At(s.extender_config, {"tiers"})) {
    tiers.emplace_back(Str(t, {"name"}), At(t, {"minPriority"}).as<int64_t>());
  }
  EXPECT_EQ(tiers, (std::vector<std::pair<std::string, int64_t>>{
                       {"critical", 1000000}, {"high", 10000}, {"standard", 1000}, {"spot", INT32_MIN}}));
  EXPECT_EQ(Seq(At(s.extender_config, {"tiers"})[0]["preempts"]), (std::vector<std::string>{"high", "standard", "spot"}));
  EXPECT_TRUE(Seq(At(s.extender_config, {"tiers"})[3]["preempts"]).empty()) << "spot preempts nobody";
  EXPECT_EQ(Seq(At(s.extender_config, {"topologyLevels"})).at(0), "kubernetes.io/hostname");
  // The extender's Lease is in the release namespace, where the scheduler pods' RBAC allows it.
  bool pod_namespace_env = false;
  for (const auto& e : At(s.extender_container, {"env"})) {
    pod_namespace_env |= Str(e, {"name"}) == "POD_NAMESPACE" &&
                         Str(e, {"valueFrom", "fieldRef", "fieldPath"}) == "metadata.namespace";
  }
  EXPECT_TRUE(pod_namespace_env);
  // --config of each container names a file the ConfigMap volume provides.
  for (const auto& [container, key] : {std::pair{s.scheduler_container, "scheduler-config.yaml"},
                                       std::pair{s.extender_container, "extender.yaml"}}) {
    std::string path = Flags(container)["config"];
    bool mounted = false;
    for (const auto& m : At(container, {"volumeMounts"})) {
      if (Str(m, {"name"}) == "config" && path == Str(m, {"mountPath"}) + "/" + key) mounted = true;
    }
    EXPECT_TRUE(mounted) << path << " is not the mounted " << key;
  }
  // Probes of kube-scheduler use its HTTPS port; the extender's use --metrics-addr (checked above).
  EXPECT_EQ(Str(s.scheduler_container, {"livenessProbe", "httpGet", "scheme"}), "HTTPS");
  EXPECT_EQ(Str(s.deployment, {"spec", "strategy", "rollingUpdate", "maxSurge"}), "0");
}

TEST(SchedulerTest, ExtenderConfigUsesOnlyKeysTheExtenderParses) {
  const std::string source = SourceDir() + "/extender/config.cc";
  if (!FileExists(source)) GTEST_SKIP() << source << " does not exist yet: keys not cross-checked";
  const std::string code = ReadFile(source);
  for (const auto& cfg : Configs()) {
    SCOPED_TRACE(cfg.name);
    const Rendering& r = cfg.render();
    ASSERT_RENDERED(r);
    YAML::Node ext = Scheduler(r).extender_config;
    ASSERT_TRUE(ext.IsMap());
    std::vector<YAML::Node> maps = {ext, At(ext, {"weights"}), At(ext, {"teamQueues"})};
    for (const auto& t : At(ext, {"tiers"})) maps.push_back(t);
    for (const auto& m : maps) {
      for (const auto& kv : m) {
        const std::string key = kv.first.as<std::string>();
        EXPECT_NE(code.find("\"" + key + "\""), std::string::npos)
            << "extender.yaml key " << key << " is not read by " << source;
      }
    }
  }
}

// GpuQueue operations (docs/user-guide.md §7): the extender's team-queue settings, its status
// write interval and the below-nominal alert's duration follow the values.
TEST(SchedulerTest, TeamQueueValuesReachTheExtenderFlagsAndAlert) {
  const Rendering& d = Render();
  ASSERT_RENDERED(d);
  const SchedulerView ds = Scheduler(d);
  EXPECT_EQ(Flags(ds.extender_container)["queue-status-interval"], "10");
  EXPECT_EQ(At(ds.extender_config, {"teamQueues", "crossQueuePreemptionPriority"}).as<int64_t>(), 1000000);
  EXPECT_EQ(At(ds.extender_config, {"teamQueues", "reclaimAfterSeconds"}).as<double>(), 0);

  const Rendering& nd = RenderNonDefault();
  ASSERT_RENDERED(nd);
  const SchedulerView ns = Scheduler(nd);
  EXPECT_EQ(Flags(ns.extender_container)["queue-status-interval"], "30");
  EXPECT_EQ(At(ns.extender_config, {"teamQueues", "crossQueuePreemptionPriority"}).as<int64_t>(), -1);
  EXPECT_EQ(At(ns.extender_config, {"teamQueues", "reclaimAfterSeconds"}).as<double>(), 300);
  const Rendering& fractional = Render({"--set-json", "extender.queueStatusIntervalSeconds=2.5"});
  ASSERT_RENDERED(fractional);
  EXPECT_EQ(Flags(Scheduler(fractional).extender_container)["queue-status-interval"], "2.5");

  bool found = false;
  for (const auto& g : At(nd.OfKind("PrometheusRule").at(0), {"spec", "groups"})) {
    for (const auto& rule : At(g, {"rules"})) {
      if (Str(rule, {"alert"}) != "PhalanxQueueBelowNominalWithPendingWork") continue;
      found = true;
      EXPECT_EQ(Str(rule, {"for"}), "45m");
      EXPECT_NE(Str(rule, {"annotations", "summary"}).find("waiting for 45m"), std::string::npos);
      EXPECT_NE(Str(rule, {"annotations", "summary"}).find("{{ $labels.queue }}"), std::string::npos);
    }
  }
  EXPECT_TRUE(found) << "PhalanxQueueBelowNominalWithPendingWork not rendered";
}

// --- PriorityClasses, device plugin, operator ------------------------------------------------

TEST(PriorityClassTest, TheFourTiersAreRenderedWithTheirContractValues) {
  const Rendering& r = Render();
  ASSERT_RENDERED(r);
  std::map<std::string, int64_t> got;
  for (const auto& pc : r.OfKind("PriorityClass")) {
    got[Str(pc, {"metadata", "name"})] = At(pc, {"value"}).as<int64_t>();
    EXPECT_EQ(Str(pc, {"globalDefault"}), "false") << "the chart must not change other workloads' priority";
  }
  EXPECT_EQ(got, (std::map<std::string, int64_t>{{"phalanx-critical", 1000000}, {"phalanx-high", 10000},
                                                 {"phalanx-standard", 1000}, {"phalanx-spot", 100}}));
  EXPECT_EQ(Str(r.Get("PriorityClass", "phalanx-spot"), {"preemptionPolicy"}), "Never");
  const Rendering& off = Render({"--set", "priorityClasses.create=false"});
  ASSERT_RENDERED(off);
  EXPECT_TRUE(off.OfKind("PriorityClass").empty());
}

TEST(DevicePluginTest, DaemonSetMountsKubeletDirectoriesWithoutPrivileges) {
  for (const auto& cfg : Configs()) {
    SCOPED_TRACE(cfg.name);
    const Rendering& r = cfg.render();
    ASSERT_RENDERED(r);
    YAML::Node ds = r.Get("DaemonSet", Full("device-plugin"));
    ASSERT_TRUE(ds.IsDefined());
    YAML::Node pod = At(ds, {"spec", "template", "spec"});
    EXPECT_EQ(Str(pod, {"priorityClassName"}), "system-node-critical");
    EXPECT_FALSE(StrMap(At(pod, {"nodeSelector"})).empty()) << "GPU nodes only";
    EXPECT_NE(Str(pod, {"hostNetwork"}), "true");
    std::map<std::string, std::string> host_paths;  // volume -> path
    for (const auto& v : At(pod, {"volumes"})) {
      if (At(v, {"hostPath"}).IsDefined()) host_paths[Str(v, {"name"})] = Str(v, {"hostPath", "path"});
    }
    YAML::Node c = Container(ds, "device-plugin");
    auto flags = Flags(c);
    std::map<std::string, std::string> mounts;  // mountPath -> volume
    for (const auto& m : At(c, {"volumeMounts"})) mounts[Str(m, {"mountPath"})] = Str(m, {"name"});
    // --kubelet-dir is kubelet's root; only <kubelet-dir>/device-plugins is mounted, at the same path.
    const std::string plugin_dir = flags["kubelet-dir"] + "/device-plugins";
    ASSERT_TRUE(mounts.count(plugin_dir)) << plugin_dir;
    EXPECT_EQ(host_paths[mounts[plugin_dir]], plugin_dir);
    EXPECT_FALSE(mounts.count(flags["kubelet-dir"])) << "kubelet's whole root must not be mounted";
    // --pod-resources-socket lives in a mounted host pod-resources dir.
    std::string sock = flags["pod-resources-socket"];
    std::string sock_dir = sock.substr(0, sock.rfind('/'));
    ASSERT_TRUE(mounts.count(sock_dir)) << sock;
    EXPECT_EQ(host_paths[mounts[sock_dir]], sock_dir);
    EXPECT_TRUE(sock.ends_with("/kubelet.sock"));
    // The lock file is per node: on a hostPath, not in the container.
    std::string lock_dir = flags["lock-file"].substr(0, flags["lock-file"].rfind('/'));
    ASSERT_TRUE(mounts.count(lock_dir)) << flags["lock-file"];
    EXPECT_EQ(host_paths[mounts[lock_dir]], lock_dir);
    EXPECT_EQ(flags["node-name"], "$(NODE_NAME)");
    bool node_env = false;
    for (const auto& e : At(c, {"env"})) {
      node_env |= Str(e, {"name"}) == "NODE_NAME" && Str(e, {"valueFrom", "fieldRef", "fieldPath"}) == "spec.nodeName";
    }
    EXPECT_TRUE(node_env) << "NODE_NAME must come from spec.nodeName";
    EXPECT_EQ(Str(c, {"securityContext", "privileged"}), "false");
    EXPECT_EQ(Seq(At(c, {"securityContext", "capabilities", "drop"})), std::vector<std::string>{"ALL"});
  }
  const Rendering& d = Render();
  ASSERT_RENDERED(d);
  auto flags = Flags(Container(d.Get("DaemonSet", Full("device-plugin")), "device-plugin"));
  EXPECT_EQ(flags["kubelet-dir"], "/var/lib/kubelet");
  EXPECT_EQ(flags["pod-resources-socket"], "/var/lib/kubelet/pod-resources/kubelet.sock");
  EXPECT_EQ(flags["lock-file"], "/run/phalanx/device-plugin.lock");
  // The config the plugin reads parses and carries the MIG strategy from values.
  const Rendering& nd = RenderNonDefault();
  YAML::Node dp_cfg = YAML::Load(Str(nd.Get("ConfigMap", Full("device-plugin-config")), {"data", "config.yaml"}));
  EXPECT_EQ(Str(dp_cfg, {"version"}), "v1");
  EXPECT_EQ(Str(dp_cfg, {"flags", "migStrategy"}), "mixed");
  EXPECT_EQ(Str(nd.Get("DaemonSet", Full("device-plugin")), {"spec", "template", "spec", "runtimeClassName"}), "nvidia");
}

TEST(OperatorTest, FlagsFollowValues) {
  const Rendering& r = Render();
  ASSERT_RENDERED(r);
  auto flags = Flags(Container(r.Get("Deployment", Full("operator")), "operator"));
  EXPECT_TRUE(flags.count("leader-elect"));
  EXPECT_EQ(flags["metrics-addr"], ":8080");
  EXPECT_EQ(flags["progress-addr"], ":8443");
  EXPECT_EQ(flags["progress-url"], "http://phalanx-operator.phalanx-system.svc:8443/progress");
  // Pods POST to the URL as given: its path must be the one the operator serves.
  EXPECT_NE(ReadFile(SourceDir() + "/operator/controller/progress_service.cc").find("\"POST\", \"/progress\""),
            std::string::npos);
  EXPECT_EQ(flags["namespace"], "");
  EXPECT_EQ(flags["workers"], "4");
  EXPECT_EQ(flags["log-format"], "json");
  const Rendering& nd = RenderNonDefault();
  ASSERT_RENDERED(nd);
  flags = Flags(Container(nd.Get("Deployment", Full("operator")), "operator"));
  EXPECT_EQ(flags["namespace"], "ml");
  EXPECT_EQ(flags["workers"], "16");
  EXPECT_EQ(flags["progress-url"], "https://progress.example.com/progress");
  EXPECT_EQ(flags["metrics-addr"], ":9090");
  const Rendering& off = Render({"--set", "operator.enabled=false", "--set", "devicePlugin.enabled=false"});
  ASSERT_RENDERED(off);
  EXPECT_EQ(off.OfKind("Deployment").size(), 1u) << "only the scheduler is left";
  EXPECT_TRUE(off.OfKind("DaemonSet").empty());
  for (const auto& d : off.docs) {
    EXPECT_EQ(Str(d, {"metadata", "name"}).find("operator"), std::string::npos) << Str(d, {"kind"});
  }
}

// --- RBAC ------------------------------------------------------------------------------------

std::string ServiceAccountOf(const std::string& component) {
  if (component == "kube-scheduler" || component == "extender") return Full("scheduler");
  return Full(component);
}

std::vector<ApiRequest> Requests() {
  std::string error;
  auto reqs = ParseApiRequests(ReadFile(SourceDir() + "/docs/api-requests.md"), &error);
  EXPECT_TRUE(error.empty()) << error;
  return reqs;
}

TEST(RbacTest, EveryDocumentedRequestIsAllowed) {
  for (const auto& cfg : Configs()) {
    SCOPED_TRACE(cfg.name);
    const Rendering& r = cfg.render();
    ASSERT_RENDERED(r);
    // Operator scope: all namespaces by default, only operator.watchNamespace otherwise.
    const std::string watched = cfg.render == &RenderNonDefault ? "ml" : "";
    std::map<std::string, ServiceAccountGrants> by_sa;
    for (const auto& req : Requests()) {
      const std::string sa = ServiceAccountOf(req.component);
      if (!by_sa.count(sa)) {
        by_sa[sa] = GrantsFor(r, kNamespace, sa);
        EXPECT_TRUE(by_sa[sa].errors.empty()) << by_sa[sa].errors.front();
      }
      std::string ns = req.scope == "cluster" ? "" : req.scope == "release" ? kNamespace : watched;
      for (const auto& verb : req.verbs) {
        EXPECT_TRUE(Allows(by_sa[sa].grants, verb, req.group, req.resource, ns, req.name))
            << "docs/api-requests.md:" << req.line << ": " << req.component << " cannot " << verb << " "
            << (req.group.empty() ? "" : req.group + "/") << req.resource
            << (ns.empty() ? " cluster-wide" : " in " + ns) << (req.name.empty() ? "" : " name=" + req.name);
      }
    }
    // The stock scheduler roles.
    auto sched = GrantsFor(r, kNamespace, Full("scheduler"));
    EXPECT_EQ(sched.external_roles,
              (std::set<std::string>{"ClusterRole/system:kube-scheduler", "ClusterRole/system:volume-scheduler",
                                     "kube-system/Role/extension-apiserver-authentication-reader"}));
    // Components do not share privileges: nothing else is bound to the device plugin or operator.
    EXPECT_TRUE(GrantsFor(r, kNamespace, Full("device-plugin")).external_roles.empty());
    EXPECT_TRUE(GrantsFor(r, kNamespace, Full("operator")).external_roles.empty());
  }
}

TEST(RbacTest, ChartGrantsNothingBeyondTheDocumentedRequests) {
  auto reqs = Requests();
  for (const auto& cfg : Configs()) {
    SCOPED_TRACE(cfg.name);
    const Rendering& r = cfg.render();
    ASSERT_RENDERED(r);
    for (const auto& component : {"scheduler", "device-plugin", "operator"}) {
      const std::string sa = Full(component);
      for (const auto& g : GrantsFor(r, kNamespace, sa).grants) {
        const RbacRule& rule = g.rule;
        for (const auto& set : {rule.groups, rule.resources, rule.verbs}) {
          EXPECT_FALSE(set.count("*")) << rule.source << " uses a wildcard";
        }
        for (const auto& group : rule.groups) {
          for (const auto& res : rule.resources) {
            for (const auto& verb : rule.verbs) {
              bool justified = std::any_of(reqs.begin(), reqs.end(), [&](const ApiRequest& q) {
                return ServiceAccountOf(q.component) == sa && q.group == group && q.resource == res &&
                       std::find(q.verbs.begin(), q.verbs.end(), verb) != q.verbs.end() &&
                       (rule.names.empty() ? q.name.empty() : rule.names.count(q.name) > 0);
              });
              EXPECT_TRUE(justified) << rule.source << " grants " << verb << " " << group << "/" << res
                                     << " to " << sa << ", which docs/api-requests.md does not list";
            }
          }
        }
      }
    }
  }
}

TEST(RbacTest, OperatorWatchingOneNamespaceGetsNoClusterWideWorkloadRights) {
  const Rendering& r = RenderNonDefault();
  ASSERT_RENDERED(r);
  auto g = GrantsFor(r, kNamespace, Full("operator")).grants;
  EXPECT_TRUE(Allows(g, "create", "", "pods", "ml", ""));
  EXPECT_FALSE(Allows(g, "create", "", "pods", "default", ""));
  EXPECT_FALSE(Allows(g, "list", "", "pods", "", ""));
  EXPECT_TRUE(Allows(g, "create", "authentication.k8s.io", "tokenreviews", "", ""));
  // And the lease grant is limited to its own Lease.
  EXPECT_TRUE(Allows(g, "update", "coordination.k8s.io", "leases", kNamespace, "phalanx-operator"));
  EXPECT_FALSE(Allows(g, "update", "coordination.k8s.io", "leases", kNamespace, "phalanx-extender"));
}

// --- monitoring toggles ----------------------------------------------------------------------

TEST(MonitoringTest, ServiceMonitorAndDashboardAreOffByDefaultAndCompleteWhenOn) {
  const Rendering& d = Render();
  ASSERT_RENDERED(d);
  EXPECT_TRUE(d.OfKind("ServiceMonitor").empty()) << "needs the Prometheus Operator CRD: opt-in";
  EXPECT_TRUE(d.OfKind("PrometheusRule").empty()) << "needs the Prometheus Operator CRD: opt-in";
  EXPECT_FALSE(d.Get("ConfigMap", Full("grafana-dashboard")).IsDefined());

  const Rendering& nd = RenderNonDefault();
  ASSERT_RENDERED(nd);
  auto sms = nd.OfKind("ServiceMonitor");
  ASSERT_EQ(sms.size(), 3u) << "scheduler (extender), device plugin, operator";
  for (const auto& sm : sms) {
    SCOPED_TRACE(Str(sm, {"metadata", "name"}));
    EXPECT_EQ(Str(sm, {"metadata", "labels", "release"}), "kube-prometheus-stack");
    auto sel = StrMap(At(sm, {"spec", "selector", "matchLabels"}));
    bool matches = false;
    for (const auto& svc : nd.OfKind("Service")) {
      if (!IsSubset(sel, StrMap(At(svc, {"metadata", "labels"})))) continue;
      for (const auto& p : At(svc, {"spec", "ports"})) matches |= Str(p, {"name"}) == Str(At(sm, {"spec", "endpoints"})[0], {"port"});
    }
    EXPECT_TRUE(matches) << "selects no Service with the scraped port";
  }
  // Alerts: one group per enabled component, every rule with an expr and a summary.
  auto rules = nd.OfKind("PrometheusRule");
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_EQ(Str(rules[0], {"metadata", "labels", "release"}), "kube-prometheus-stack");
  std::set<std::string> groups;
  for (const auto& g : At(rules[0], {"spec", "groups"})) {
    groups.insert(Str(g, {"name"}));
    for (const auto& rule : At(g, {"rules"})) {
      EXPECT_FALSE(Str(rule, {"alert"}).empty());
      EXPECT_NE(Str(rule, {"expr"}).find("phalanx_"), std::string::npos) << Str(rule, {"alert"});
      EXPECT_FALSE(Str(rule, {"annotations", "summary"}).empty()) << Str(rule, {"alert"});
      if (Str(rule, {"alert"}) == "PhalanxStaleCheckpoints") {
        EXPECT_NE(Str(rule, {"expr"}).find("> 7200"), std::string::npos) << "checkpointAgeSeconds not applied";
      }
      if (Str(rule, {"alert"}) == "PhalanxFragmentedWithPendingGangs") {
        EXPECT_NE(Str(rule, {"expr"}).find("> 0.7)"), std::string::npos) << "fragmentationRatio not applied";
        EXPECT_EQ(Str(rule, {"for"}), "1h");
        // The annotation keeps Prometheus' own template, not Helm's.
        EXPECT_NE(Str(rule, {"annotations", "summary"}).find("{{ $labels.pool }}"), std::string::npos);
      }
    }
  }
  EXPECT_EQ(groups, (std::set<std::string>{"phalanx-scheduling", "phalanx-devices", "phalanx-trainingjobs"}));
  YAML::Node cm = nd.Get("ConfigMap", Full("grafana-dashboard"));
  ASSERT_TRUE(cm.IsDefined());
  EXPECT_EQ(Str(cm, {"metadata", "namespace"}), "monitoring");
  EXPECT_EQ(Str(cm, {"metadata", "labels", "grafana_dashboard"}), "1");
  auto dash = nlohmann::json::parse(Str(cm, {"data", "phalanx.json"}));
  EXPECT_GE(dash.at("panels").size(), 8u);
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
  EXPECT_EQ(docs.size(), r.docs.size() + 1 + crds);
  if (FileExists(SourceDir() + "/helm/phalanx/crds/phalanx.io_trainingjobs.yaml")) {
    EXPECT_EQ(Str(docs[1], {"kind"}), "CustomResourceDefinition");
  }
}

// --- flags against the daemons ---------------------------------------------------------------

// Flags a daemon declares: every add_option/add_flag("--name[,--alias]" in its option sources
// plus core/log's shared --log-format/--v. Read from the sources, so the check never depends on
// which binaries happen to be built.
std::set<std::string> DeclaredFlags(const std::vector<std::string>& files) {
  std::set<std::string> declared;
  const std::regex option(R"re(add_(?:option|flag)(?:_function<[^>]*>)?\(\s*"([^"]+)")re");
  std::vector<std::string> all = files;
  all.push_back("core/log/log_options.cc");
  for (const auto& f : all) {
    const std::string code = ReadFile(SourceDir() + "/" + f);
    EXPECT_FALSE(code.empty()) << f << " is missing";
    for (std::sregex_iterator it(code.begin(), code.end(), option), end; it != end; ++it) {
      std::stringstream names((*it)[1].str());
      for (std::string n; std::getline(names, n, ',');) {
        if (n.rfind("--", 0) == 0) declared.insert(n.substr(2));
      }
    }
  }
  return declared;
}

TEST(DaemonFlagsTest, EveryFlagTheChartPassesIsDeclaredByItsDaemon) {
  struct Daemon { std::string workload_kind, workload, container; std::vector<std::string> sources; };
  const std::vector<Daemon> daemons = {
      {"Deployment", Full("scheduler"), "phalanx-extender", {"extender/main.cc"}},
      {"DaemonSet", Full("device-plugin"), "device-plugin", {"device-plugin/cmd/options.cc"}},
      {"Deployment", Full("operator"), "operator", {"operator/main.cc"}}};
  const std::string configuration = ReadFile(SourceDir() + "/docs/configuration.md");
  for (const auto& cfg : Configs()) {
    SCOPED_TRACE(cfg.name);
    const Rendering& r = cfg.render();
    ASSERT_RENDERED(r);
    for (const auto& d : daemons) {
      SCOPED_TRACE(d.container);
      const std::set<std::string> declared = DeclaredFlags(d.sources);
      ASSERT_TRUE(declared.count("metrics-addr") && declared.count("log-format")) << "option scan found nothing";
      auto flags = Flags(Container(r.Get(d.workload_kind, d.workload), d.container));
      ASSERT_FALSE(flags.empty());
      for (const auto& [flag, value] : flags) {
        EXPECT_TRUE(declared.count(flag)) << "the chart passes --" << flag << " but " << d.sources.front()
                                          << " does not declare it";
        EXPECT_NE(configuration.find("--" + flag), std::string::npos)
            << "docs/configuration.md does not mention --" << flag << " (" << d.container << ")";
      }
    }
  }
}

// --- the operations docs name real objects and commands -----------------------------------------

// docs/operations.md, troubleshooting.md and install.md: every `deploy/`, `svc/`, `ds/` names an
// object the chart renders (default values), every `svc/X A:B` port-forward hits a Service port,
// every Lease named is one the chart's RBAC lets its component renew, every component label
// selects rendered objects, and every `phalanx <command> --flag` exists in the CLI.
TEST(DocsTest, OperationsDocsNameRenderedObjectsAndRealCommands) {
  const Rendering& r = Render();
  ASSERT_RENDERED(r);
  const std::map<std::string, std::string> kinds = {{"deploy", "Deployment"}, {"svc", "Service"}, {"ds", "DaemonSet"}};
  std::set<std::string> renewable_leases, components;
  for (const auto& role : r.OfKind("Role")) {
    for (const auto& rule : At(role, {"rules"})) {
      bool leases = false;
      for (const auto& res : rule["resources"]) leases |= res.as<std::string>() == "leases";
      if (leases && rule["resourceNames"]) {
        for (const auto& n : rule["resourceNames"]) renewable_leases.insert(n.as<std::string>());
      }
    }
  }
  for (const auto& d : r.docs) components.insert(Str(d, {"metadata", "labels", "app.kubernetes.io/component"}));
  std::string cli;
  for (const char* f : {"cli/explain_command.cc", "cli/topology_command.cc"}) cli += ReadFile(SourceDir() + "/" + f);
  ASSERT_FALSE(cli.empty());

  const std::regex object(R"re((?:^|[\s`])(deploy|svc|ds)/([a-z0-9-]+)(?: (\d+):(\d+))?)re");
  const std::regex lease(R"re(get lease ((?:phalanx-[a-z]+ ?)+))re");
  const std::regex component(R"re(app\.kubernetes\.io/component=([a-z-]+))re");
  const std::regex command(R"re(phalanx (explain|topology)\b([^\n`|#]*))re");
  const std::regex flag(R"re(\s(--[a-z-]+))re");
  int objects = 0;
  for (const char* doc : {"docs/operations.md", "docs/troubleshooting.md", "docs/install.md"}) {
    SCOPED_TRACE(doc);
    const std::string text = ReadFile(SourceDir() + "/" + doc);
    ASSERT_FALSE(text.empty());
    for (std::sregex_iterator it(text.begin(), text.end(), object), end; it != end; ++it) {
      const std::string kind = kinds.at((*it)[1]), name = (*it)[2];
      YAML::Node o = r.Get(kind, name);
      ++objects;
      EXPECT_TRUE(o.IsDefined()) << (*it)[0] << ": the chart renders no " << kind << " " << name;
      if (o.IsDefined() && kind == "Service" && (*it)[4].matched) {
        bool port = false;
        for (const auto& p : At(o, {"spec", "ports"})) port |= Str(p, {"port"}) == (*it)[4].str();
        EXPECT_TRUE(port) << (*it)[0] << ": Service " << name << " has no port " << (*it)[4];
      }
    }
    for (std::sregex_iterator it(text.begin(), text.end(), lease), end; it != end; ++it) {
      std::stringstream names((*it)[1].str());
      for (std::string n; names >> n;) EXPECT_TRUE(renewable_leases.count(n)) << "Lease " << n << " is not in the chart's RBAC";
    }
    for (std::sregex_iterator it(text.begin(), text.end(), component), end; it != end; ++it) {
      EXPECT_TRUE(components.count((*it)[1])) << "no rendered object has component " << (*it)[1];
    }
    for (std::sregex_iterator it(text.begin(), text.end(), command), end; it != end; ++it) {
      EXPECT_NE(cli.find(".name = \"" + (*it)[1].str() + "\""), std::string::npos) << "no CLI command " << (*it)[1];
      const std::string rest = (*it)[2];
      for (std::sregex_iterator f(rest.begin(), rest.end(), flag), fend; f != fend; ++f) {
        EXPECT_NE(cli.find("\"" + (*f)[1].str() + "\""), std::string::npos) << (*it)[0] << ": no flag " << (*f)[1];
      }
    }
  }
  EXPECT_GE(objects, 8);
  EXPECT_EQ(renewable_leases, (std::set<std::string>{"phalanx-scheduler", "phalanx-extender", "phalanx-operator"}));
}

}  // namespace
}  // namespace phalanx::chart_test
