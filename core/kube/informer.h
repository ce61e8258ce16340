// Informer<T>: a Reflector feeding a Store<T> of lean decoded objects, with event handlers,
// periodic resync and HasSynced (client-go's SharedIndexInformer, one consumer).
//
// Memory and speed: list pages are never parsed into a JSON tree; simdjson splits them into the
// raw text of each item (raw_object.h) and each item is decoded once, as it arrives, into T:
//  - DecodeFunc (const Json&) -> T: convenient; the item is parsed with nlohmann first
//    (metadata.managedFields dropped unless InformerOptions::keep_managed_fields);
//  - RawDecode{(std::string_view object_json) -> T}: fastest; decode with simdjson yourself
//    (core/json/fast_json.h). Use this for big caches (extender: 100,000 pods).
// The cache holds only what T keeps. Use Informer<Json> (JsonInformer) for whole objects.
//
// Handlers run on the informer's thread, one at a time, after the store already reflects the
// change; keep them short (enqueue keys into a WorkQueue). Per object the sequence is exactly
// what the server did: a relist (after 410 Gone) emits updates only for objects whose
// resourceVersion changed, deletes for objects gone meanwhile, adds for new ones; replayed events
// with an already-seen resourceVersion are dropped. on_delete receives the final state when the
// server sent one, else the last known state. Resync calls on_update(obj, obj) for every object.
//
// Thread-safe. Start() once; Stop() (or the destructor) joins the threads.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <spdlog/spdlog.h>

#include "core/kube/reflector.h"
#include "core/kube/store.h"

namespace phalanx::kube {

struct InformerOptions {
  Resource resource;
  std::string ns;  // "" = all namespaces
  std::string label_selector, field_selector;
  int64_t page_size = 500;
  std::chrono::milliseconds resync_period{0};  // 0 = no resync
  std::string name;                            // for logs; default resource name
  bool keep_managed_fields = false;            // DecodeFunc path: keep metadata.managedFields
  // Reflector tuning (tests shorten these).
  std::chrono::seconds min_watch_timeout{300};
  Backoff::Options backoff{std::chrono::milliseconds(800), std::chrono::milliseconds(30'000),
                           std::chrono::milliseconds(0), true};
};

template <typename T>
class Informer final : private WatchSink {
 public:
  using Ptr = std::shared_ptr<const T>;
  using DecodeFunc = std::function<Result<T>(const Json&)>;
  using RawDecodeFunc = std::function<Result<T>(std::string_view object_json)>;
  struct RawDecode {
    RawDecodeFunc fn;
  };
  using IndexFunc = typename Store<T>::IndexFunc;
  struct Handlers {
    std::function<void(const T&)> on_add;
    std::function<void(const T& old_obj, const T& new_obj)> on_update;
    std::function<void(const T&)> on_delete;
  };

  Informer(KubeClient& client, InformerOptions options, DecodeFunc decode)
      : options_(std::move(options)),
        decode_(Guarded(ViaJson(std::move(decode), options_.keep_managed_fields))),
        reflector_(client, ReflectorOptionsFor(options_), *this) {}
  Informer(KubeClient& client, InformerOptions options, RawDecode decode)
      : options_(std::move(options)),
        decode_(Guarded(std::move(decode.fn))),
        reflector_(client, ReflectorOptionsFor(options_), *this) {}
  ~Informer() override { Stop(); }
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  // Before Start().
  void AddIndex(std::string name, IndexFunc fn) { store_.AddIndex(std::move(name), std::move(fn)); }
  // Any time; added later, the handler first gets on_add for every cached object.
  void AddHandlers(Handlers handlers) {
    std::lock_guard lock(dispatch_mu_);
    if (synced_.load() && handlers.on_add) {
      for (const auto& obj : store_.List()) handlers.on_add(*obj);
    }
    handlers_.push_back(std::move(handlers));
  }

