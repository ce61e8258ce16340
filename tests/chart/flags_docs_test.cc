// The chart and the docs against the code: every flag the chart passes is declared by its
// daemon and documented; the operations docs name rendered objects and real commands.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "tests/chart/render_checks.h"

namespace phalanx::chart_test {
namespace {

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
