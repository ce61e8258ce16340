// OrderSums: values keyed by an ordered key, with the sum of the values of every key below
// a given one in O(log n) (a red-black tree whose nodes also hold their subtree's sum:
// libstdc++'s policy-based tree with a node update). The engine keeps the GPUs of waiting
// gangs in queue order here, so a pass that skips a run of them adds the run's GPUs in
// one step instead of gang by gang (engine.h, "gangs that cannot start").
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include <ext/pb_ds/assoc_container.hpp>
#include <ext/pb_ds/tree_policy.hpp>

namespace phalanx::scheduling::internal {

template <class NodeCItr, class NodeItr, class Cmp, class Alloc>
struct SubtreeSum {
  using metadata_type = int64_t;
  // Called by the tree whenever a node's children change.
  void operator()(NodeItr it, NodeCItr end) {
    NodeItr l = it.get_l_child();
    NodeItr r = it.get_r_child();
    int64_t sum = (**it).second;
    if (l != end) sum += l.get_metadata();
    if (r != end) sum += r.get_metadata();
    const_cast<int64_t&>(it.get_metadata()) = sum;
  }
  virtual NodeCItr node_begin() const = 0;
  virtual NodeCItr node_end() const = 0;
  virtual ~SubtreeSum() = default;
};

template <class Key>
class OrderSums {
 public:
  void Add(const Key& key, int value) { tree_.insert({key, value}); }
  void Erase(const Key& key) { tree_.erase(key); }
  bool empty() const { return tree_.empty(); }
  size_t size() const { return tree_.size(); }
  // Sum of the values of keys < `key`.
  int64_t Below(const Key& key) const {
    auto it = tree_.node_begin();
    const auto end = tree_.node_end();
    int64_t sum = 0;
    while (it != end) {
      auto l = it.get_l_child();
      const auto& entry = **it;
      if (key < entry.first) {
        it = l;
      } else {
        sum += l == end ? 0 : l.get_metadata();
        if (!(entry.first < key)) break;  // equal: its own value is not below
        sum += entry.second;
        it = it.get_r_child();
      }
    }
    return sum;
  }
  int64_t Total() const { return tree_.empty() ? 0 : tree_.node_begin().get_metadata(); }
  // The first key after `key`; nullopt: none.
  std::optional<Key> After(const Key& key) const {
    auto it = tree_.upper_bound(key);
    if (it == tree_.end()) return std::nullopt;
    return it->first;
  }
  // Sum over [from, to).
  int64_t Between(const Key& from, const Key& to) const { return Below(to) - Below(from); }

 private:
  using Tree = __gnu_pbds::tree<Key, int, std::less<Key>, __gnu_pbds::rb_tree_tag, SubtreeSum>;
  Tree tree_;
};

}  // namespace phalanx::scheduling::internal