  void Start() {
    reflector_thread_ = std::thread([this] { reflector_.Run(); });
    if (options_.resync_period.count() > 0) resync_thread_ = std::thread([this] { ResyncLoop(); });
  }
  void Stop() {
    {
      std::lock_guard lock(stop_mu_);
      stopped_ = true;
    }
    stop_cv_.notify_all();
    reflector_.Stop();
    if (reflector_thread_.joinable()) reflector_thread_.join();
    if (resync_thread_.joinable()) resync_thread_.join();
  }

  // True once the first complete list is in the store and its handlers ran.
  bool HasSynced() const { return synced_.load(); }
  bool WaitForSync(std::chrono::milliseconds timeout) const {
    std::unique_lock lock(stop_mu_);
    return stop_cv_.wait_for(lock, timeout, [&] { return synced_.load() || stopped_; }) && synced_.load();
  }

  Ptr Get(std::string_view key) const { return store_.Get(key); }
  std::vector<Ptr> List() const { return store_.List(); }
  std::vector<Ptr> ByIndex(std::string_view index, std::string_view value) const {
    return store_.ByIndex(index, value);
  }
  std::vector<Ptr> ByNamespace(std::string_view ns) const { return store_.ByNamespace(ns); }
  size_t Size() const { return store_.Size(); }
  const Store<T>& store() const { return store_; }
  const Reflector& reflector() const { return reflector_; }

 private:
  // A decoder that throws (nlohmann's at() on a missing field...) skips the object instead of
  // terminating the informer thread.
  static RawDecodeFunc Guarded(RawDecodeFunc decode) {
    return [decode = std::move(decode)](std::string_view text) -> Result<T> {
      try {
        return decode(text);
      } catch (const std::exception& e) {
        return InvalidArgumentError(std::string("decoder threw: ") + e.what());
      }
    };
  }

  static RawDecodeFunc ViaJson(DecodeFunc decode, bool keep_managed_fields) {
    return [decode = std::move(decode), keep_managed_fields](std::string_view text) -> Result<T> {
      // Drops metadata.managedFields (often a third of an object) while parsing.
      bool in_metadata = false;
      Json::parser_callback_t drop = [in_metadata](int depth, Json::parse_event_t event, Json& parsed) mutable {
        if (event != Json::parse_event_t::key) return true;
        if (depth == 1) in_metadata = parsed == "metadata";
        return !(depth == 2 && in_metadata && parsed == "managedFields");
      };
      Json j = keep_managed_fields ? Json::parse(text, nullptr, false) : Json::parse(text, drop, false);
      if (j.is_discarded()) return InvalidArgumentError("object is not valid JSON");
      return decode(j);
    };
  }

  static ReflectorOptions ReflectorOptionsFor(const InformerOptions& o) {
    ReflectorOptions r;
    r.resource = o.resource;
    r.ns = o.ns;
    r.label_selector = o.label_selector;
    r.field_selector = o.field_selector;
    r.page_size = o.page_size;
    r.min_watch_timeout = o.min_watch_timeout;
    r.backoff = o.backoff;
    r.name = o.name.empty() ? o.resource.resource : o.name;
    return r;
  }

  struct Pending {
    std::string resource_version;
    Ptr object;
  };

