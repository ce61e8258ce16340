// The TrainingJob CRD (manifests/crds/phalanx.io_trainingjobs.yaml) against issue 6 and docs/architecture.md
// §2.4: names (short name tj, category all), subresources (status, scale), printer columns,
// the validation rules, a closed spec schema (unknown fields rejected), and a status schema
// that declares every field the operator writes (the API server prunes undeclared fields, which
// would silently drop checkpoint records and restart bookkeeping).
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "operator/api/training_job_codec.h"

namespace phalanx::op {
namespace {

YAML::Node Crd() { return YAML::LoadFile(std::string(PHALANX_TEST_SOURCE_DIR) + "/manifests/crds/phalanx.io_trainingjobs.yaml"); }

YAML::Node Version() {
  YAML::Node crd = Crd();
  for (const auto& v : crd["spec"]["versions"]) {
    if (v["name"].as<std::string>() == "v1alpha1") return v;
  }
  return YAML::Node();
}

// The schema node of a dotted property path below `root` ("spec.checkpoint.flushSeconds").
// (Recursive: assigning one YAML::Node to another would overwrite the referenced node.)
YAML::Node Property(const YAML::Node& root, const std::string& path) {
  const size_t dot = path.find('.');
  const std::string key = path.substr(0, dot);
  const YAML::Node props = root["properties"];
  if (!props || !props[key]) return YAML::Node();
  if (dot == std::string::npos) return props[key];
  return Property(props[key], path.substr(dot + 1));
}

std::vector<std::string> Strings(const YAML::Node& seq) {
  std::vector<std::string> out;
  for (const auto& s : seq) out.push_back(s.as<std::string>());
  return out;
}

TEST(CrdTest, NamesShortNameAndCategory) {
  YAML::Node crd = Crd();
  EXPECT_EQ(crd["apiVersion"].as<std::string>(), "apiextensions.k8s.io/v1");
  EXPECT_EQ(crd["metadata"]["name"].as<std::string>(), "trainingjobs.phalanx.io");
  EXPECT_EQ(crd["spec"]["group"].as<std::string>(), "phalanx.io");
  EXPECT_EQ(crd["spec"]["scope"].as<std::string>(), "Namespaced");
  const YAML::Node names = crd["spec"]["names"];
  EXPECT_EQ(names["kind"].as<std::string>(), "TrainingJob");
  EXPECT_EQ(names["plural"].as<std::string>(), "trainingjobs");
  EXPECT_EQ(Strings(names["shortNames"]), std::vector<std::string>{"tj"});
  EXPECT_EQ(Strings(names["categories"]), std::vector<std::string>{"all"});
  ASSERT_TRUE(Version().IsMap());
  EXPECT_TRUE(Version()["served"].as<bool>());
  EXPECT_TRUE(Version()["storage"].as<bool>());
}

TEST(CrdTest, StatusAndScaleSubresourcesPointAtFieldsTheOperatorWrites) {
  const YAML::Node sub = Version()["subresources"];
  ASSERT_TRUE(sub["status"].IsMap());
  const YAML::Node scale = sub["scale"];
  EXPECT_EQ(scale["specReplicasPath"].as<std::string>(), ".spec.replicas");
  EXPECT_EQ(scale["statusReplicasPath"].as<std::string>(), ".status.replicas");
  EXPECT_EQ(scale["labelSelectorPath"].as<std::string>(), ".status.selector");
  TrainingJobStatus s;
  s.replicas = 4;
  s.selector = "phalanx.io/job-name=llama";
  const json::Json st = EncodeStatus(s);
  EXPECT_EQ(st.value("replicas", 0), 4);
  EXPECT_EQ(st.value("selector", ""), "phalanx.io/job-name=llama");
}

TEST(CrdTest, PrinterColumnsAreTheContractOnes) {
  std::vector<std::string> names, paths;
  for (const auto& c : Version()["additionalPrinterColumns"]) {
    names.push_back(c["name"].as<std::string>());
    paths.push_back(c["jsonPath"].as<std::string>());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"Phase", "Replicas", "GPUs", "Attempt", "Last-Checkpoint", "Age", "Cost"}));
  // Every status column reads a field the operator writes.
  TrainingJobStatus s;
  s.phase = Phase::kRunning;
  s.attempt = 2;
  s.gpus = 16;
  s.last_committed = CheckpointRecord{100, "/ckpt/100", SystemTime(std::chrono::seconds(1795000000)), 1};
  s.usage = UsageStatus{.gpu_seconds = 3600, .cost = 2.5, .currency = "USD"};
  const json::Json st = {{"status", EncodeStatus(s)}};
  for (const auto& p : paths) {
    if (p.rfind(".status.", 0) != 0) continue;
    json::Json::json_pointer ptr("/" + [&] {
      std::string q = p.substr(1);
      for (auto& ch : q) ch = ch == '.' ? '/' : ch;
      return q;
    }());
    EXPECT_TRUE(st.contains(ptr)) << p << " is not written by EncodeStatus";
  }
}

