// Issue 27 §5: every daemon the chart runs has bounded memory (a memory limit) and runs with the
// least it needs: non-root with a read-only root filesystem and no capabilities, except the device
// plugin, which runs as root (the kubelet's device-plugin and pod-resources directories are
// root-owned) but unprivileged, with no capabilities and only the host paths it uses
// (docs/hardening.md §2, docs/install.md).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "tests/chart/render_checks.h"

namespace phalanx::chart_test {
namespace {

std::vector<YAML::Node> Workloads(const Rendering& r) {
  std::vector<YAML::Node> out = r.OfKind("Deployment");
  for (auto& ds : r.OfKind("DaemonSet")) out.push_back(ds);
  return out;
}

bool IsDevicePlugin(const YAML::Node& workload) { return Str(workload, {"kind"}) == "DaemonSet"; }

TEST(ChartSecurityTest, EveryContainerHasRequestsAMemoryLimitAndNoPrivileges) {
  for (const auto& cfg : Configs()) {
    SCOPED_TRACE(cfg.name);
    const Rendering& r = cfg.render();
    ASSERT_RENDERED(r);
    ASSERT_EQ(Workloads(r).size(), 3u);  // operator, scheduler (kube-scheduler + extender), device plugin
    for (const auto& w : Workloads(r)) {
      SCOPED_TRACE(Str(w, {"metadata", "name"}));
      const YAML::Node pod = At(w, {"spec", "template", "spec"});
      EXPECT_NE(Str(pod, {"hostNetwork"}), "true");
      EXPECT_NE(Str(pod, {"hostPID"}), "true");
      EXPECT_NE(Str(pod, {"hostIPC"}), "true");
      for (const char* list : {"containers", "initContainers"}) {
        for (const auto& c : At(pod, {list})) {
          SCOPED_TRACE(Str(c, {"name"}));
          EXPECT_FALSE(Str(c, {"resources", "requests", "cpu"}).empty()) << "no CPU request";
          EXPECT_FALSE(Str(c, {"resources", "requests", "memory"}).empty()) << "no memory request";
          EXPECT_FALSE(Str(c, {"resources", "limits", "memory"}).empty()) << "no memory limit: unbounded memory";
          EXPECT_EQ(Str(c, {"securityContext", "allowPrivilegeEscalation"}), "false");
          EXPECT_EQ(Str(c, {"securityContext", "readOnlyRootFilesystem"}), "true");
          EXPECT_NE(Str(c, {"securityContext", "privileged"}), "true");
          EXPECT_EQ(Seq(At(c, {"securityContext", "capabilities", "drop"})), std::vector<std::string>{"ALL"});
          EXPECT_FALSE(At(c, {"securityContext", "capabilities", "add"}).IsDefined()) << "capabilities added";
          const std::string seccomp = Str(c, {"securityContext", "seccompProfile", "type"});
          EXPECT_EQ(seccomp.empty() ? Str(pod, {"securityContext", "seccompProfile", "type"}) : seccomp,
                    "RuntimeDefault");
          if (IsDevicePlugin(w)) continue;
          // Non-root: at the pod or the container level, with a non-zero uid.
          const std::string non_root = Str(c, {"securityContext", "runAsNonRoot"});
          EXPECT_EQ(non_root.empty() ? Str(pod, {"securityContext", "runAsNonRoot"}) : non_root, "true");
          const std::string uid = Str(c, {"securityContext", "runAsUser"});
          const std::string pod_uid = Str(pod, {"securityContext", "runAsUser"});
          EXPECT_NE(uid.empty() ? pod_uid : uid, "0");
        }
      }
    }
  }
}

// What the device plugin keeps, and only that: root (for the root-owned kubelet directories), the
// device-plugin directory read-write (its socket), pod-resources read-only (kubelet's socket), and
// its per-node lock directory.
TEST(ChartSecurityTest, DevicePluginMountsOnlyTheHostPathsItUses) {
  for (const auto& cfg : Configs()) {
    SCOPED_TRACE(cfg.name);
    const Rendering& r = cfg.render();
    ASSERT_RENDERED(r);
    for (const auto& w : r.OfKind("DaemonSet")) {
      const YAML::Node pod = At(w, {"spec", "template", "spec"});
      std::map<std::string, std::string> host_paths;  // volume -> host path
      for (const auto& v : At(pod, {"volumes"})) {
        if (At(v, {"hostPath"}).IsDefined()) host_paths[Str(v, {"name"})] = Str(v, {"hostPath", "path"});
      }
      EXPECT_EQ(host_paths.size(), 3u);
      const YAML::Node c = Container(w, "device-plugin");
      auto flags = Flags(c);
      std::set<std::string> allowed = {flags["device-plugin-dir"],
                                       flags["pod-resources-socket"].substr(0, flags["pod-resources-socket"].rfind('/')),
                                       flags["lock-file"].substr(0, flags["lock-file"].rfind('/'))};
      for (const auto& [volume, path] : host_paths) {
        EXPECT_TRUE(allowed.count(path)) << "host path " << path << " (volume " << volume << ") is not one the plugin uses";
        EXPECT_NE(path, "/") << volume;
        EXPECT_NE(path, flags["kubelet-dir"]) << "kubelet's whole root must not be mounted";
      }
      for (const auto& m : At(c, {"volumeMounts"})) {
        const std::string volume = Str(m, {"name"});
        if (!host_paths.count(volume)) continue;
        if (host_paths[volume] + "/kubelet.sock" == flags["pod-resources-socket"]) {
          EXPECT_EQ(Str(m, {"readOnly"}), "true") << "pod-resources must be mounted read-only";
        }
      }
    }
  }
}

}  // namespace
}  // namespace phalanx::chart_test
