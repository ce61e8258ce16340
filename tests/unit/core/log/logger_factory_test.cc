#include "core/log/logger_factory.h"

#include <regex>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "core/log/log.h"
#include "tests/unit/core/log/capture_sink.h"

namespace phalanx::log {
namespace {

using testing::CapturedLogs;

TEST(LoggerFactoryTest, LoggersShareSinksFormatAndLevel) {
  CapturedLogs logs(LogOptions{LogFormat::kText, 0});
  auto gang = logs.factory().MakeLogger("extender.gang");
  auto health = logs.factory().MakeLogger("device_plugin.health");
  PHX_LOG_INFO(gang, "Bound gang members", kv("gang", "ml/llama"), kv("nodes", 4));
  PHX_LOG_WARN(health, "Marked device unhealthy", kv("xid", 79));
  const auto lines = logs.lines();
  ASSERT_EQ(lines.size(), 2u) << logs.text();
  const std::regex ts(R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z )");
  EXPECT_TRUE(std::regex_search(lines[0], ts)) << lines[0];
  EXPECT_TRUE(lines[0].ends_with(" I extender.gang] Bound gang members gang=ml/llama nodes=4"))
      << lines[0];
  EXPECT_TRUE(lines[1].ends_with(" W device_plugin.health] Marked device unhealthy xid=79"))
      << lines[1];
}

TEST(LoggerFactoryTest, ReconfigureSwitchesExistingLoggers) {
  CapturedLogs logs;
  auto logger = logs.factory().MakeLogger("operator.reconcile");
  PHX_LOG_DEBUG(logger, "Hidden at v0");
  ASSERT_TRUE(logs.factory().Reconfigure(LogOptions{LogFormat::kJson, 2}).ok());
  PHX_LOG_DEBUG(logger, "Reconciled job", kv("job", "ml/a"));
  const auto lines = logs.lines();
  ASSERT_EQ(lines.size(), 1u) << logs.text();
  const auto j = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(j["level"], "debug");
  EXPECT_EQ(j["logger"], "operator.reconcile");
  EXPECT_EQ(j["job"], "ml/a");
  EXPECT_EQ(logs.factory().options().verbosity, 2);
}

TEST(LoggerFactoryTest, ReconfigureRejectsNegativeVerbosity) {
  CapturedLogs logs;
  Status s = logs.factory().Reconfigure(LogOptions{LogFormat::kJson, -1});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "log verbosity must be >= 0, got -1");
  EXPECT_EQ(logs.factory().options().format, LogFormat::kText);
}

TEST(LoggerFactoryTest, PlainSpdlogCallsUseTheSameFormat) {
  CapturedLogs logs(LogOptions{LogFormat::kJson, 0});
  auto logger = logs.factory().MakeLogger("lib");
  logger->info("Formatted by {} with {}", "spdlog", 2);
  const auto j = nlohmann::json::parse(logs.lines().at(0));
  EXPECT_EQ(j["msg"], "Formatted by spdlog with 2");
  EXPECT_EQ(j["logger"], "lib");
}

TEST(InitLoggingTest, ConfiguresProcessLoggersOnStderr) {
  EXPECT_EQ(InitLogging(LogOptions{LogFormat::kText, -3}).code(), StatusCode::kInvalidArgument);

  auto early = MakeLogger("early");  // made before InitLogging: still reconfigured
  ASSERT_TRUE(InitLogging(LogOptions{LogFormat::kJson, 1}).ok());
  auto late = MakeLogger("extender.gang");
  ::testing::internal::CaptureStderr();
  PHX_LOG_DEBUG(early, "Debug from early logger", kv("n", 1));
  PHX_LOG_INFO(late, "Bound gang members", kv("gang", "ml/llama"));
  PHX_LOG_TRACE(late, "Trace hidden at v1");
  spdlog::info("Via spdlog default");
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(InitLogging(LogOptions{}).ok());  // back to defaults for other tests

  std::vector<nlohmann::json> records;
  std::istringstream in(err);
  for (std::string line; std::getline(in, line);) records.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(records.size(), 3u) << err;
  EXPECT_EQ(records[0]["logger"], "early");
  EXPECT_EQ(records[0]["level"], "debug");
  EXPECT_EQ(records[1]["logger"], "extender.gang");
  EXPECT_EQ(records[1]["gang"], "ml/llama");
  EXPECT_EQ(records[2]["msg"], "Via spdlog default");
  EXPECT_FALSE(records[2].contains("logger"));
}

}  // namespace
}  // namespace phalanx::log