TEST(CrdTest, SpecHasEveryContractFieldWithItsBounds) {
  const YAML::Node schema = Version()["schema"]["openAPIV3Schema"];
  for (const char* f : {"spec.replicas", "spec.gpusPerReplica", "spec.template",
                        "spec.scheduling.priorityClassName", "spec.scheduling.gang.minMembers",
                        "spec.scheduling.gang.timeoutSeconds", "spec.scheduling.topology.level",
                        "spec.scheduling.topology.mode", "spec.checkpoint.dir", "spec.checkpoint.flushSeconds",
                        "spec.checkpoint.expectedIntervalSeconds", "spec.failurePolicy.maxFailures",
                        "spec.failurePolicy.maxDisruptions", "spec.failurePolicy.backoff.initialSeconds",
                        "spec.failurePolicy.backoff.maxSeconds", "spec.runPolicy.suspend",
                        "spec.runPolicy.activeDeadlineSeconds", "spec.runPolicy.ttlSecondsAfterFinished",
                        "spec.runPolicy.cleanPodPolicy"}) {
    EXPECT_TRUE(Property(schema, f).IsMap()) << f << " is not in the schema";
  }
  EXPECT_EQ(Property(schema, "spec.replicas")["minimum"].as<int>(), 1);
  EXPECT_EQ(Property(schema, "spec.gpusPerReplica")["minimum"].as<int>(), 1);
  EXPECT_EQ(Strings(schema["properties"]["spec"]["required"]),
            (std::vector<std::string>{"replicas", "gpusPerReplica", "template"}));
}

TEST(CrdTest, CelRuleBoundsFlushSecondsByTheGracePeriod) {
  const YAML::Node spec = Property(Version()["schema"]["openAPIV3Schema"], "spec");
  bool found = false;
  for (const auto& v : spec["x-kubernetes-validations"]) {
    const std::string rule = v["rule"].as<std::string>();
    if (rule.find("self.checkpoint.flushSeconds") != std::string::npos &&
        rule.find("self.template.spec.terminationGracePeriodSeconds") != std::string::npos &&
        rule.find("<=") != std::string::npos && rule.find(": 30") != std::string::npos) {
      found = true;
      // fieldPath/reason need Kubernetes 1.28; the chart promises 1.27 (docs/install.md).
      EXPECT_FALSE(v["fieldPath"]) << "fieldPath is rejected by a 1.27 API server";
      EXPECT_NE(v["message"].as<std::string>().find("flushSeconds"), std::string::npos);
    }
  }
  EXPECT_TRUE(found) << "no CEL rule flushSeconds <= terminationGracePeriodSeconds (default 30)";
}

// Unknown fields are pruned/rejected everywhere except inside the pod template.
void ExpectClosed(const YAML::Node& n, const std::string& path) {
  if (path == "spec.template" || path.rfind("spec.template.", 0) == 0) return;
  EXPECT_FALSE(n["x-kubernetes-preserve-unknown-fields"] && n["x-kubernetes-preserve-unknown-fields"].as<bool>())
      << path << " keeps unknown fields";
  if (n["properties"]) {
    for (const auto& kv : n["properties"]) ExpectClosed(kv.second, path + "." + kv.first.as<std::string>());
  }
}

TEST(CrdTest, SpecAndStatusAreClosedOutsideThePodTemplate) {
  const YAML::Node schema = Version()["schema"]["openAPIV3Schema"];
  ExpectClosed(Property(schema, "spec"), "spec");
  ExpectClosed(Property(schema, "status"), "status");
}

// Walks an encoded status against the status schema: every key must be declared.
void ExpectDeclared(const json::Json& value, const YAML::Node& schema, const std::string& path) {
  if (!value.is_object()) return;
  for (auto it = value.begin(); it != value.end(); ++it) {
    YAML::Node child;
    if (schema["properties"] && schema["properties"][it.key()]) {
      child = schema["properties"][it.key()];
    } else if (schema["additionalProperties"]) {
      child = schema["additionalProperties"];
    }
    ASSERT_TRUE(child.IsMap()) << path << "." << it.key() << " is written by the operator but not in the CRD schema";
    if (it->is_array() && child["items"]) {
      for (const auto& e : *it) ExpectDeclared(e, child["items"], path + "." + it.key() + "[]");
    } else {
      ExpectDeclared(*it, child, path + "." + it.key());
    }
  }
}

TEST(CrdTest, StatusSchemaDeclaresEverythingTheOperatorWrites) {
  TrainingJobStatus s;
  s.phase = Phase::kRestarting;
  s.attempt = 3;
  s.failures = 1;
  s.consecutive_failures = 1;
  s.failures_by_reason["OOMKilled"] = 1;
  s.disruptions = 2;
  s.disruptions_by_reason["PreemptionByScheduler"] = 2;
  const SystemTime t = SystemTime(std::chrono::seconds(1795000000));
  s.last_committed = CheckpointRecord{1200, "/ckpt/step-1200", t, 2};
  s.preemption_cost = PreemptionCost{1600, 100, 60, t};
  s.lost_gpu_seconds = 42.5;
  s.start_time = t;
  s.completion_time = t;
  s.observed_generation = 4;
  s.replicas = 2;
  s.gpus = 16;
  s.selector = "phalanx.io/job-name=x";
  s.attempt_start_time = t;
  s.running_since = t;
  s.running_seconds = 30;
  s.resume_from = "/ckpt/step-1000";
  s.restart = PendingRestart{3, RestartClass::kFailure, "Error", "boom", t, t, t, t, true};
  s.last_restart = LastRestart{RestartClass::kDisruption, "NodeLost", "gone", t, 1.5};
  s.preemption = PreemptionState{"r1", "Completed", "ml/big", "tier", t, t, 1000, "Checkpointed"};
  s.conditions.push_back(Condition{"Restarting", "True", "Error", "boom", t});
  s.usage = UsageStatus{7200, 1800, 5.0, 1.25, "USD", t, t, {{"x-a3-0", "2026-11-26T10:00:00Z"}}};
  const YAML::Node status = Property(Version()["schema"]["openAPIV3Schema"], "status");
  ASSERT_TRUE(status.IsMap());
  ExpectDeclared(EncodeStatus(s), status, "status");
}

}  // namespace
}  // namespace phalanx::op
