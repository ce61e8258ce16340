// The shipped example manifests decode and validate with the operator's own rules.
#include <cstdlib>
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

TEST(ExamplesTest, ExampleTrainingJobsAreValid) {
  const char* src = std::getenv("PHALANX_SOURCE_DIR");
  if (src == nullptr) src = PHALANX_TEST_SOURCE_DIR;  // running the binary by hand
  for (const char* f : {"manifests/examples/trainingjob-llama-8x8.yaml", "manifests/examples/trainingjob-small.yaml"}) {
    SCOPED_TRACE(f);
    YAML::Node doc = YAML::LoadFile(std::string(src) + "/" + f);
    json::Json j = ToJson(doc);
    auto job = DecodeTrainingJob(j);
    ASSERT_TRUE(job.ok()) << job.status();
    EXPECT_TRUE(job->spec_error.ok()) << job->spec_error;
  }
}

}  // namespace
}  // namespace phalanx::op
