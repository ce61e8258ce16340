// The Store's watch side: registration with replay, fan-out of events, bookmarks, history.
#include <algorithm>

#include <fmt/format.h>

#include "tests/fakes/apiserver/store.h"

namespace phalanx::fakes::apiserver {
namespace {

// Replays are sent in chunks of about this size rather than one chunk per event.
constexpr size_t kReplayChunkBytes = 256 << 10;

void AppendEvent(std::string* out, std::string_view type, const StoredObject& object) {
  out->append("{\"type\":\"").append(type).append("\",\"object\":");
  out->append(object.json);
  out->append("}\n");
}

}  // namespace

bool Store::MatchesWatch(const Watcher& w, const StoredObject& object) const {
  if (!w.options.namespace_.empty() && w.kind.namespaced && object.namespace_ != w.options.namespace_) {
    return false;
  }
  return w.options.labels.Matches(object) && w.options.fields.Matches(object);
}

void Store::Deliver(Watcher& w, const Event& event, std::string* out) const {
  const bool in_new = event.object && MatchesWatch(w, *event.object);
  const bool in_prev = event.prev && MatchesWatch(w, *event.prev);
  const std::string_view type = event.type;
  if (type == "ADDED") {
    if (in_new) AppendEvent(out, "ADDED", *event.object);
  } else if (type == "MODIFIED") {
    // An object entering the selector's set is ADDED, one leaving it DELETED (as the real
    // watch cache does), so a client's cache stays exactly the filtered set.
    if (in_new && in_prev) {
      AppendEvent(out, "MODIFIED", *event.object);
    } else if (in_new) {
      AppendEvent(out, "ADDED", *event.object);
    } else if (in_prev) {
      AppendEvent(out, "DELETED", *event.object);
    }
  } else if (in_new || in_prev) {
    AppendEvent(out, "DELETED", *event.object);
  }
}

void Store::Broadcast(const Event& event) {
  std::vector<uint64_t> gone;
  for (auto& [id, w] : watchers_) {
    if (w.storage_key != event.storage_key) continue;
    std::string out;
    Deliver(w, event, &out);
    if (!out.empty() && !w.sink->Send(std::move(out))) gone.push_back(id);
  }
  for (uint64_t id : gone) watchers_.erase(id);
}

ApiResult<uint64_t> Store::Watch(const KindInfo& kind, WatchOptions options,
                                 std::shared_ptr<WatchSink> sink) {
  std::lock_guard<std::mutex> lock(mu_);
  Table& table = TableFor(kind);
  Watcher w{kind.storage_key(), std::move(options), std::move(sink), kind};
  std::string out;
  auto flush = [&]() -> bool {
    if (out.empty()) return true;
    const bool ok = w.sink->Send(std::move(out));
    out.clear();
    return ok;
  };
  if (w.options.resource_version.has_value() && *w.options.resource_version != 0) {
    const uint64_t from = *w.options.resource_version;
    if (from < compacted_rv_) {
      return Gone(fmt::format("too old resource version: {} ({})", from, compacted_rv_));
    }
    auto it = std::upper_bound(events_.begin(), events_.end(), from,
                               [](uint64_t rv, const Event& e) { return rv < e.rv; });
    for (; it != events_.end(); ++it) {
      if (it->storage_key != w.storage_key) continue;
      Deliver(w, *it, &out);
      if (out.size() >= kReplayChunkBytes && !flush()) return uint64_t{0};
    }
  } else {
    const std::string prefix =
        kind.namespaced && !w.options.namespace_.empty() ? w.options.namespace_ + "/" : "";
    for (auto it = table.objects.lower_bound(prefix);
         it != table.objects.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
      if (!MatchesWatch(w, *it->second)) continue;
      AppendEvent(&out, "ADDED", *it->second);
      if (out.size() >= kReplayChunkBytes && !flush()) return uint64_t{0};
    }
  }
  if (!flush()) return uint64_t{0};
  const uint64_t id = next_watch_id_++;
  watchers_.emplace(id, std::move(w));
  return id;
}

void Store::StopWatch(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = watchers_.find(id);
  if (it == watchers_.end()) return;
  it->second.sink->Close();
  watchers_.erase(it);
}

void Store::SendBookmarks() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<uint64_t> gone;
  for (auto& [id, w] : watchers_) {
    if (!w.options.bookmarks) continue;
    std::string line = fmt::format(
        "{{\"type\":\"BOOKMARK\",\"object\":{{\"kind\":\"{}\",\"apiVersion\":\"{}\","
        "\"metadata\":{{\"resourceVersion\":\"{}\"}}}}}}\n",
        w.kind.kind, w.kind.api_version(), rv_);
    if (!w.sink->Send(std::move(line))) gone.push_back(id);
  }
  for (uint64_t id : gone) watchers_.erase(id);
}

void Store::DropAllWatches() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [id, w] : watchers_) w.sink->Close();
  watchers_.clear();
}

void Store::ReapGoneWatches() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = watchers_.begin(); it != watchers_.end();) {
    it = it->second.sink->Gone() ? watchers_.erase(it) : std::next(it);
  }
}

size_t Store::watch_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return watchers_.size();
}

void Store::CompactHistory() {
  std::lock_guard<std::mutex> lock(mu_);
  events_.clear();
  compacted_rv_ = rv_;
}

}  // namespace phalanx::fakes::apiserver
