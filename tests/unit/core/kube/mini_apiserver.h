// MiniApiServer: just enough of kube-apiserver's list/watch semantics for one resource type to
// test the reflector and informer (the full fake lives in tests/fakes/apiserver): monotonically
// increasing resourceVersions, paginated lists, watches that replay history after a given
// resourceVersion and then stream live events, bookmarks, 410 Gone for compacted versions
// (as HTTP 410 or as an ERROR event), and dropping all watches. Thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/http/http_server.h"

namespace phalanx::kube::testing {

class MiniApiServer {
 public:
  using Json = nlohmann::json;
  enum class GoneStyle { kHttp410, kErrorEvent };

  explicit MiniApiServer(std::string path = "/api/v1/pods") : path_(std::move(path)), server_({}) {
    server_.HandlePrefix("GET", path_, [this](http::Request&& r, http::ResponseWriter&& w) {
      if (r.QueryValue("watch") == std::optional<std::string_view>("1")) {
        Watch(r, std::move(w));
      } else {
        w.Reply(List(r));
      }
    });
    started_ = server_.Start();
  }
  ~MiniApiServer() {
    DropWatches();
    server_.Shutdown(std::chrono::milliseconds(200));
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_.port()); }
  const Status& started() const { return started_; }

  // Mutations (each gets the next resourceVersion and is streamed to live watches).
  void Upsert(Json object) {
    std::lock_guard lock(mu_);
    const std::string key = Key(object);
    const bool exists = objects_.count(key) > 0;
    object["metadata"]["resourceVersion"] = std::to_string(++rv_);
    objects_[key] = object;
    Emit(exists ? "MODIFIED" : "ADDED", object);
  }
  void Delete(const std::string& key) {
    std::lock_guard lock(mu_);
    auto it = objects_.find(key);
    if (it == objects_.end()) return;
    Json object = it->second;
    object["metadata"]["resourceVersion"] = std::to_string(++rv_);
    objects_.erase(it);
    Emit("DELETED", object);
  }
  void Bookmark() {
    std::lock_guard lock(mu_);
    Json line = {{"type", "BOOKMARK"},
                 {"object", {{"kind", "Pod"}, {"apiVersion", "v1"}, {"metadata", {{"resourceVersion", std::to_string(rv_)}}}}}};
    Broadcast(line.dump() + "\n");
  }
  // Forgets history up to the current version: watches from older versions get 410.
  void Compact() {
    std::lock_guard lock(mu_);
    history_.clear();
    compacted_ = rv_;
  }
  // Ends every live watch stream cleanly (as a server timeout or restart does).
  void DropWatches() {
    std::lock_guard lock(mu_);
    for (auto& w : watchers_) w.EndStream();
    watchers_.clear();
  }
  void set_gone_style(GoneStyle s) {
    std::lock_guard lock(mu_);
    gone_style_ = s;
  }
  // Runs `fn` atomically with respect to watch (re)connections.
  template <typename F>
  void Atomically(F fn) {
    std::lock_guard lock(mu_);
    fn();
  }
  // Same as the public mutations, for use inside Atomically().
  void DropWatchesLocked() {
    for (auto& w : watchers_) w.EndStream();
    watchers_.clear();
  }

  std::vector<std::string> targets() const {
    std::lock_guard lock(mu_);
    return targets_;
  }
  size_t live_watches() const {
    std::lock_guard lock(mu_);
    return watchers_.size();
  }
  uint64_t resource_version() const {
    std::lock_guard lock(mu_);
    return rv_;
  }

 private:
  static std::string Key(const Json& o) {
    const auto& m = o["metadata"];
    return m.value("namespace", "") + "/" + m.value("name", "");
  }

  http::Response List(const http::Request& r) {
    std::lock_guard lock(mu_);
    targets_.push_back(r.target);
    size_t limit = 0, offset = 0;
    if (auto l = r.QueryValue("limit")) limit = std::stoul(std::string(*l));
    if (auto c = r.QueryValue("continue")) offset = std::stoul(std::string(*c));
    Json list = {{"kind", "PodList"}, {"apiVersion", "v1"}, {"metadata", {{"resourceVersion", std::to_string(rv_)}}}, {"items", Json::array()}};
    size_t i = 0;
    for (const auto& [k, o] : objects_) {
      if (i++ < offset) continue;
      if (limit > 0 && list["items"].size() == limit) {
        list["metadata"]["continue"] = std::to_string(offset + limit);
        break;
      }
      list["items"].push_back(o);
    }
    return {200, "application/json", {}, list.dump()};
  }

  void Watch(const http::Request& r, http::ResponseWriter&& w) {
    std::lock_guard lock(mu_);
    targets_.push_back(r.target);
    uint64_t from = 0;
    if (auto v = r.QueryValue("resourceVersion"); v && !v->empty()) from = std::stoull(std::string(*v));
    const Json gone = {{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"}, {"reason", "Expired"},
                       {"code", 410}, {"message", "too old resource version: " + std::to_string(from)}};
    if (from < compacted_) {
      if (gone_style_ == GoneStyle::kHttp410) {
        w.Reply({410, "application/json", {}, gone.dump()});
        return;
      }
      w.StartStream(200, "application/json");
      w.WriteChunk(Json{{"type", "ERROR"}, {"object", gone}}.dump() + "\n");
      w.EndStream();
      return;
    }
    w.StartStream(200, "application/json");
    for (const auto& [rv, line] : history_) {
      if (rv > from) w.WriteChunk(line);
    }
    watchers_.push_back(std::move(w));
  }

  void Emit(const char* type, const Json& object) {
    std::string line = Json{{"type", type}, {"object", object}}.dump() + "\n";
    history_.emplace_back(rv_, line);
    Broadcast(line);
  }
  void Broadcast(const std::string& line) {
    for (auto& w : watchers_) w.WriteChunk(line);
  }

  const std::string path_;
  http::HttpServer server_;
  Status started_;
  mutable std::mutex mu_;
  uint64_t rv_ = 100;
  uint64_t compacted_ = 0;
  GoneStyle gone_style_ = GoneStyle::kHttp410;
  std::map<std::string, Json> objects_;
  std::vector<std::pair<uint64_t, std::string>> history_;
  std::vector<http::ResponseWriter> watchers_;
  std::vector<std::string> targets_;
};

inline nlohmann::json Pod(const std::string& ns, const std::string& name, const std::string& node = "",
                          const std::string& app = "") {
  nlohmann::json p = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", {{"namespace", ns}, {"name", name}}},
                      {"spec", {{"containers", nlohmann::json::array()}}}};
  if (!node.empty()) p["spec"]["nodeName"] = node;
  if (!app.empty()) p["metadata"]["labels"]["app"] = app;
  return p;
}

}  // namespace phalanx::kube::testing
