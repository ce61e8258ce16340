#include "core/log/log.h"

#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/unit/core/log/capture_sink.h"

// Not in phalanx::log: the macros must work from any namespace with unqualified kv().
namespace phalanx::extender::gang {
namespace {

using log::LogFormat;
using log::LogOptions;
using log::testing::CapturedLogs;

// Counts how often it is rendered, to prove disabled levels evaluate nothing.
struct Expensive {
  int* renders;
  std::string str() const {
    ++*renders;
    return "rendered";
  }
};

std::vector<std::string> MessagesAt(int verbosity) {
  CapturedLogs logs(LogOptions{LogFormat::kJson, verbosity});
  auto logger = logs.factory().MakeLogger("t");
  PHX_LOG_TRACE(logger, "trace");
  PHX_LOG_DEBUG(logger, "debug");
  PHX_LOG_INFO(logger, "info");
  PHX_LOG_WARN(logger, "warn");
  PHX_LOG_ERROR(logger, "error");
  std::vector<std::string> messages;
  for (const std::string& line : logs.lines()) {
    messages.push_back(nlohmann::json::parse(line)["msg"].get<std::string>());
  }
  return messages;
}

TEST(LogTest, VerbosityFiltersLevels) {
  using V = std::vector<std::string>;
  EXPECT_EQ(MessagesAt(0), (V{"info", "warn", "error"}));
  EXPECT_EQ(MessagesAt(1), (V{"debug", "info", "warn", "error"}));
  EXPECT_EQ(MessagesAt(4), (V{"debug", "info", "warn", "error"}));
  EXPECT_EQ(MessagesAt(5), (V{"trace", "debug", "info", "warn", "error"}));
}

TEST(LogTest, DisabledLevelEvaluatesNoArguments) {
  CapturedLogs logs(LogOptions{LogFormat::kText, 0});
  auto logger = logs.factory().MakeLogger("t");
  int renders = 0;
  int calls = 0;
  auto count = [&calls] { return ++calls; };
  PHX_LOG_DEBUG(logger, "Scored node", kv("reason", Expensive{&renders}), kv("n", count()));
  EXPECT_EQ(renders, 0);
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(logs.text(), "");
  PHX_LOG_INFO(logger, "Scored node", kv("reason", Expensive{&renders}), kv("n", count()));
  EXPECT_EQ(renders, 1);
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(logs.text().ends_with("] Scored node reason=rendered n=1\n")) << logs.text();
}

TEST(LogTest, SameCallRendersAsTextAndAsJson) {
  for (LogFormat format : {LogFormat::kText, LogFormat::kJson}) {
    CapturedLogs logs(LogOptions{format, 0});
    auto logger = logs.factory().MakeLogger("extender.gang");
    const std::string gang = "ml/llama";
    PHX_LOG_INFO(logger, "Bound gang members", kv("gang", gang), kv("nodes", 4),
                 kv("err", "409 Conflict"));
    const std::string line = logs.lines().at(0);
    if (format == LogFormat::kText) {
      EXPECT_TRUE(line.ends_with(
          " I extender.gang] Bound gang members gang=ml/llama nodes=4 err=\"409 Conflict\""))
          << line;
    } else {
      const auto j = nlohmann::json::parse(line);
      EXPECT_EQ(j["msg"], "Bound gang members");
      EXPECT_EQ(j["gang"], "ml/llama");
      EXPECT_EQ(j["nodes"], 4);
      EXPECT_EQ(j["err"], "409 Conflict");
    }
  }
}

TEST(LogTest, AcceptsLoggerReferencePointerAndSharedPtr) {
  CapturedLogs logs;
  std::shared_ptr<spdlog::logger> shared = logs.factory().MakeLogger("t");
  spdlog::logger& ref = *shared;
  spdlog::logger* ptr = shared.get();
  PHX_LOG_INFO(shared, "One");
  PHX_LOG_INFO(ref, "Two", kv("k", 2));
  PHX_LOG_INFO(ptr, "Three");
  const auto lines = logs.lines();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_TRUE(lines[1].ends_with("] Two k=2")) << lines[1];
}

TEST(LogTest, FunctionFormMatchesMacroForm) {
  CapturedLogs logs;
  auto logger = logs.factory().MakeLogger("extender.gang");
  log::LogInfo(*logger, "Bound gang members", {{"gang", "ml/llama"}, {"nodes", 4}});
  PHX_LOG_INFO(logger, "Bound gang members", kv("gang", "ml/llama"), kv("nodes", 4));
  log::LogDebug(*logger, "Hidden", {{"k", 1}});
  const auto lines = logs.lines();
  ASSERT_EQ(lines.size(), 2u) << logs.text();
  EXPECT_EQ(lines[0].substr(24), lines[1].substr(24));  // equal after the timestamp
  EXPECT_TRUE(lines[0].ends_with(" I extender.gang] Bound gang members gang=ml/llama nodes=4"));
}

TEST(LogTest, ManyFieldsAndLongValuesSurviveEncoding) {
  CapturedLogs logs(LogOptions{LogFormat::kJson, 0});
  auto logger = logs.factory().MakeLogger("t");
  const std::string big(100'000, 'x');
  PHX_LOG_INFO(logger, "Big", kv("a", big), kv("b", 1), kv("c", 2.5), kv("d", true),
               kv("e", std::string("owned")), kv("f", -7), kv("g", 9u));
  const auto j = nlohmann::json::parse(logs.lines().at(0));
  EXPECT_EQ(j["a"].get<std::string>().size(), big.size());
  EXPECT_EQ(j["c"], 2.5);
  EXPECT_EQ(j["e"], "owned");
  EXPECT_EQ(j["f"], -7);
  EXPECT_EQ(j["g"], 9);
}

TEST(LogTest, ConcurrentLoggingKeepsLinesWhole) {
  CapturedLogs logs(LogOptions{LogFormat::kJson, 0});
  auto logger = logs.factory().MakeLogger("t");
  constexpr int kThreads = 4;
  constexpr int kPerThread = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&logger, t] {
      for (int i = 0; i < kPerThread; ++i) {
        PHX_LOG_INFO(logger, "Tick", kv("thread", t), kv("i", i), kv("pad", "p a d"));
      }
    });
  }
  for (auto& t : threads) t.join();
  const auto lines = logs.lines();
  ASSERT_EQ(lines.size(), static_cast<size_t>(kThreads * kPerThread));
  for (const std::string& line : lines) {
    ASSERT_EQ(nlohmann::json::parse(line)["msg"], "Tick") << line;
  }
}

}  // namespace
}  // namespace phalanx::extender::gang
