#include "tests/chart/rbac_model.h"

#include <sstream>

namespace phalanx::chart_test {
namespace {

std::set<std::string> StrSet(const YAML::Node& n) {
  std::set<std::string> out;
  if (n.IsDefined() && n.IsSequence()) {
    for (const auto& v : n) out.insert(v.as<std::string>());
  }
  return out;
}

std::vector<RbacRule> RulesOf(const YAML::Node& role, const std::string& source) {
  std::vector<RbacRule> out;
  YAML::Node rules = At(role, {"rules"});
  if (!rules.IsDefined() || !rules.IsSequence()) return out;
  for (const auto& r : rules) {
    RbacRule rule;
    rule.groups = StrSet(At(r, {"apiGroups"}));
    rule.resources = StrSet(At(r, {"resources"}));
    rule.verbs = StrSet(At(r, {"verbs"}));
    rule.names = StrSet(At(r, {"resourceNames"}));
    rule.source = source;
    out.push_back(rule);
  }
  return out;
}

bool HasSubject(const YAML::Node& binding, const std::string& ns, const std::string& name) {
  YAML::Node subjects = At(binding, {"subjects"});
  if (!subjects.IsDefined() || !subjects.IsSequence()) return false;
  for (const auto& s : subjects) {
    if (Str(s, {"kind"}) == "ServiceAccount" && Str(s, {"name"}) == name &&
        Str(s, {"namespace"}) == ns) {
      return true;
    }
  }
  return false;
}

bool Matches(const std::set<std::string>& set, const std::string& v) {
  return set.count(v) > 0 || set.count("*") > 0;
}

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t`");
  size_t e = s.find_last_not_of(" \t`");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

}  // namespace

ServiceAccountGrants GrantsFor(const Rendering& r, const std::string& sa_namespace,
                               const std::string& sa_name) {
  ServiceAccountGrants out;
  for (const char* kind : {"ClusterRoleBinding", "RoleBinding"}) {
    for (const auto& b : r.OfKind(kind)) {
      if (!HasSubject(b, sa_namespace, sa_name)) continue;
      const bool cluster_wide = std::string(kind) == "ClusterRoleBinding";
      const std::string ns = cluster_wide ? "" : Str(b, {"metadata", "namespace"});
      const std::string ref_kind = Str(b, {"roleRef", "kind"});
      const std::string ref_name = Str(b, {"roleRef", "name"});
      if (cluster_wide && ref_kind != "ClusterRole") {
        out.errors.push_back("ClusterRoleBinding " + Str(b, {"metadata", "name"}) +
                             " refers to a " + ref_kind);
        continue;
      }
      // Undefined until found (a default-constructed Node counts as defined); reset() rebinds.
      YAML::Node role(YAML::NodeType::Undefined);
      if (ref_kind == "ClusterRole") {
        role.reset(r.Get("ClusterRole", ref_name));
      } else {
        for (const auto& cand : r.OfKind("Role")) {
          if (Str(cand, {"metadata", "name"}) == ref_name &&
              Str(cand, {"metadata", "namespace"}) == ns) {
            role.reset(cand);
          }
        }
      }
      if (!role.IsDefined()) {
        if (ref_name.rfind("system:", 0) == 0 || ref_name.rfind("extension-apiserver-", 0) == 0) {
          out.external_roles.insert((cluster_wide ? std::string() : ns + "/") + ref_kind + "/" +
                                    ref_name);
        } else {
          out.errors.push_back(std::string(kind) + " " + Str(b, {"metadata", "name"}) +
                               " refers to " + ref_kind + "/" + ref_name +
                               ", which the chart does not render");
        }
        continue;
      }
      for (auto& rule : RulesOf(role, ref_kind + "/" + ref_name)) {
        out.grants.push_back(Grant{ns, rule});
      }
    }
  }
  return out;
}

bool Allows(const std::vector<Grant>& grants, const std::string& verb, const std::string& group,
            const std::string& resource, const std::string& ns, const std::string& name) {
  for (const auto& g : grants) {
    if (!g.ns.empty() && g.ns != ns) continue;  // namespaced grant, other or cluster-wide request
    const RbacRule& r = g.rule;
    if (!Matches(r.groups, group) || !Matches(r.resources, resource) || !Matches(r.verbs, verb)) {
      continue;
    }
    if (!r.names.empty() && (name.empty() || r.names.count(name) == 0)) continue;
    return true;
  }
  return false;
}

std::vector<ApiRequest> ParseApiRequests(const std::string& markdown, std::string* error) {
  std::vector<ApiRequest> out;
  std::istringstream in(markdown);
  std::string line;
  int lineno = 0;
  bool in_table = false;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.rfind("| component | verbs |", 0) == 0) {
      in_table = true;
      continue;
    }
    if (!in_table) continue;
    if (line.rfind("|---", 0) == 0) continue;
    if (line.rfind("|", 0) != 0) {
      in_table = false;
      continue;
    }
    std::vector<std::string> cells;
    std::istringstream row(line.substr(1));
    for (std::string cell; std::getline(row, cell, '|');) cells.push_back(Trim(cell));
    if (cells.size() < 7) {
      if (error) *error = "docs/api-requests.md:" + std::to_string(lineno) + ": expected 7 cells";
      return {};
    }
    ApiRequest req;
    req.component = cells[0];
    std::istringstream verbs(cells[1]);
    for (std::string v; std::getline(verbs, v, ',');) req.verbs.push_back(Trim(v));
    req.group = cells[2] == "core" ? "" : cells[2];
    req.resource = cells[3];
    req.scope = cells[4];
    req.name = cells[5] == "-" ? "" : cells[5];
    req.line = lineno;
    if (req.scope != "cluster" && req.scope != "release" && req.scope != "watched") {
      if (error) *error = "docs/api-requests.md:" + std::to_string(lineno) + ": bad scope " + req.scope;
      return {};
    }
    out.push_back(req);
  }
  if (out.empty() && error) *error = "docs/api-requests.md: no request table found";
  return out;
}

}  // namespace phalanx::chart_test
