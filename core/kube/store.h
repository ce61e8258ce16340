// Store<T>: the informer's thread-safe cache of decoded objects by key ("ns/name" or "name"),
// with indexes (client-go's ThreadSafeStore + Indexer). Objects are immutable once stored and
// handed out as shared_ptr<const T>, so readers never copy and never see a torn object.
// The namespace index is built in; others are functions T -> index values (a label's value,
// spec.nodeName, ...). Each entry keeps the object's resourceVersion to tell real changes from
// replays. Thread-safe (reader/writer lock).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace phalanx::kube {

template <typename T>
class Store {
 public:
  using Ptr = std::shared_ptr<const T>;
  using IndexFunc = std::function<std::vector<std::string>(const T&)>;

  // Before any object is stored.
  void AddIndex(std::string name, IndexFunc fn) {
    std::unique_lock lock(mu_);
    index_funcs_[std::move(name)] = std::move(fn);
  }

  // Inserts or replaces; returns the previous object (null if new).
  Ptr Put(const std::string& key, std::string resource_version, Ptr object) {
    std::unique_lock lock(mu_);
    auto [it, inserted] = items_.try_emplace(key);
    Ptr old = inserted ? nullptr : std::move(it->second.object);
    if (old) Unindex(key, *old);
    it->second.object = std::move(object);
    it->second.resource_version = std::move(resource_version);
    Index(key, *it->second.object);
    return old;
  }

  // Removes; returns the removed object (null if absent).
  Ptr Remove(const std::string& key) {
    std::unique_lock lock(mu_);
    auto it = items_.find(key);
    if (it == items_.end()) return nullptr;
    Ptr old = std::move(it->second.object);
    Unindex(key, *old);
    items_.erase(it);
    return old;
  }

  Ptr Get(std::string_view key) const {
    std::shared_lock lock(mu_);
    auto it = items_.find(std::string(key));
    return it == items_.end() ? nullptr : it->second.object;
  }
  // "" when absent.
  std::string ResourceVersion(std::string_view key) const {
    std::shared_lock lock(mu_);
    auto it = items_.find(std::string(key));
    return it == items_.end() ? std::string() : it->second.resource_version;
  }
  std::vector<Ptr> List() const {
    std::shared_lock lock(mu_);
    std::vector<Ptr> out;
    out.reserve(items_.size());
    for (const auto& [k, e] : items_) out.push_back(e.object);
    return out;
  }
  std::vector<std::string> Keys() const {
    std::shared_lock lock(mu_);
    std::vector<std::string> out;
    out.reserve(items_.size());
    for (const auto& [k, e] : items_) out.push_back(k);
    return out;
  }
  // Objects whose index `name` has `value`. Unknown index: empty.
  std::vector<Ptr> ByIndex(std::string_view name, std::string_view value) const {
    std::shared_lock lock(mu_);
    std::vector<Ptr> out;
    auto idx = indexes_.find(std::string(name));
    if (idx == indexes_.end()) return out;
    auto keys = idx->second.find(std::string(value));
    if (keys == idx->second.end()) return out;
    out.reserve(keys->second.size());
    for (const Item* item : keys->second) out.push_back(item->second.object);
    return out;
  }
  // Objects in namespace `ns` (keys "ns/...").
  std::vector<Ptr> ByNamespace(std::string_view ns) const { return ByIndex(kNamespaceIndex, ns); }
  size_t Size() const {
    std::shared_lock lock(mu_);
    return items_.size();
  }

  static constexpr const char* kNamespaceIndex = "namespace";

 private:
  struct Entry {
    Ptr object;
    std::string resource_version;
  };
  using Item = std::pair<const std::string, Entry>;

  // Indexes point at the items_ nodes (stable until erased; unindexed before) instead of copying
  // keys: ~100 bytes less per object and index.
  void Index(const std::string& key, const T& object) {
    const Item* item = &*items_.find(key);
    if (auto slash = key.find('/'); slash != std::string::npos) {
      indexes_[kNamespaceIndex][key.substr(0, slash)].insert(item);
    }
    for (const auto& [name, fn] : index_funcs_) {
      for (auto& v : fn(object)) indexes_[name][std::move(v)].insert(item);
    }
  }
  void Unindex(const std::string& key, const T& object) {
    const Item* item = &*items_.find(key);
    auto drop = [&](const std::string& name, const std::string& value) {
      auto idx = indexes_.find(name);
      if (idx == indexes_.end()) return;
      auto keys = idx->second.find(value);
      if (keys == idx->second.end()) return;
      keys->second.erase(item);
      if (keys->second.empty()) idx->second.erase(keys);
    };
    if (auto slash = key.find('/'); slash != std::string::npos) drop(kNamespaceIndex, key.substr(0, slash));
    for (const auto& [name, fn] : index_funcs_) {
      for (const auto& v : fn(object)) drop(name, v);
    }
  }

  mutable std::shared_mutex mu_;
  std::unordered_map<std::string, Entry> items_;
  std::map<std::string, IndexFunc> index_funcs_;
  std::unordered_map<std::string, std::unordered_map<std::string, std::unordered_set<const Item*>>> indexes_;
};

}  // namespace phalanx::kube
