// Chart checks that need no helm binary: files parse, contracts in values.yaml, examples,
// Dockerfiles, the CRD copy, the dashboard and the API-request table.
#include <dirent.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <regex>
#include <set>

#include "tests/chart/chart_env.h"
#include "tests/chart/rbac_model.h"
#include "tests/chart/rendering.h"

namespace phalanx::chart_test {
namespace {

std::vector<std::string> YamlFilesIn(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 5 && (n.ends_with(".yaml") || n.ends_with(".yml"))) out.push_back(dir + "/" + n);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

YAML::Node LoadValues() { return YAML::LoadFile(SourceDir() + "/helm/phalanx/values.yaml"); }

TEST(ChartFilesTest, ChartYamlIsApiV2WithSupportedKubeVersion) {
  YAML::Node chart = YAML::LoadFile(SourceDir() + "/helm/phalanx/Chart.yaml");
  EXPECT_EQ(Str(chart, {"apiVersion"}), "v2");
  EXPECT_EQ(Str(chart, {"name"}), "phalanx");
  EXPECT_EQ(Str(chart, {"type"}), "application");
  EXPECT_FALSE(Str(chart, {"version"}).empty());
  EXPECT_FALSE(Str(chart, {"appVersion"}).empty());
  // Scheduling gates are on by default from 1.27 (docs/architecture.md §2.1).
  EXPECT_EQ(Str(chart, {"kubeVersion"}), ">=1.27.0-0");
}

TEST(ChartFilesTest, EveryManifestIsWellFormedYamlWithApiVersionAndKind) {
  std::vector<std::string> files;
  for (const char* dir : {"/manifests", "/manifests/examples", "/manifests/crds", "/helm/phalanx/crds"}) {
    for (auto& f : YamlFilesIn(SourceDir() + dir)) files.push_back(f);
  }
  ASSERT_GE(files.size(), 5u) << "manifests/ and manifests/examples/ should hold the rendered install and examples";
  for (const auto& f : files) {
    SCOPED_TRACE(f);
    std::string error;
    auto docs = ParseDocs(ReadFile(f), &error);
    ASSERT_TRUE(error.empty()) << error;
    ASSERT_FALSE(docs.empty()) << "no YAML documents";
    for (const auto& d : docs) {
      EXPECT_FALSE(Str(d, {"apiVersion"}).empty()) << "a document without apiVersion";
      EXPECT_FALSE(Str(d, {"kind"}).empty()) << "a document without kind";
      EXPECT_FALSE(Str(d, {"metadata", "name"}).empty()) << "a document without metadata.name";
    }
  }
}

TEST(ChartFilesTest, ValuesFilesAreWellFormedYaml) {
  std::vector<std::string> files = {SourceDir() + "/helm/phalanx/values.yaml"};
  for (auto& f : YamlFilesIn(SourceDir() + "/helm/phalanx/ci")) files.push_back(f);
  for (const auto& f : files) {
    SCOPED_TRACE(f);
    EXPECT_NO_THROW(YAML::LoadFile(f));
  }
}

TEST(ChartFilesTest, ValuesSchemaIsJsonAndClosedAtTheTop) {
  auto schema = nlohmann::json::parse(ReadFile(SourceDir() + "/helm/phalanx/values.schema.json"));
  EXPECT_EQ(schema.value("additionalProperties", true), false) << "typos in top-level keys must fail";
  // Every top-level key of values.yaml is described by the schema, and vice versa.
  std::set<std::string> in_values, in_schema;
  for (const auto& kv : LoadValues()) in_values.insert(kv.first.as<std::string>());
  for (const auto& [k, v] : schema.at("properties").items()) in_schema.insert(k);
  EXPECT_EQ(in_values, in_schema);
  EXPECT_EQ(schema["properties"]["scheduler"]["properties"]["extender"]["properties"]["weight"]["minimum"], 12);
}

TEST(ChartContractTest, DefaultValuesCarryTheDesignContracts) {
  YAML::Node v = LoadValues();
  // docs/architecture.md §2.1 tiers, exactly.
  std::vector<std::pair<std::string, int64_t>> want = {
      {"phalanx-critical", 1000000}, {"phalanx-high", 10000}, {"phalanx-standard", 1000}, {"phalanx-spot", 100}};
  YAML::Node tiers = At(v, {"priorityClasses", "tiers"});
  ASSERT_TRUE(tiers.IsSequence());
  ASSERT_EQ(tiers.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(tiers[i]["name"].as<std::string>(), want[i].first);
    EXPECT_EQ(tiers[i]["value"].as<int64_t>(), want[i].second);
  }
  EXPECT_GE(At(v, {"scheduler", "extender", "weight"}).as<int>(), 12);
  // Held binds wait for the whole gang: the default gang timeout (120 s) + 10 s margin must fit.
  EXPECT_GE(At(v, {"scheduler", "extender", "httpTimeoutSeconds"}).as<int>(), 130);
  EXPECT_EQ(Str(v, {"scheduler", "schedulerName"}), "phalanx-scheduler");
  EXPECT_NE(Str(v, {"scheduler", "leaderElection", "leaseName"}), "kube-scheduler");
  std::set<std::string> managed;
  for (const auto& r : At(v, {"scheduler", "extender", "managedResources"})) managed.insert(r.as<std::string>());
  EXPECT_TRUE(managed.count("nvidia.com/gpu"));
  EXPECT_TRUE(managed.count("nvidia.com/mig-1g.10gb")) << "MIG resources (strategy mixed) must be managed too";
  // The fake A100 machine's profiles (tests/fakes/nvml/machines/a100-mig.json) are all covered.
  for (const char* p : {"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}) {
    EXPECT_TRUE(managed.count(std::string("nvidia.com/mig-") + p)) << p;
  }
  EXPECT_EQ(Str(v, {"devicePlugin", "kubeletDir"}), "/var/lib/kubelet");
  EXPECT_EQ(Str(v, {"devicePlugin", "podResourcesDir"}), "/var/lib/kubelet/pod-resources");
  EXPECT_EQ(Str(v, {"devicePlugin", "priorityClassName"}), "system-node-critical");
  EXPECT_EQ(Str(v, {"devicePlugin", "config", "version"}), "v1");
  EXPECT_EQ(Str(v, {"metrics", "serviceMonitor", "enabled"}), "false");
  EXPECT_EQ(Str(v, {"metrics", "grafanaDashboard", "enabled"}), "false");
}

TEST(ChartContractTest, GrafanaDashboardShowsWhatOperatorsWatch) {
  auto dash = nlohmann::json::parse(ReadFile(SourceDir() + "/helm/phalanx/dashboards/phalanx.json"));
  std::string titles;
  std::set<int> ids;
  for (const auto& p : dash.at("panels")) {
    titles += p.at("title").get<std::string>() + "\n";
    EXPECT_TRUE(ids.insert(p.at("id").get<int>()).second) << "duplicate panel id";
    for (const auto& t : p.at("targets")) {
      EXPECT_NE(t.at("expr").get<std::string>().find("phalanx_"), std::string::npos)
          << "panel " << p.at("title") << " queries a non-Phalanx metric";
    }
  }
  // Issue 7's list; the fragmentation and per-pool allocation panels read the extender's ledger gauges.
  for (const char* want : {"Gang wait", "Held binds", "GPU allocation", "GPU allocation by pool", "GPU fragmentation",
                           "Preemptions", "Lost GPU-hours", "Device health"}) {
    EXPECT_NE(titles.find(want), std::string::npos) << "no panel about: " << want;
  }
  EXPECT_EQ(dash.at("uid"), "phalanx-overview");
}

// Issue 18: what GPUs did, next to what they were given; shipped in the same ConfigMap.
TEST(ChartContractTest, UtilisationDashboardShowsUseNextToAllocation) {
  auto dash = nlohmann::json::parse(ReadFile(SourceDir() + "/helm/phalanx/dashboards/utilisation.json"));
  std::string titles;
  for (const auto& p : dash.at("panels")) titles += p.at("title").get<std::string>() + "\n";
  for (const char* want : {"Utilisation vs allocation per team", "Idle GPUs"}) {
    EXPECT_NE(titles.find(want), std::string::npos) << "no panel about: " << want;
  }
  EXPECT_NE(ReadFile(SourceDir() + "/helm/phalanx/templates/monitoring/grafana-dashboard.yaml")
                .find("dashboards/utilisation.json"),
            std::string::npos)
      << "the utilisation dashboard is not shipped by the chart";
}

TEST(ChartContractTest, ChartCrdIsAByteIdenticalCopyOfTheManifest) {
  const std::string manifest = SourceDir() + "/manifests/crds/phalanx.io_trainingjobs.yaml";
  const std::string copy = SourceDir() + "/helm/phalanx/crds/phalanx.io_trainingjobs.yaml";
  if (!FileExists(manifest)) {
    GTEST_SKIP() << manifest << " does not exist yet (written by the operator); the chart ships "
                 << "no CRD until it does. Then: cp it to " << copy;
  }
  ASSERT_TRUE(FileExists(copy)) << "the chart must ship the TrainingJob CRD: cp " << manifest << " " << copy;
  EXPECT_TRUE(ReadFile(manifest) == ReadFile(copy))
      << copy << " differs from " << manifest << "; copy it again";
}

TEST(ChartContractTest, ChartShipsEveryCrdOfManifestsCrdsByteIdentical) {
  const auto manifests = YamlFilesIn(SourceDir() + "/manifests/crds");
  ASSERT_GE(manifests.size(), 2u);  // TrainingJob, GpuQueue
  for (const std::string& manifest : manifests) {
    const std::string copy = SourceDir() + "/helm/phalanx/crds/" + manifest.substr(manifest.find_last_of('/') + 1);
    ASSERT_TRUE(FileExists(copy)) << "the chart must ship " << manifest << ": cp it to " << copy;
    EXPECT_TRUE(ReadFile(manifest) == ReadFile(copy)) << copy << " differs from " << manifest << "; copy it again";
  }
  EXPECT_EQ(YamlFilesIn(SourceDir() + "/helm/phalanx/crds").size(), manifests.size());
}

TEST(ChartContractTest, ApiRequestTableParsesAndNamesEveryComponent) {
  std::string error;
  auto reqs = ParseApiRequests(ReadFile(SourceDir() + "/docs/api-requests.md"), &error);
  ASSERT_TRUE(error.empty()) << error;
  std::set<std::string> components;
  for (const auto& r : reqs) components.insert(r.component);
  EXPECT_EQ(components,
            (std::set<std::string>{"kube-scheduler", "extender", "device-plugin", "operator", "crd-upgrade"}));
  // Spot checks of requests the design cannot work without.
  auto has = [&](const std::string& c, const std::string& verb, const std::string& res) {
    return std::any_of(reqs.begin(), reqs.end(), [&](const ApiRequest& r) {
      return r.component == c && r.resource == res &&
             std::find(r.verbs.begin(), r.verbs.end(), verb) != r.verbs.end();
    });
  };
  EXPECT_TRUE(has("extender", "create", "pods/binding"));
  EXPECT_TRUE(has("extender", "update", "leases"));
  EXPECT_TRUE(has("device-plugin", "patch", "nodes"));
  EXPECT_TRUE(has("operator", "update", "trainingjobs/status"));
  EXPECT_TRUE(has("operator", "create", "tokenreviews"));
}

// Leaf value paths of values.yaml ("scheduler.extender.weight"); free-form maps are leaves.
void LeafPaths(const YAML::Node& n, const std::string& prefix, std::vector<std::string>* out) {
  static const std::set<std::string> kFreeForm = {"resources", "nodeSelector", "tolerations", "affinity",
                                                  "podAnnotations", "commonLabels", "labels", "updateStrategy"};
  for (const auto& kv : n) {
    const std::string key = kv.first.as<std::string>();
    const std::string path = prefix.empty() ? key : prefix + "." + key;
    if (kv.second.IsMap() && kv.second.size() > 0 && !kFreeForm.count(key)) {
      LeafPaths(kv.second, path, out);
    } else {
      out->push_back(path);
    }
  }
}

TEST(ChartDocsTest, ConfigurationReferenceDocumentsEveryValue) {
  const std::string doc = ReadFile(SourceDir() + "/docs/configuration.md");
  ASSERT_FALSE(doc.empty());
  std::vector<std::string> paths;
  LeafPaths(LoadValues(), "", &paths);
  EXPECT_GE(paths.size(), 60u);
  for (const auto& p : paths) {
    EXPECT_NE(doc.find("`" + p + "`"), std::string::npos) << "docs/configuration.md does not document " << p;
  }
}

// --- examples -----------------------------------------------------------------------------

std::vector<YAML::Node> PodSpecsOf(const std::vector<YAML::Node>& docs) {
  std::vector<YAML::Node> specs;
  for (const auto& d : docs) {
    std::string kind = Str(d, {"kind"});
    if (kind == "Pod") specs.push_back(At(d, {"spec"}));
    if (kind == "Deployment" || kind == "StatefulSet" || kind == "Job") specs.push_back(At(d, {"spec", "template", "spec"}));
  }
  return specs;
}

std::set<std::string> TierNames() {
  std::set<std::string> out;
  for (const auto& t : At(LoadValues(), {"priorityClasses", "tiers"})) out.insert(t["name"].as<std::string>());
  return out;
}

TEST(ExamplesTest, EveryExamplePodUsesThePhalanxProfileATierAndAGpu) {
  auto files = YamlFilesIn(SourceDir() + "/manifests/examples");
  auto tiers = TierNames();
  int pods = 0;
  for (const auto& f : files) {
    if (f.find("/trainingjob-") != std::string::npos) continue;  // TrainingJobs: operator's examples
    SCOPED_TRACE(f);
    for (const auto& spec : PodSpecsOf(ParseDocs(ReadFile(f), nullptr))) {
      ++pods;
      EXPECT_EQ(Str(spec, {"schedulerName"}), "phalanx-scheduler");
      EXPECT_TRUE(tiers.count(Str(spec, {"priorityClassName"}))) << Str(spec, {"priorityClassName"});
      bool gpu = false;
      for (const auto& c : At(spec, {"containers"})) {
        for (const auto& kv : At(c, {"resources", "limits"})) {
          gpu |= kv.first.as<std::string>().rfind("nvidia.com/", 0) == 0;
        }
      }
      EXPECT_TRUE(gpu) << "the extender only sees pods that request a managed GPU resource";
    }
  }
  EXPECT_GE(pods, 6);
}

TEST(ExamplesTest, GangExampleIsFourPodsOfEightGpusWithGangKeysAndGates) {
  auto docs = ParseDocs(ReadFile(SourceDir() + "/manifests/examples/gang-4x8-pods.yaml"), nullptr);
  int members = 0;
  for (const auto& d : docs) {
    if (Str(d, {"kind"}) != "Pod") continue;
    ++members;
    EXPECT_EQ(Str(d, {"metadata", "labels", "phalanx.io/gang"}), "llama-pretrain");
    EXPECT_EQ(Str(d, {"metadata", "annotations", "phalanx.io/gang-min-members"}), "4");
    YAML::Node gates = At(d, {"spec", "schedulingGates"});
    ASSERT_TRUE(gates.IsSequence() && gates.size() == 1);
    EXPECT_EQ(Str(gates[0], {"name"}), "phalanx.io/gang");
    YAML::Node c0 = At(d, {"spec", "containers"})[0];
    EXPECT_EQ(Str(c0, {"resources", "limits", "nvidia.com/gpu"}), "8");
  }
  EXPECT_EQ(members, 4);
}

TEST(ExamplesTest, MigAndInferenceExamplesUseTheirResourcesAndTiers) {
  auto mig = ParseDocs(ReadFile(SourceDir() + "/manifests/examples/mig-pod.yaml"), nullptr);
  ASSERT_EQ(mig.size(), 1u);
  YAML::Node limits = At(mig[0], {"spec", "containers"})[0]["resources"]["limits"];
  EXPECT_EQ(limits["nvidia.com/mig-1g.10gb"].as<int>(), 1);
  auto inf = ParseDocs(ReadFile(SourceDir() + "/manifests/examples/inference-critical.yaml"), nullptr);
  ASSERT_EQ(inf.size(), 1u);
  EXPECT_EQ(Str(inf[0], {"spec", "template", "spec", "priorityClassName"}), "phalanx-critical");
}

// --- images -------------------------------------------------------------------------------

TEST(DockerfilesTest, EachDaemonHasAMultiStageBookwormImageMatchingTheChart) {
  YAML::Node v = LoadValues();
  struct Daemon { std::string name, values_key; bool root_ok; };
  for (const auto& d : {Daemon{"phalanx-extender", "extender", false},
                        Daemon{"phalanx-device-plugin", "devicePlugin", true},
                        Daemon{"phalanx-operator", "operator", false}}) {
    SCOPED_TRACE(d.name);
    std::string path = SourceDir() + "/docker/" + d.name + "/Dockerfile";
    std::string text = ReadFile(path);
    ASSERT_FALSE(text.empty()) << path << " missing";
    size_t froms = 0;
    for (size_t p = 0; (p = text.find("\nFROM ", p)) != std::string::npos; ++p) ++froms;
    if (text.rfind("FROM ", 0) == 0) ++froms;
    EXPECT_GE(froms, 2u) << "multi-stage: a build stage and a slim runtime stage";
    EXPECT_NE(text.find("FROM debian:bookworm"), std::string::npos);
    EXPECT_NE(text.find("--target " + d.name), std::string::npos) << "builds only its own target";
    EXPECT_NE(text.find("ENTRYPOINT [\"/usr/local/bin/" + d.name + "\"]"), std::string::npos);
    if (!d.root_ok) {
      EXPECT_NE(text.find("USER 65532"), std::string::npos) << "runs as non-root";
    }
    std::string repo = Str(v, {d.values_key.c_str(), "image", "repository"});
    EXPECT_TRUE(repo.ends_with("/" + d.name)) << "values " << d.values_key << ".image.repository=" << repo;
  }
}

// --- metric names ----------------------------------------------------------------------------

// Every "phalanx_*" string literal in the daemons' and core's sources: metric names are only ever
// registered as literals (core/metrics Registry::Add*), so this is the set a scrape can return.
std::set<std::string> MetricNamesInCode() {
  std::set<std::string> names;
  const std::regex literal(R"re("(phalanx_[a-z0-9_]+)")re");
  for (const char* dir : {"extender", "device-plugin", "operator", "core"}) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(SourceDir() + "/" + dir)) {
      const std::string path = e.path().string();
      if (!e.is_regular_file() || !(path.ends_with(".cc") || path.ends_with(".h"))) continue;
      const std::string code = ReadFile(path);
      for (std::sregex_iterator it(code.begin(), code.end(), literal), end; it != end; ++it) names.insert((*it)[1]);
    }
  }
  return names;
}

// Metric names a PromQL text or manifest mentions (series suffixes of histograms removed).
std::set<std::string> MetricNamesUsedIn(const std::string& text) {
  std::set<std::string> used;
  const std::regex name(R"re(\bphalanx_[a-z0-9_]+)re");
  for (std::sregex_iterator it(text.begin(), text.end(), name), end; it != end; ++it) used.insert(it->str());
  return used;
}

TEST(MetricsTest, DashboardMonitoringTemplatesAndDocsUseOnlyExportedMetrics) {
  const std::set<std::string> code = MetricNamesInCode();
  ASSERT_TRUE(code.count("phalanx_trainingjob_phase")) << "the source scan found no operator metrics";
  std::vector<std::string> files = {SourceDir() + "/helm/phalanx/dashboards/phalanx.json",
                                    SourceDir() + "/helm/phalanx/dashboards/utilisation.json"};
  for (const auto& f : YamlFilesIn(SourceDir() + "/helm/phalanx/templates/monitoring")) files.push_back(f);
  // The suggested alerts and the metric tables live in the docs.
  for (const char* doc : {"operations.md", "troubleshooting.md"}) {
    files.push_back(SourceDir() + "/docs/" + doc);
  }
  size_t checked = 0;
  for (const auto& f : files) {
    const std::string text = ReadFile(f);
    EXPECT_FALSE(text.empty()) << f << " is missing";
    for (const auto& used : MetricNamesUsedIn(text)) {
      if (used.ends_with("_")) continue;  // a prefix in a grep pattern, e.g. '^phalanx_trainingjob_(phase|gpus)'
      std::string base = used;
      for (const char* suffix : {"_bucket", "_sum", "_count"}) {
        if (!code.count(base) && base.ends_with(suffix)) base = base.substr(0, base.size() - strlen(suffix));
      }
      ++checked;
      EXPECT_TRUE(code.count(base)) << f << " uses " << used << ", which no daemon registers";
    }
  }
  EXPECT_GT(checked, 10u);
}

TEST(MetricsTest, IssueSixOperatorMetricNamesAreRegistered) {
  const std::set<std::string> code = MetricNamesInCode();
  for (const char* want : {"phalanx_trainingjob_phase", "phalanx_trainingjob_restarts_total",
                           "phalanx_trainingjob_lost_gpu_seconds_total", "phalanx_trainingjob_checkpoint_age_seconds",
                           "phalanx_trainingjob_time_to_restart_seconds", "phalanx_operator_reconcile_duration_seconds",
                           "phalanx_operator_reconcile_total", "phalanx_operator_workqueue_depth"}) {
    EXPECT_TRUE(code.count(want)) << want;
  }
}

// --- links between the user docs ------------------------------------------------------------

// GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens.
std::string Slug(const std::string& heading) {
  std::string out;
  for (char c : heading) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) {
      out += static_cast<char>(std::tolower(u));
    } else if (c == ' ' || c == '-') {
      out += '-';
    } else if (u >= 0x80) {
      out += c;  // keep UTF-8 as is
    }
  }
  return out;
}

