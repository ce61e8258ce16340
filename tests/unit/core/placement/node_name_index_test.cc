// NodeNameIndex against std::unordered_map under random inserts and erases (the erase is a
// backward shift, the part most easily got wrong), including wrap-around at the table's end.
#include "core/placement/node_name_index.h"

#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include <gtest/gtest.h>

namespace phalanx::placement {
namespace {

TEST(NodeNameIndexTest, MatchesAnUnorderedMapUnderRandomInsertsAndErases) {
  std::vector<std::string> names(4096);  // index -> name ("" = free)
  std::unordered_map<std::string, int32_t> reference;
  NodeNameIndex index;
  auto name_of = [&](int32_t i) -> std::string_view { return names[static_cast<size_t>(i)]; };
  std::mt19937 rng(7);
  for (int step = 0; step < 200000; ++step) {
    const int32_t i = static_cast<int32_t>(rng() % names.size());
    std::string& slot = names[static_cast<size_t>(i)];
    if (slot.empty()) {
      slot = "node-" + std::to_string(rng() % 100000) + "-" + std::to_string(i);
      index.Insert(slot, i);
      reference[slot] = i;
    } else {
      index.Erase(slot, name_of);
      reference.erase(slot);
      slot.clear();
    }
    if (step % 1000 == 0) {
      ASSERT_EQ(index.size(), reference.size());
      for (const auto& [name, idx] : reference) ASSERT_EQ(index.Find(name, name_of), idx) << name;
      ASSERT_EQ(index.Find("absent", name_of), std::nullopt);
    }
  }
}

TEST(NodeNameIndexTest, EmptyIndexFindsNothing) {
  NodeNameIndex index;
  EXPECT_EQ(index.Find("a", [](int32_t) { return std::string_view(); }), std::nullopt);
  index.Erase("a", [](int32_t) { return std::string_view(); });
  EXPECT_EQ(index.size(), 0u);
}

}  // namespace
}  // namespace phalanx::placement
