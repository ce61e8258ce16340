#include "core/kube/raw_object.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <fmt/format.h>

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

// One reader serves list pages and watch lines (one parser): every cut of a watch line or a page
// read after a longer page is an error or gives text from its own input, never from the page
// before (the simdjson stale-padding finding of fuzz/regressions/extender_filter_args).
TEST(RawObjectReaderTest, CutInputAfterALongerPageNeverReadsOutsideIt) {
  std::string longer = R"({"kind":"PodList","metadata":{"resourceVersion":"12"},"items":[)";
  for (int i = 0; i < 30; ++i) {
    longer += fmt::format(R"({}{{"metadata":{{"name":"p{}","namespace":"ns"}},"spec":{{"c":[{{"n":"{}"}},[1,2]]}}}})",
                          i == 0 ? "" : ",", i, i);
  }
  longer += "]}";
  const std::string line = R"({"type":"ADDED","object":{"metadata":{"name":"a"},"spec":{"x":[{"y":"}"},2]}}})";
  const std::string page = R"({"metadata":{"resourceVersion":"3"},"items":[{"metadata":{"name":"a"}},{"b":[{}]}]})";
  auto inside = [](std::string_view part, const std::string& whole) {
    return part.empty() || whole.find(part) != std::string::npos;
  };
  int checked = 0;
  for (size_t shift = 0; shift < 64; ++shift) {  // which stale byte lies past each cut
    const std::string before = longer.substr(shift) + longer.substr(0, shift);
    for (size_t cut = 1; cut < line.size(); ++cut) {
      RawObjectReader r;
      (void)r.ForEachItem(before, [](std::string_view) {});
      const std::string input = line.substr(0, cut);
      std::string type, object;
      if (r.WatchLine(input, type, object).ok()) {
        EXPECT_TRUE(inside(object, input)) << input;
      }
      ++checked;
    }
    for (size_t cut = 1; cut < page.size(); ++cut) {
      RawObjectReader r;
      (void)r.ForEachItem(before, [](std::string_view) {});
      const std::string input = page.substr(0, cut);
      (void)r.ForEachItem(input, [&](std::string_view item) { EXPECT_TRUE(inside(item, input)) << input; });
      ++checked;
    }
  }
  EXPECT_GT(checked, 5000);
}

}  // namespace
}  // namespace phalanx::kube
