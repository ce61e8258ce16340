// The rendered components against their contracts (docs/architecture.md, the daemons' flags): the
// scheduler profile and its extender, the PriorityClass tiers, the device plugin, the
// operator and the monitoring toggles.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <regex>
#include <set>

#include "tests/chart/render_checks.h"

namespace phalanx::chart_test {
namespace {

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
    // --kubelet-dir is kubelet's root and not mounted; --device-plugin-dir (kubelet's registration
    // directory, which kubelet 1.26 keeps at /var/lib/kubelet/device-plugins whatever its root) is,
    // at the same path.
    const std::string plugin_dir = flags["device-plugin-dir"];
    ASSERT_FALSE(plugin_dir.empty());
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

}  // namespace
}  // namespace phalanx::chart_test