  // WatchSink, on the reflector thread.
  void BeginList() override { pending_.clear(); }
  Status ListItem(std::string_view object_json, const ObjectMeta& meta) override {
    auto decoded = decode_(object_json);
    if (!decoded.ok()) {
      spdlog::debug("{}: cannot decode {}: {}", reflector_name(), meta.Key(), decoded.status().message());
      return decoded.status();
    }
    pending_[meta.Key()] = {meta.resource_version, std::make_shared<const T>(std::move(*decoded))};
    return OkStatus();
  }
  void AbortList() override { pending_.clear(); }
  void EndList(const std::string&) override {
    std::lock_guard lock(dispatch_mu_);
    for (auto& [key, p] : pending_) {
      const std::string old_rv = store_.ResourceVersion(key);
      if (!old_rv.empty() && old_rv == p.resource_version) continue;  // unchanged
      Ptr cur = p.object;
      Ptr old = store_.Put(key, std::move(p.resource_version), std::move(p.object));
      Notify(old, cur);
    }
    for (const auto& key : store_.Keys()) {
      if (pending_.count(key) == 0) {
        if (Ptr gone = store_.Remove(key)) NotifyDelete(*gone);
      }
    }
    pending_.clear();
    pending_.rehash(0);
    if (!synced_.exchange(true)) {
      std::lock_guard stop_lock(stop_mu_);
      stop_cv_.notify_all();
    }
  }
  void Event(const WatchEvent& event) override {
    const std::string key = event.meta.Key();
    const std::string& rv = event.meta.resource_version;
    std::lock_guard lock(dispatch_mu_);
    if (event.type == EventType::kDeleted) {
      Ptr gone = store_.Remove(key);
      if (!gone) return;  // never seen or already deleted: nothing to tell
      auto final_state = decode_(event.object_json);
      NotifyDelete(final_state.ok() ? *final_state : *gone);
      return;
    }
    if (!rv.empty() && store_.ResourceVersion(key) == rv) {
      return;  // replay of what we already have
    }
    auto decoded = decode_(event.object_json);
    if (!decoded.ok()) {
      spdlog::warn("{}: cannot decode {}: {}", reflector_name(), key, decoded.status().message());
      return;
    }
    Ptr cur = std::make_shared<const T>(std::move(*decoded));
    Ptr old = store_.Put(key, rv, cur);
    Notify(old, cur);
  }

  void Notify(const Ptr& old, const Ptr& cur) {
    for (const auto& h : handlers_) {
      if (old) {
        if (h.on_update) h.on_update(*old, *cur);
      } else if (h.on_add) {
        h.on_add(*cur);
      }
    }
  }
  void NotifyDelete(const T& last) {
    for (const auto& h : handlers_) {
      if (h.on_delete) h.on_delete(last);
    }
  }

  void ResyncLoop() {
    while (true) {
      {
        std::unique_lock lock(stop_mu_);
        if (stop_cv_.wait_for(lock, options_.resync_period, [&] { return stopped_; })) return;
      }
      if (!synced_.load()) continue;
      std::lock_guard lock(dispatch_mu_);
      for (const auto& obj : store_.List()) {
        for (const auto& h : handlers_) {
          if (h.on_update) h.on_update(*obj, *obj);
        }
      }
    }
  }

  const std::string& reflector_name() const { return options_.name.empty() ? options_.resource.resource : options_.name; }

  const InformerOptions options_;
  const RawDecodeFunc decode_;
  Store<T> store_;
  Reflector reflector_;
  std::unordered_map<std::string, Pending> pending_;  // reflector thread only
  std::mutex dispatch_mu_;                            // serialises handlers and store changes
  std::vector<Handlers> handlers_;
  std::atomic<bool> synced_{false};
  mutable std::mutex stop_mu_;
  mutable std::condition_variable stop_cv_;
  bool stopped_ = false;
  std::thread reflector_thread_, resync_thread_;
};

// The whole object as JSON.
using JsonInformer = Informer<Json>;
inline JsonInformer::DecodeFunc JsonIdentity() {
  return [](const Json& j) -> Result<Json> { return j; };
}
// Index JSON objects by a label's value (objects without the label are not indexed).
inline JsonInformer::IndexFunc JsonLabelIndex(std::string label) {
  return [label = std::move(label)](const Json& j) -> std::vector<std::string> {
    const Json* labels = j.contains("metadata") ? &j["metadata"] : nullptr;
    if (!labels || !labels->contains("labels")) return {};
    const Json& l = (*labels)["labels"];
    auto it = l.find(label);
    if (it == l.end() || !it->is_string()) return {};
    return {it->get<std::string>()};
  };
}
// Index JSON objects by a string field given as a JSON pointer ("/spec/nodeName").
inline JsonInformer::IndexFunc JsonFieldIndex(std::string pointer) {
  return [ptr = Json::json_pointer(pointer)](const Json& j) -> std::vector<std::string> {
    if (!j.contains(ptr)) return {};
    const Json& v = j.at(ptr);
    if (!v.is_string() || v.get_ref<const std::string&>().empty()) return {};
    return {v.get<std::string>()};
  };
}

}  // namespace phalanx::kube
