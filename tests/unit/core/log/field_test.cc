#include "core/log/field.h"

#include <chrono>
#include <string>

#include <gtest/gtest.h>

#include "core/base/ids.h"

namespace phalanx::log {
namespace {

enum class Tier { kSpot = 100 };

struct Streamable {
  friend std::ostream& operator<<(std::ostream& os, const Streamable&) { return os << "streamed"; }
};

template <typename T>
T Get(const Field& f) {
  EXPECT_TRUE(std::holds_alternative<T>(f.value())) << "wrong kind, index " << f.value().index();
  return std::holds_alternative<T>(f.value()) ? std::get<T>(f.value()) : T{};
}

TEST(FieldTest, NumbersKeepTheirKind) {
  EXPECT_EQ(Get<int64_t>(kv("n", -4)), -4);
  EXPECT_EQ(Get<uint64_t>(kv("n", size_t{7})), 7u);
  EXPECT_EQ(Get<double>(kv("ratio", 0.25f)), 0.25);
  EXPECT_EQ(Get<bool>(kv("ok", true)), true);
  EXPECT_EQ(Get<int64_t>(kv("tier", Tier::kSpot)), 100);
  EXPECT_EQ(Get<std::string>(kv("c", 'x')), "x");
}

TEST(FieldTest, LvalueStringsAreReferencedAndRvaluesOwned) {
  std::string gang = "ml/llama";
  Field view = kv("gang", gang);
  EXPECT_EQ(Get<std::string_view>(view).data(), gang.data());
  Field owned = kv("gang", std::string("ml/bert"));
  EXPECT_EQ(Get<std::string>(owned), "ml/bert");
  EXPECT_EQ(Get<std::string_view>(kv("s", "literal")), "literal");
  const char* null = nullptr;
  EXPECT_EQ(Get<std::string_view>(kv("s", null)), "(null)");
}

TEST(FieldTest, RendersStatusDurationIdsAndStreamables) {
  EXPECT_EQ(Get<std::string>(kv("err", AbortedError("409 Conflict"))), "ABORTED: 409 Conflict");
  EXPECT_EQ(Get<std::string>(kv("after", std::chrono::milliseconds(250))), "0.25s");
  NodeName node("gpu-17");
  EXPECT_EQ(Get<std::string_view>(kv("node", node)), "gpu-17");
  EXPECT_EQ(Get<std::string>(kv("node", NodeName("gpu-18"))), "gpu-18");
  EXPECT_EQ(Get<std::string>(kv("x", Streamable{})), "streamed");
}

TEST(FieldTest, BracedPairsBuildFields) {
  const std::initializer_list<Field> fields = {{"gang", "ml/llama"}, {"nodes", 4}};
  EXPECT_EQ(fields.begin()->key(), "gang");
  EXPECT_EQ(Get<int64_t>(*(fields.begin() + 1)), 4);
}

}  // namespace
}  // namespace phalanx::log
