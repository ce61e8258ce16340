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

// The batch form answers exactly what one Find per name does: present, absent, repeated
// names, and after erases have shifted probe runs.
TEST(NodeNameIndexTest, FindManyMatchesFindPerName) {
  std::vector<std::string> names(3000);
  NodeNameIndex index;
  auto name_of = [&](int32_t i) -> std::string_view { return names[static_cast<size_t>(i)]; };
  std::mt19937 rng(11);
  for (size_t i = 0; i < names.size(); ++i) {
    names[i] = "gpu-node-" + std::to_string(rng() % 1000000) + "-" + std::to_string(i);
    index.Insert(names[i], static_cast<int32_t>(i));
  }
  for (size_t i = 0; i < names.size(); i += 3) {
    index.Erase(names[i], name_of);
    names[i] = "erased-" + std::to_string(i);  // no longer in the index
  }
  std::vector<std::string> asked;
  for (int k = 0; k < 5000; ++k) {
    const size_t i = rng() % names.size();
    asked.push_back(k % 7 == 0 ? "absent-" + std::to_string(k) : names[i]);
  }
  std::vector<std::string_view> views(asked.begin(), asked.end());
  std::vector<int32_t> out(views.size(), 12345);
  int prefetched = 0;
  index.FindMany(views, out, name_of, [&](int32_t) { ++prefetched; });
  for (size_t k = 0; k < views.size(); ++k) {
    ASSERT_EQ(out[k], index.Find(views[k], name_of).value_or(-1)) << views[k];
  }
  EXPECT_GT(prefetched, 0);
}

// A slot whose hash matches but whose name does not (what a hash collision looks like) must
// not be taken for the name: the batch falls back to the full probe.
TEST(NodeNameIndexTest, FindManyConfirmsTheNameBehindAMatchingHash) {
  std::vector<std::string> names = {"a", "b"};
  NodeNameIndex index;
  auto name_of = [&](int32_t i) -> std::string_view { return names[static_cast<size_t>(i)]; };
  index.Insert("a", 0);
  index.Insert("b", 1);
  names[0] = "not-a";  // index 0 now names something else under "a"'s hash
  std::vector<std::string_view> views = {"a", "b"};
  std::vector<int32_t> out(2);
  index.FindMany(views, out, name_of, [](int32_t) {});
  EXPECT_EQ(out, (std::vector<int32_t>{-1, 1}));
  NodeNameIndex empty;
  empty.FindMany(views, out, name_of, [](int32_t) {});
  EXPECT_EQ(out, (std::vector<int32_t>{-1, -1}));
}

TEST(NodeNameIndexTest, EmptyIndexFindsNothing) {
  NodeNameIndex index;
  EXPECT_EQ(index.Find("a", [](int32_t) { return std::string_view(); }), std::nullopt);
  index.Erase("a", [](int32_t) { return std::string_view(); });
  EXPECT_EQ(index.size(), 0u);
}

}  // namespace
}  // namespace phalanx::placement
