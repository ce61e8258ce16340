// The chart's kubeVersion is a promise (docs/architecture.md §7): the CRDs it ships may use no CEL validation-rule
// field newer than the oldest Kubernetes it declares. An API server that does not know a field
// rejects the CRD (kubectl's strict field validation) or drops it silently.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <string>
#include <vector>

#include "tests/chart/chart_env.h"
#include "tests/chart/rendering.h"

namespace phalanx::chart_test {
namespace {

// Fields of an x-kubernetes-validations entry -> the Kubernetes 1.x minor from which a default
// API server accepts them (beta or GA, feature gate on by default).
const std::map<std::string, int>& RuleFieldMinimum() {
  static const std::map<std::string, int> table = {
      {"rule", 25},               // CustomResourceValidationExpressions beta (alpha 1.23), GA 1.29
      {"message", 25},            // with rule
      {"messageExpression", 27},  // added in 1.27
      {"reason", 28},             // added in 1.28
      {"fieldPath", 28},          // added in 1.28
      {"optionalOldSelf", 30},    // 1.29 alpha (CRDValidationRatcheting), on by default 1.30
  };
  return table;
}

// The minor of ">=1.N..." in Chart.yaml's kubeVersion; -1 when it has no such lower bound.
int MinimumMinor(const std::string& kube_version) {
  std::smatch m;
  static const std::regex lower(R"(>=\s*v?1\.(\d+))");
  return std::regex_search(kube_version, m, lower) ? std::stoi(m[1]) : -1;
}

// Every problem with the validation rules under `node`: unknown fields (add them to the table)
// and fields newer than `minimum_minor`. `where` names the path for the message.
void CheckRules(const YAML::Node& node, int minimum_minor, const std::string& where,
                std::vector<std::string>* problems) {
  if (node.IsMap()) {
    for (const auto& entry : node) {
      const std::string key = entry.first.as<std::string>();
      const std::string path = where + "." + key;
      if (key == "x-kubernetes-validations" && entry.second.IsSequence()) {
        for (const auto& rule : entry.second) {
          if (!rule.IsMap()) continue;
          for (const auto& field : rule) {
            const std::string name = field.first.as<std::string>();
            auto known = RuleFieldMinimum().find(name);
            if (known == RuleFieldMinimum().end()) {
              problems->push_back(path + ": field '" + name +
                                  "' is not in RuleFieldMinimum(); add the Kubernetes version that introduced it");
            } else if (known->second > minimum_minor) {
              problems->push_back(path + ": '" + name + "' needs Kubernetes 1." +
                                  std::to_string(known->second) + " but Chart.yaml promises 1." +
                                  std::to_string(minimum_minor));
            }
          }
        }
      } else {
        CheckRules(entry.second, minimum_minor, path, problems);
      }
    }
  } else if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) {
      CheckRules(node[i], minimum_minor, where + "[" + std::to_string(i) + "]", problems);
    }
  }
}

std::vector<std::string> CheckFile(const std::string& path, int minimum_minor) {
  std::string error;
  auto docs = ParseDocs(ReadFile(path), &error);
  if (!error.empty()) return {path + ": " + error};
  std::vector<std::string> problems;
  for (const auto& doc : docs) {
    if (Str(doc, {"kind"}) != "CustomResourceDefinition") continue;
    CheckRules(doc, minimum_minor, path + ":" + Str(doc, {"metadata", "name"}), &problems);
  }
  return problems;
}

TEST(CrdVersionsTest, ChartDeclaresAMinimumKubernetesVersion) {
  const std::string kube_version = Str(YAML::LoadFile(SourceDir() + "/helm/phalanx/Chart.yaml"), {"kubeVersion"});
  EXPECT_EQ(MinimumMinor(kube_version), 27) << kube_version;
  EXPECT_EQ(MinimumMinor(">=1.30.0-0"), 30);
  EXPECT_EQ(MinimumMinor("1.27.x"), -1);
}

TEST(CrdVersionsTest, ShippedCrdsUseOnlyRuleFieldsTheDeclaredMinimumAccepts) {
  const int minimum = MinimumMinor(Str(YAML::LoadFile(SourceDir() + "/helm/phalanx/Chart.yaml"), {"kubeVersion"}));
  ASSERT_GT(minimum, 0);
  for (const char* file : {"/manifests/crds/phalanx.io_trainingjobs.yaml",
                           "/helm/phalanx/crds/phalanx.io_trainingjobs.yaml", "/manifests/crds/phalanx.io_gpuqueues.yaml",
                           "/helm/phalanx/crds/phalanx.io_gpuqueues.yaml", "/manifests/install.yaml"}) {
    SCOPED_TRACE(file);
    ASSERT_TRUE(FileExists(SourceDir() + file));
    const auto problems = CheckFile(SourceDir() + file, minimum);
    for (const auto& p : problems) ADD_FAILURE() << p;
  }
  // The shipped CRD does use validation rules: the check above looked at something.
  EXPECT_NE(ReadFile(SourceDir() + "/manifests/crds/phalanx.io_trainingjobs.yaml").find("x-kubernetes-validations"),
            std::string::npos);
  EXPECT_NE(ReadFile(SourceDir() + "/manifests/crds/phalanx.io_gpuqueues.yaml").find("x-kubernetes-validations"),
            std::string::npos);
}

TEST(CrdVersionsTest, CheckRejectsNewerAndUnknownRuleFields) {
  std::string error;
  const auto docs = ParseDocs(R"(apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  versions:
    - name: v1
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-validations:
            - {rule: "self.a <= self.b", message: "a <= b", fieldPath: .a}
          properties:
            spec:
              type: object
              x-kubernetes-validations:
                - {rule: "true", messageExpression: "'x'", frobnicate: true}
)",
                              &error);
  ASSERT_TRUE(error.empty()) << error;
  ASSERT_EQ(docs.size(), 1u);
  std::vector<std::string> at27, at28;
  CheckRules(docs[0], 27, "widgets", &at27);
  CheckRules(docs[0], 28, "widgets", &at28);
  ASSERT_EQ(at27.size(), 2u) << ::testing::PrintToString(at27);
  EXPECT_NE(at27[0].find("'fieldPath' needs Kubernetes 1.28 but Chart.yaml promises 1.27"), std::string::npos)
      << at27[0];
  EXPECT_NE(at27[1].find("'frobnicate' is not in RuleFieldMinimum()"), std::string::npos) << at27[1];
  ASSERT_EQ(at28.size(), 1u) << ::testing::PrintToString(at28);  // fieldPath is fine from 1.28
  EXPECT_NE(at28[0].find("frobnicate"), std::string::npos);
}

}  // namespace
}  // namespace phalanx::chart_test
