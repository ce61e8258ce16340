#include "core/log/text_formatter.h"

#include <cmath>

#include <gtest/gtest.h>

#include "tests/unit/core/log/format_test_util.h"

namespace phalanx::log {
namespace {

using testing::FormatPlain;
using testing::FormatRecord;

TEST(TextFormatterTest, RendersCompactUtcLineWithKeyValues) {
  TextFormatter f;
  EXPECT_EQ(FormatRecord(f, "extender.gang", spdlog::level::info, "Bound gang members",
                         {{"gang", "ml/llama"}, {"nodes", 4}}),
            "2026-11-22T03:04:05.123Z I extender.gang] Bound gang members gang=ml/llama "
            "nodes=4\n");
}

TEST(TextFormatterTest, QuotesValuesWithSpacesQuotesOrControlCharacters) {
  TextFormatter f;
  EXPECT_EQ(FormatRecord(f, "operator", spdlog::level::warn, "Failed to patch node",
                         {{"node", "gpu-17"},
                          {"err", "409 Conflict"},
                          {"say", "a \"b\" \\c"},
                          {"lines", "one\ntwo\tthree\x01"},
                          {"empty", ""},
                          {"eq", "a=b"}}),
            "2026-11-22T03:04:05.123Z W operator] Failed to patch node node=gpu-17 "
            "err=\"409 Conflict\" say=\"a \\\"b\\\" \\\\c\" lines=\"one\\ntwo\\tthree\\x01\" "
            "empty=\"\" eq=\"a=b\"\n");
}

TEST(TextFormatterTest, RendersNumbersAndBoolsBare) {
  TextFormatter f;
  EXPECT_EQ(FormatRecord(f, "x", spdlog::level::debug, "Scored node",
                         {{"score", 7.5}, {"whole", 3.0}, {"neg", -2}, {"ok", true},
                          {"nan", std::nan("")}}),
            "2026-11-22T03:04:05.123Z D x] Scored node score=7.5 whole=3 neg=-2 ok=true "
            "nan=NaN\n");
}

TEST(TextFormatterTest, EscapesControlCharactersInMessageToKeepOneLine) {
  TextFormatter f;
  EXPECT_EQ(FormatRecord(f, "x", spdlog::level::err, "Line one\nline \"two\"\x7f"),
            "2026-11-22T03:04:05.123Z E x] Line one\\nline \"two\"\\x7f\n");
}

TEST(TextFormatterTest, PlainPayloadAndUnnamedLogger) {
  TextFormatter f;
  EXPECT_EQ(FormatPlain(f, "from spdlog"), "2026-11-22T03:04:05.123Z W plain] from spdlog\n");
  EXPECT_EQ(FormatRecord(f, "", spdlog::level::trace, "Hello"),
            "2026-11-22T03:04:05.123Z T] Hello\n");
}

}  // namespace
}  // namespace phalanx::log
