#include "core/json/json.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "core/json/fast_json.h"

namespace phalanx::json {
namespace {

TEST(JsonTest, ParseReportsPositionOfError) {
  auto r = Parse(R"({"a": 1,})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("malformed JSON"), std::string::npos);
  EXPECT_NE(r.status().message().find("column"), std::string::npos) << r.status();
}

TEST(JsonTest, ParseRejectsOversizedDocumentBeforeParsing) {
  std::string big(100, ' ');
  auto r = Parse(big, /*max_bytes=*/10);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("exceeds the limit"), std::string::npos);
}

TEST(JsonTest, MemberIsLenient) {
  auto doc = Parse(R"({"a": {"b": 1}, "n": null, "s": "x"})");
  ASSERT_TRUE(doc.ok());
  ASSERT_NE(Member(*doc, "a"), nullptr);
  EXPECT_EQ(Member(*Member(*doc, "a"), "b")->get<int>(), 1);
  EXPECT_EQ(Member(*doc, "n"), nullptr);        // null counts as absent
  EXPECT_EQ(Member(*doc, "missing"), nullptr);
  EXPECT_EQ(Member(*Member(*doc, "s"), "x"), nullptr);  // not an object
}

TEST(JsonTest, TypedGettersNamePathAndTypes) {
  auto doc = *Parse(R"({"gpus":[{"index":"zero","memoryMiB":-1,"ok":true}]})");
  const Json& gpu = doc["gpus"][0];
  auto idx = GetUint(gpu, "index", "gpus[0]");
  ASSERT_FALSE(idx.ok());
  EXPECT_EQ(idx.status().message(), "gpus[0].index: expected unsigned integer, got string");
  auto mem = GetUint(gpu, "memoryMiB", "gpus[0]");
  EXPECT_EQ(mem.status().message(), "gpus[0].memoryMiB: expected a non-negative integer, got -1");
  auto missing = GetString(gpu, "uuid", "gpus[0]");
  EXPECT_EQ(missing.status().message(), "gpus[0].uuid: required field missing");
  EXPECT_TRUE(*GetBool(gpu, "ok", "gpus[0]"));
  auto not_object = GetString(doc["gpus"], "x", "gpus");
  EXPECT_EQ(not_object.status().message(), "gpus: expected object, got array");
}

TEST(JsonTest, OptionalDistinguishesAbsentFromWrongType) {
  auto doc = *Parse(R"({"a":null,"b":"s","c":3})");
  EXPECT_EQ(*GetOptional(doc, "a", "", Json::value_t::string), nullptr);
  EXPECT_EQ(*GetOptional(doc, "zz", "", Json::value_t::string), nullptr);
  EXPECT_NE(*GetOptional(doc, "b", "", Json::value_t::string), nullptr);
  EXPECT_NE(*GetOptional(doc, "c", "", Json::value_t::number_integer), nullptr);
  EXPECT_FALSE(GetOptional(doc, "c", "", Json::value_t::string).ok());
}

TEST(JsonTest, DumpReplacesInvalidUtf8) {
  Json j = std::string("a\xff" "b");
  EXPECT_NO_THROW(Dump(j));
}

TEST(FastJsonTest, ReadsFieldsAndReusesBuffers) {
  FastJsonParser parser;
  for (int round = 0; round < 3; ++round) {
    auto doc = parser.Iterate(R"({"NodeNames":["a","b","c"],"Pod":null})");
    ASSERT_TRUE(doc.ok()) << doc.status();
    simdjson::ondemand::array names;
    ASSERT_EQ((*doc)->find_field("NodeNames").get_array().get(names), simdjson::SUCCESS);
    int n = 0;
    for (auto v : names) {
      std::string_view s;
      ASSERT_EQ(v.get_string().get(s), simdjson::SUCCESS);
      ++n;
    }
    EXPECT_EQ(n, 3);
  }
}

TEST(FastJsonTest, MalformedInputIsAnError) {
  FastJsonParser parser;
  auto doc = parser.Iterate("[1,2");
  if (doc.ok()) {
    // On-demand parsing may defer errors until iteration: it must surface there.
    simdjson::ondemand::array arr;
    auto err = (*doc)->get_array().get(arr);
    bool failed = err != simdjson::SUCCESS;
    if (!failed) {
      for (auto v : arr) {
        int64_t x;
        if (v.get_int64().get(x) != simdjson::SUCCESS) failed = true;
      }
    }
    EXPECT_TRUE(failed);
  }
}

std::string ReadRegression(const std::string& name) {
  std::ifstream in(std::string(PHALANX_TEST_SOURCE_DIR) + "/fuzz/regressions/extender_filter_args/" + name,
                   std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The libFuzzer pair of fuzz/regressions/extender_filter_args (make fuzz, 2026-11-29), walked the
// way the extender's filter parser walks it: a malformed document iterated in the buffer a longer
// one left. simdjson stepped onto the stale byte just past the text and from there into the
// longer document's structural indexes: a NodeNames token ~4 GB long. Iterate() zeroes the padding.
TEST(FastJsonTest, AnEmptyTextOnAFreshParserIsAnError) {
  FastJsonParser parser;  // no buffer yet: Iterate() must make one before writing its padding
  EXPECT_FALSE(parser.Iterate("").ok());
}

TEST(FastJsonTest, AReusedBufferReadsLikeAFreshOne) {
  const std::string longer = ReadRegression("stale-index-1-longer-document");
  const std::string malformed = ReadRegression("stale-index-2-malformed-after-it");
  ASSERT_GT(longer.size(), malformed.size() + simdjson::SIMDJSON_PADDING);
  FastJsonParser parser;
  (void)parser.Iterate(longer);
  auto doc = parser.Iterate(malformed);
  ASSERT_TRUE(doc.ok()) << doc.status();  // on-demand: the structure is checked while walking
  simdjson::ondemand::object root;
  ASSERT_EQ((*doc)->get_object().get(root), simdjson::SUCCESS);
  int tokens = 0;
  bool failed = false;
  for (auto field : root) {
    std::string_view key;
    simdjson::ondemand::value value;
    simdjson::ondemand::json_type type;
    if (field.unescaped_key().get(key) || field.value().get(value) || value.type().get(type)) {
      failed = true;
      break;
    }
    if (key != "NodeNames" || type != simdjson::ondemand::json_type::array) continue;
    simdjson::ondemand::array names;
    ASSERT_EQ(value.get_array().get(names), simdjson::SUCCESS);
    for (auto item : names) {
      simdjson::ondemand::value v;
      if (item.get(v)) {
        failed = true;
        break;
      }
      const std::string_view token = v.raw_json_token();
      ++tokens;
      ASSERT_TRUE(parser.Contains(token)) << "token " << tokens << " of " << token.size() << " bytes";
    }
  }
  EXPECT_GT(tokens, 0);
  EXPECT_TRUE(failed);  // malformed: simdjson says so, instead of reading elsewhere
}

}  // namespace
}  // namespace phalanx::json
