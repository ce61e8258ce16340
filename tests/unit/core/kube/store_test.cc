#include "core/kube/store.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace phalanx::kube {
namespace {

struct Obj {
  std::string node;
  std::vector<std::string> tags;
};

std::vector<std::string> Nodes(const std::vector<std::shared_ptr<const Obj>>& v) {
  std::vector<std::string> out;
  for (const auto& o : v) out.push_back(o->node);
  std::sort(out.begin(), out.end());
  return out;
}

TEST(StoreTest, IndexesFollowPutsAndRemoves) {
  Store<Obj> s;
  s.AddIndex("tag", [](const Obj& o) { return o.tags; });
  s.AddIndex("node", [](const Obj& o) { return std::vector<std::string>{o.node}; });
  EXPECT_EQ(s.Put("ml/a", "1", std::make_shared<const Obj>(Obj{"n1", {"x", "y"}})), nullptr);
  EXPECT_EQ(s.Put("ml/b", "2", std::make_shared<const Obj>(Obj{"n1", {"y"}})), nullptr);
  EXPECT_EQ(s.Put("dev/c", "3", std::make_shared<const Obj>(Obj{"n2", {}})), nullptr);
  for (int i = 0; i < 1000; ++i) {  // force rehashing: index pointers must stay valid
    s.Put("bulk/" + std::to_string(i), "1", std::make_shared<const Obj>(Obj{"bulk", {}}));
  }
  EXPECT_EQ(Nodes(s.ByIndex("tag", "y")), (std::vector<std::string>{"n1", "n1"}));
  EXPECT_EQ(s.ByNamespace("ml").size(), 2u);
  EXPECT_EQ(s.ByIndex("node", "bulk").size(), 1000u);

  auto old = s.Put("ml/a", "4", std::make_shared<const Obj>(Obj{"n3", {"z"}}));
  ASSERT_NE(old, nullptr);
  EXPECT_EQ(old->node, "n1");
  EXPECT_EQ(s.ResourceVersion("ml/a"), "4");
  EXPECT_EQ(s.ByIndex("tag", "x").size(), 0u);
  EXPECT_EQ(Nodes(s.ByIndex("tag", "y")), (std::vector<std::string>{"n1"}));
  EXPECT_EQ(Nodes(s.ByIndex("node", "n3")), (std::vector<std::string>{"n3"}));

  EXPECT_EQ(s.Remove("ml/b")->node, "n1");
  EXPECT_EQ(s.Remove("ml/b"), nullptr);
  EXPECT_EQ(s.ByIndex("tag", "y").size(), 0u);
  EXPECT_EQ(s.ByNamespace("ml").size(), 1u);
  EXPECT_EQ(s.Get("ml/b"), nullptr);
  EXPECT_EQ(s.ResourceVersion("ml/b"), "");
  EXPECT_EQ(s.Size(), 1002u);
  EXPECT_EQ(s.ByNamespace("").size(), 0u);  // cluster-scoped keys have no namespace entry
}

}  // namespace
}  // namespace phalanx::kube
