#include "core/log/log_options.h"

#include <gtest/gtest.h>

namespace phalanx::log {
namespace {

// Parses `args` (without the program name) into `options`; returns CLI11's error text,
// or "" on success.
std::string Parse(std::vector<std::string> args, LogOptions& options) {
  CLI::App app("test");
  AddLogFlags(app, options);
  std::reverse(args.begin(), args.end());  // CLI11 consumes the vector from the back
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}

TEST(LogOptionsTest, ParsesLogFormatNames) {
  EXPECT_EQ(*ParseLogFormat("text"), LogFormat::kText);
  EXPECT_EQ(*ParseLogFormat("json"), LogFormat::kJson);
  auto bad = ParseLogFormat("JSON");
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "must be \"text\" or \"json\", got \"JSON\"");
  EXPECT_EQ(LogFormatName(LogFormat::kJson), "json");
}

TEST(LogOptionsTest, VerbosityMapsToKubernetesLevels) {
  struct Case {
    int v;
    spdlog::level::level_enum want;
  };
  for (const Case& c : {Case{0, spdlog::level::info}, Case{1, spdlog::level::debug},
                        Case{4, spdlog::level::debug}, Case{5, spdlog::level::trace},
                        Case{10, spdlog::level::trace}, Case{-1, spdlog::level::info}}) {
    SCOPED_TRACE(c.v);
    EXPECT_EQ(LevelForVerbosity(c.v), c.want);
  }
}

TEST(LogOptionsTest, FlagsSetFormatAndVerbosity) {
  LogOptions options;
  ASSERT_EQ(Parse({"--log-format", "json", "--v", "3"}, options), "");
  EXPECT_EQ(options.format, LogFormat::kJson);
  EXPECT_EQ(options.verbosity, 3);

  LogOptions equals_form;
  ASSERT_EQ(Parse({"--log-format=text", "--v=5"}, equals_form), "");
  EXPECT_EQ(equals_form.format, LogFormat::kText);
  EXPECT_EQ(equals_form.verbosity, 5);
}

TEST(LogOptionsTest, FlagsKeepDefaultsWhenAbsent) {
  LogOptions options;
  options.format = LogFormat::kJson;
  options.verbosity = 2;
  ASSERT_EQ(Parse({}, options), "");
  EXPECT_EQ(options.format, LogFormat::kJson);
  EXPECT_EQ(options.verbosity, 2);
}

TEST(LogOptionsTest, RejectsUnknownLogFormatWithClearMessage) {
  LogOptions options;
  EXPECT_EQ(Parse({"--log-format", "xml"}, options),
            "--log-format: must be \"text\" or \"json\", got \"xml\"");
  EXPECT_EQ(options.format, LogFormat::kText);
}

TEST(LogOptionsTest, RejectsNegativeOrNonNumericVerbosity) {
  LogOptions options;
  EXPECT_EQ(Parse({"--v", "-1"}, options), "--v: must be a non-negative integer, got \"-1\"");
  EXPECT_EQ(Parse({"--v", "abc"}, options), "--v: must be a non-negative integer, got \"abc\"");
  EXPECT_EQ(options.verbosity, 0);
}

}  // namespace
}  // namespace phalanx::log
