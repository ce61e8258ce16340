// The chart's RBAC against docs/api-requests.md: every request a component makes is allowed,
// nothing beyond them is granted.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "tests/chart/rbac_model.h"

#include "tests/chart/render_checks.h"

namespace phalanx::chart_test {
namespace {

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

// The device plugin's roles split by what a node's own identity may do (issue 24 §4): with
// devicePlugin.rbac.podWrites=false only patch on nodes and list/watch on pods remain; Events and
// pod patches come with the second role (the default).
TEST(RbacTest, DevicePluginNodeScopedRoleStandsAlone) {
  const Rendering& r = Render({"--set", "devicePlugin.rbac.podWrites=false"});
  ASSERT_RENDERED(r);
  auto node_only = GrantsFor(r, kNamespace, Full("device-plugin")).grants;
  EXPECT_TRUE(Allows(node_only, "patch", "", "nodes", "", ""));
  EXPECT_TRUE(Allows(node_only, "list", "", "pods", "", ""));
  EXPECT_TRUE(Allows(node_only, "watch", "", "pods", "", ""));
  EXPECT_FALSE(Allows(node_only, "patch", "", "pods", "", ""));
  EXPECT_FALSE(Allows(node_only, "create", "events.k8s.io", "events", "default", ""));
  const Rendering& d = RenderDefault();
  ASSERT_RENDERED(d);
  auto all = GrantsFor(d, kNamespace, Full("device-plugin")).grants;
  EXPECT_TRUE(Allows(all, "patch", "", "pods", "", ""));
  EXPECT_TRUE(Allows(all, "create", "events.k8s.io", "events", "default", ""));
}

}  // namespace
}  // namespace phalanx::chart_test