TEST(ChartDocsTest, LinksBetweenDocsPointAtExistingFilesAndHeadings) {
  const std::regex link(R"re(\]\(([a-z-]+\.md)(?:#([a-z0-9-]+))?\))re");
  const std::regex heading(R"re((?:^|\n)#+ ([^\n]+))re");
  int checked = 0;
  for (const char* doc : {"install.md", "configuration.md", "operations.md", "troubleshooting.md", "user-guide.md",
                          "operator.md", "trainingjob.md", "extender.md", "device-plugin.md"}) {
    SCOPED_TRACE(doc);
    const std::string text = ReadFile(SourceDir() + "/docs/" + doc);
    ASSERT_FALSE(text.empty());
    for (std::sregex_iterator it(text.begin(), text.end(), link), end; it != end; ++it) {
      const std::string target = ReadFile(SourceDir() + "/docs/" + (*it)[1].str());
      ++checked;
      EXPECT_FALSE(target.empty()) << (*it)[0] << ": no docs/" << (*it)[1];
      if (!(*it)[2].matched || target.empty()) continue;
      std::set<std::string> anchors;
      for (std::sregex_iterator h(target.begin(), target.end(), heading), hend; h != hend; ++h) anchors.insert(Slug((*h)[1]));
      EXPECT_TRUE(anchors.count((*it)[2])) << (*it)[0] << ": docs/" << (*it)[1] << " has no heading #" << (*it)[2];
    }
  }
  EXPECT_GE(checked, 10);
}

}  // namespace
}  // namespace phalanx::chart_test
