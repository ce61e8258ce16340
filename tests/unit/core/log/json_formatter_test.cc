#include "core/log/json_formatter.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/unit/core/log/format_test_util.h"

namespace phalanx::log {
namespace {

using testing::FormatPlain;
using testing::FormatRecord;

TEST(JsonFormatterTest, RendersOneObjectPerLineWithTypedFields) {
  JsonFormatter f;
  EXPECT_EQ(FormatRecord(f, "extender.gang", spdlog::level::info, "Bound gang members",
                         {{"gang", "ml/llama"}, {"nodes", 4}}),
            "{\"ts\":\"2026-11-22T03:04:05.123Z\",\"level\":\"info\","
            "\"logger\":\"extender.gang\",\"msg\":\"Bound gang members\","
            "\"gang\":\"ml/llama\",\"nodes\":4}\n");
}

TEST(JsonFormatterTest, LinesParseAndKeepNumberTypes) {
  JsonFormatter f;
  const std::string line = FormatRecord(
      f, "device_plugin.health", spdlog::level::warn, "Marked device unhealthy",
      {{"xid", 79}, {"free", std::numeric_limits<uint64_t>::max()}, {"neg", INT64_MIN},
       {"ratio", 0.125}, {"tiny", 1e-7}, {"huge", 1e300}, {"healthy", false},
       {"inf", std::numeric_limits<double>::infinity()}, {"nan", std::nan("")}});
  ASSERT_EQ(line.back(), '\n');
  ASSERT_EQ(line.find('\n'), line.size() - 1);
  const nlohmann::json j = nlohmann::json::parse(line);
  EXPECT_EQ(j["ts"], "2026-11-22T03:04:05.123Z");
  EXPECT_EQ(j["level"], "warn");
  EXPECT_EQ(j["logger"], "device_plugin.health");
  EXPECT_EQ(j["msg"], "Marked device unhealthy");
  EXPECT_TRUE(j["xid"].is_number_integer());
  EXPECT_EQ(j["xid"].get<int>(), 79);
  EXPECT_EQ(j["free"].get<uint64_t>(), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(j["neg"].get<int64_t>(), INT64_MIN);
  EXPECT_EQ(j["ratio"].get<double>(), 0.125);
  EXPECT_EQ(j["tiny"].get<double>(), 1e-7);
  EXPECT_EQ(j["huge"].get<double>(), 1e300);
  EXPECT_EQ(j["healthy"], false);
  EXPECT_EQ(j["inf"], "+Inf");
  EXPECT_EQ(j["nan"], "NaN");
}

TEST(JsonFormatterTest, EscapesQuotesNewlinesAndControlCharacters) {
  JsonFormatter f;
  const std::string msg = "Said \"hi\"\nthen\tleft\\ \x01\x1f\b\f\r";
  const std::string value = "v\"\n\x02/é";
  const std::string line =
      FormatRecord(f, "a\"b", spdlog::level::err, msg, {{"k\"ey", value}});
  EXPECT_NE(line.find("\"msg\":\"Said \\\"hi\\\"\\nthen\\tleft\\\\ \\u0001\\u001f\\b\\f\\r\""),
            std::string::npos)
      << line;
  const nlohmann::json j = nlohmann::json::parse(line);
  EXPECT_EQ(j["msg"], msg);
  EXPECT_EQ(j["k\"ey"], value);
  EXPECT_EQ(j["logger"], "a\"b");
  EXPECT_EQ(j["level"], "error");
}

TEST(JsonFormatterTest, ReplacesInvalidUtf8SoLinesAlwaysParse) {
  JsonFormatter f;
  // Lone continuation byte, truncated 2-byte sequence, overlong "/", surrogate, > U+10FFFF.
  const std::string bad = "a\x80" "b\xC3" "c\xC0\xAF" "d\xED\xA0\x80" "e\xF4\x90\x80\x80" "f";
  const std::string line = FormatRecord(f, "x", spdlog::level::info, "Bad bytes", {{"v", bad}});
  const nlohmann::json j = nlohmann::json::parse(line);
  const std::string got = j["v"];
  EXPECT_EQ(got.find("\xEF\xBF\xBD"), 1u) << line;  // U+FFFD replaces the 0x80
  EXPECT_EQ(got.front(), 'a');
  EXPECT_EQ(got.back(), 'f');
  // Valid multi-byte characters pass through unchanged.
  const std::string ok = "日本 🚀 é";
  EXPECT_EQ(nlohmann::json::parse(FormatRecord(f, "x", spdlog::level::info, ok))["msg"], ok);
}

TEST(JsonFormatterTest, PlainPayloadAndUnnamedLogger) {
  JsonFormatter f;
  EXPECT_EQ(FormatPlain(f, "from \"spdlog\""),
            "{\"ts\":\"2026-11-22T03:04:05.123Z\",\"level\":\"warn\",\"logger\":\"plain\","
            "\"msg\":\"from \\\"spdlog\\\"\"}\n");
  const nlohmann::json j =
      nlohmann::json::parse(FormatRecord(f, "", spdlog::level::critical, "Hello"));
  EXPECT_FALSE(j.contains("logger"));
  EXPECT_EQ(j["level"], "critical");
}

}  // namespace
}  // namespace phalanx::log
