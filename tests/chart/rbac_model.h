// RBAC evaluation over rendered objects, as the API server's authorizer does it: the rules of
// every Role/ClusterRole bound to a ServiceAccount, each valid cluster-wide (ClusterRoleBinding)
// or in one namespace (RoleBinding). Roles not rendered by the chart (system:*) are reported by
// name so tests can check they are the expected stock roles.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "tests/chart/rendering.h"

namespace phalanx::chart_test {

struct RbacRule {
  std::set<std::string> groups, resources, verbs, names;  // names empty = any object
  std::string source;  // "ClusterRole/x" for messages
};

struct Grant {
  std::string ns;  // "" = cluster-wide
  RbacRule rule;
};

struct ServiceAccountGrants {
  std::vector<Grant> grants;
  std::set<std::string> external_roles;  // "ClusterRole/system:kube-scheduler", "kube-system/Role/..."
  std::vector<std::string> errors;        // dangling roleRefs etc.
};

ServiceAccountGrants GrantsFor(const Rendering& r, const std::string& sa_namespace,
                               const std::string& sa_name);

// Allowed in namespace `ns` ("" = cluster-wide request: needs a cluster-wide grant).
bool Allows(const std::vector<Grant>& grants, const std::string& verb, const std::string& group,
            const std::string& resource, const std::string& ns, const std::string& name);

// A request row of docs/api-requests.md.
struct ApiRequest {
  std::string component;  // kube-scheduler | extender | device-plugin | operator
  std::vector<std::string> verbs;
  std::string group;      // "" = core
  std::string resource;   // may include a subresource: pods/binding
  std::string scope;      // cluster | release | watched
  std::string name;       // "" = any
  int line = 0;
};

// Parses the request table; `error` names the first malformed row.
std::vector<ApiRequest> ParseApiRequests(const std::string& markdown, std::string* error);

}  // namespace phalanx::chart_test
