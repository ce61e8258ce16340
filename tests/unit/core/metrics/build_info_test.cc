#include "core/metrics/build_info.h"

#include <gtest/gtest.h>

#include "core/base/version.h"

namespace phalanx::metrics {
namespace {

TEST(BuildInfoTest, ExposesVersionAndCommitWithValueOne) {
  Registry registry;
  ASSERT_TRUE(RegisterBuildInfo(registry, "0.1.0", "abc123").ok());
  EXPECT_EQ(registry.Expose(),
            "# HELP phalanx_build_info A metric with a constant value of 1, labeled by the "
            "version and git commit of the running Phalanx build.\n"
            "# TYPE phalanx_build_info gauge\n"
            "phalanx_build_info{version=\"0.1.0\",commit=\"abc123\"} 1\n");
}

TEST(BuildInfoTest, AcceptsGeneratedVersionHeaderAndIsIdempotent) {
  Registry registry;
  ASSERT_TRUE(RegisterBuildInfo(registry, kVersion, kGitCommit).ok());
  ASSERT_TRUE(RegisterBuildInfo(registry, kVersion, kGitCommit).ok());
  const std::string text = registry.Expose();
  EXPECT_NE(text.find(std::string("version=\"") + kVersion + "\""), std::string::npos) << text;
}

TEST(BuildInfoTest, FailsWhenNameTakenByAnotherShape) {
  Registry registry;
  ASSERT_TRUE(registry.AddCounter("phalanx_build_info", "x").ok());
  EXPECT_EQ(RegisterBuildInfo(registry, "1", "c").code(), StatusCode::kAlreadyExists);
}

}  // namespace
}  // namespace phalanx::metrics
