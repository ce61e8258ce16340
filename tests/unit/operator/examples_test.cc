// The shipped example manifests decode and validate with the operator's own rules.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "operator/api/training_job_codec.h"

namespace phalanx::op {
namespace {

json::Json ToJson(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      json::Json o = json::Json::object();
      for (const auto& kv : n) o[kv.first.as<std::string>()] = ToJson(kv.second);
      return o;
    }
    case YAML::NodeType::Sequence: {
      json::Json a = json::Json::array();
      for (const auto& x : n) a.push_back(ToJson(x));
      return a;
    }
    case YAML::NodeType::Scalar: {
      const std::string s = n.Scalar();
      if (n.Tag() == "!") return s;  // quoted
      int64_t i;
      if (YAML::convert<int64_t>::decode(n, i)) return i;
      bool b;
      if (s == "true" || s == "false") {
        YAML::convert<bool>::decode(n, b);
        return b;
      }
      return s;
    }
    default:
      return nullptr;
  }
}

std::vector<std::string> ExampleTrainingJobs() {
  std::vector<std::string> out;
  const std::string dir = std::string(PHALANX_TEST_SOURCE_DIR) + "/manifests/examples";
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("trainingjob-", 0) == 0 && name.ends_with(".yaml")) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(ExamplesTest, ExampleTrainingJobsAreValid) {
  const auto files = ExampleTrainingJobs();
  ASSERT_GE(files.size(), 3u);
  bool spot_with_checkpointing = false, high_64_gpus_on_a_rack = false;
  for (const auto& f : files) {
    SCOPED_TRACE(f);
    YAML::Node doc = YAML::LoadFile(f);
    json::Json j = ToJson(doc);
    auto job = DecodeTrainingJob(j);
    ASSERT_TRUE(job.ok()) << job.status();
    EXPECT_TRUE(job->spec_error.ok()) << job->spec_error;
    const TrainingJobSpec& s = job->spec;
    spot_with_checkpointing |= s.scheduling.priority_class_name == "phalanx-spot" && !s.checkpoint.dir.empty() &&
                               s.checkpoint.flush_seconds > 0 && s.checkpoint.expected_interval_seconds > 0;
    high_64_gpus_on_a_rack |= s.scheduling.priority_class_name == "phalanx-high" && s.TotalGpus() == 64 &&
                              s.scheduling.topology.level == "topology.kubernetes.io/rack";
  }
  // Issue 7: "a spot job with checkpointing; a 64-GPU high-tier job with rack topology".
  EXPECT_TRUE(spot_with_checkpointing);
  EXPECT_TRUE(high_64_gpus_on_a_rack);
}

}  // namespace
}  // namespace phalanx::op
