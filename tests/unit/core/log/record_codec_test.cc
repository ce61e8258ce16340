#include "core/log/record_codec.h"

#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace phalanx::log::internal {
namespace {

TEST(RecordCodecTest, RoundTripsMessageAndTypedFields) {
  const Field fields[] = {kv("gang", "ml/llama"), kv("nodes", 4), kv("free", 3u),
                          kv("ratio", 0.5), kv("held", false),
                          kv("max", std::numeric_limits<uint64_t>::max())};
  spdlog::memory_buf_t buf;
  EncodeRecord("Bound gang members", fields, buf);
  RecordReader reader(std::string_view(buf.data(), buf.size()));
  EXPECT_EQ(reader.message(), "Bound gang members");
  std::vector<FieldView> got;
  FieldView f;
  while (reader.Next(f)) got.push_back(f);
  ASSERT_EQ(got.size(), 6u);
  EXPECT_EQ(got[0].key, "gang");
  EXPECT_EQ(got[0].kind, FieldView::Kind::kString);
  EXPECT_EQ(got[0].text, "ml/llama");
  EXPECT_EQ(got[1].kind, FieldView::Kind::kInt);
  EXPECT_EQ(got[1].i, 4);
  EXPECT_EQ(got[2].kind, FieldView::Kind::kUint);
  EXPECT_EQ(got[2].u, 3u);
  EXPECT_EQ(got[3].kind, FieldView::Kind::kDouble);
  EXPECT_EQ(got[3].d, 0.5);
  EXPECT_EQ(got[4].kind, FieldView::Kind::kBool);
  EXPECT_FALSE(got[4].b);
  EXPECT_EQ(got[5].u, std::numeric_limits<uint64_t>::max());
}

TEST(RecordCodecTest, PlainPayloadIsAMessageWithoutFields) {
  RecordReader reader("Started from spdlog directly");
  EXPECT_EQ(reader.message(), "Started from spdlog directly");
  FieldView f;
  EXPECT_FALSE(reader.Next(f));
}

TEST(RecordCodecTest, TruncatedPayloadIsShownWholeAsPlainText) {
  const Field fields[] = {kv("gang", "ml/llama")};
  spdlog::memory_buf_t buf;
  EncodeRecord("Msg", fields, buf);
  const std::string truncated(buf.data(), buf.size() - 2);
  RecordReader reader(truncated);
  EXPECT_EQ(reader.message(), truncated);
  FieldView f;
  EXPECT_FALSE(reader.Next(f));
}

}  // namespace
}  // namespace phalanx::log::internal
