#include "core/kube/raw_object.h"

#include <gtest/gtest.h>

#include <vector>

namespace phalanx::kube {
namespace {

TEST(RawObjectReaderTest, SplitsAListPageIntoRawItems) {
  RawObjectReader r;
  std::vector<std::string> items;
  auto page = r.ForEachItem(
      R"({"kind":"PodList","items":[{"metadata":{"name":"a"}} , {"metadata":{"name":"b\"x"},"spec":{"n":[1,{}]}}],
          "metadata":{"continue":"tok","resourceVersion":"42","remainingItemCount":3}})",
      [&](std::string_view item) { items.emplace_back(item); });
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(page->resource_version, "42");  // metadata after items works too
  EXPECT_EQ(page->continue_token, "tok");
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0], R"({"metadata":{"name":"a"}})");
  EXPECT_EQ(items[1], R"({"metadata":{"name":"b\"x"},"spec":{"n":[1,{}]}})");
  auto meta = r.Meta(items[1]);
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_EQ(meta->name, "b\"x");  // unescaped
}

TEST(RawObjectReaderTest, EmptyAndNullItems) {
  RawObjectReader r;
  int n = 0;
  auto page = r.ForEachItem(R"({"metadata":{"resourceVersion":"7"},"items":null})", [&](std::string_view) { ++n; });
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(page->resource_version, "7");
  EXPECT_EQ(n, 0);
  EXPECT_FALSE(r.ForEachItem(R"({"metadata":{}})", [&](std::string_view) {}).ok());
  EXPECT_FALSE(r.ForEachItem("[1]", [&](std::string_view) {}).ok());
  EXPECT_FALSE(r.ForEachItem(R"({"items":[1]})", [&](std::string_view) {}).ok());
}

TEST(RawObjectReaderTest, MetaOfNamespacedAndClusterObjects) {
  RawObjectReader r;
  auto pod = r.Meta(R"({"kind":"Pod","metadata":{"labels":{"name":"x"},"namespace":"ml","name":"a","resourceVersion":"9"}})");
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ(pod->Key(), "ml/a");
  EXPECT_EQ(pod->resource_version, "9");
  auto node = r.Meta(R"({"metadata":{"name":"n1"}})");
  ASSERT_TRUE(node.ok());
  EXPECT_EQ(node->Key(), "n1");
  EXPECT_FALSE(r.Meta(R"({"kind":"Pod"})").ok());
  EXPECT_FALSE(r.Meta("not json").ok());
}

TEST(RawObjectReaderTest, WatchLines) {
  RawObjectReader r;
  std::string type, object;
  ASSERT_TRUE(r.WatchLine(R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})", type, object).ok());
  EXPECT_EQ(type, "ADDED");
  EXPECT_EQ(object, R"({"metadata":{"name":"a"}})");
  EXPECT_FALSE(r.WatchLine(R"({"type":"ADDED"})", type, object).ok());
}

}  // namespace
}  // namespace phalanx::kube
