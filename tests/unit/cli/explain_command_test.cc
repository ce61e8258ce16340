// `phalanx explain` against a real HTTP server playing the extender's /debug/explain.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/commands.h"
#include "core/http/http_server.h"

namespace phalanx::cli {
namespace {

class ExplainCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.Handle("GET", "/debug/explain", http::SyncHandler([this](const http::Request& request) {
                     asked_pod_ = std::string(request.QueryValue("pod").value_or(""));
                     return reply_;
                   }));
    ASSERT_TRUE(server_.Start().ok());
    url_ = "http://127.0.0.1:" + std::to_string(server_.port());
  }

  // Runs `phalanx explain <args...>` in-process; returns the exit code, stdout in *out.
  int Run(std::vector<std::string> args, std::string* out, std::string* err) {
    args.insert(args.begin(), {"phalanx", "explain"});
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    CommandRegistry registry;
    RegisterExplainCommand(registry);
    ::testing::internal::CaptureStdout();
    ::testing::internal::CaptureStderr();
    int rc = registry.Run(static_cast<int>(argv.size()), argv.data());
    *out = ::testing::internal::GetCapturedStdout();
    *err = ::testing::internal::GetCapturedStderr();
    return rc;
  }

  http::HttpServer server_{http::ServerOptions{}};
  http::Response reply_;
  std::string asked_pod_;
  std::string url_;
};

TEST_F(ExplainCommandTest, PrintsSummaryAndReasonsOfTheExtendersAnswer) {
  reply_.body = R"({"summary":"gang team-a/llama-a1 waits: needs 16 GPUs in one nvlink-domain",
                    "reasons":["pool H100: 12 GPUs free, largest domain has 8","3 gangs ahead"]})";
  std::string out, err;
  ASSERT_EQ(Run({"team-a/llama-a1-0", "--extender", url_}, &out, &err), 0) << err;
  EXPECT_EQ(asked_pod_, "team-a/llama-a1-0");
  EXPECT_NE(out.find("gang team-a/llama-a1 waits"), std::string::npos) << out;
  EXPECT_NE(out.find("  - pool H100: 12 GPUs free, largest domain has 8"), std::string::npos) << out;
  EXPECT_NE(out.find("  - 3 gangs ahead"), std::string::npos) << out;
}

TEST_F(ExplainCommandTest, JsonFlagPrintsTheAnswerVerbatim) {
  reply_.body = R"({"summary":"bound"})";
  std::string out, err;
  ASSERT_EQ(Run({"ns/p", "--extender", url_, "--json"}, &out, &err), 0) << err;
  EXPECT_EQ(out, "{\"summary\":\"bound\"}\n");
}

TEST_F(ExplainCommandTest, ExtenderErrorIsReportedWithItsStatus) {
  reply_.status = 404;
  reply_.body = R"({"error":"pod ns/missing is not known to the extender"})";
  std::string out, err;
  EXPECT_EQ(Run({"ns/missing", "--extender", url_}, &out, &err), 1);
  EXPECT_NE(err.find("HTTP 404"), std::string::npos) << err;
  EXPECT_NE(err.find("not known to the extender"), std::string::npos) << err;
}

TEST_F(ExplainCommandTest, RejectsAPodNameWithoutNamespace) {
  std::string out, err;
  EXPECT_EQ(Run({"just-a-name", "--extender", url_}, &out, &err), 2);
  EXPECT_NE(err.find("expected NAMESPACE/NAME"), std::string::npos) << err;
  EXPECT_TRUE(asked_pod_.empty());
}

TEST_F(ExplainCommandTest, UnreachableExtenderSaysWhereItLooked) {
  server_.Shutdown();
  std::string out, err;
  EXPECT_EQ(Run({"ns/p", "--extender", url_, "--timeout", "5"}, &out, &err), 1);
  EXPECT_NE(err.find("cannot reach the extender at " + url_), std::string::npos) << err;
}

}  // namespace
}  // namespace phalanx::cli
