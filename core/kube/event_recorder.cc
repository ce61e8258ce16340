#include "core/kube/event_recorder.h"

#include <ctime>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace phalanx::kube {

ObjectReference ObjectReference::FromObject(const Json& object) {
  ObjectReference r;
  r.api_version = object.value("apiVersion", "");
  r.kind = object.value("kind", "");
  if (auto m = object.find("metadata"); m != object.end() && m->is_object()) {
    r.ns = m->value("namespace", "");
    r.name = m->value("name", "");
    r.uid = m->value("uid", "");
    r.resource_version = m->value("resourceVersion", "");
  }
  return r;
}

EventRecorder::EventRecorder(KubeClient& client, EventRecorderOptions options, const Clock* clock)
    : client_(client), options_(std::move(options)), clock_(clock ? clock : &client.clock()) {}

EventRecorder::~EventRecorder() { Stop(); }

uint64_t EventRecorder::dropped() const {
  std::lock_guard lock(mu_);
  return dropped_;
}

void EventRecorder::Record(const ObjectReference& regarding, std::string_view type, std::string_view reason,
                           std::string_view action, std::string_view note) {
  std::string n(note.substr(0, 1024));
  std::string key = fmt::format("{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}", regarding.kind, regarding.ns,
                                regarding.name, regarding.uid, type, reason, action, n);
  std::lock_guard lock(mu_);
  const MonotonicTime now = clock_->Now();
  auto it = entries_.find(key);
  if (it != entries_.end() && now - it->second.last_seen < options_.series_window) {
    ++it->second.count;
    it->second.last_seen = now;
    it->second.last_seen_wall = clock_->WallNow();
    return;
  }
  if (it == entries_.end() && entries_.size() >= options_.max_queue) {
    ++dropped_;
    return;
  }
  Entry e;
  e.regarding = regarding;
  e.type = std::string(type);
  e.reason = std::string(reason);
  e.action = std::string(action);
  e.note = std::move(n);
  e.count = 1;
  e.last_seen = now;
  e.last_seen_wall = clock_->WallNow();
  entries_[key] = std::move(e);  // a stale entry (outside the window) starts a new Event
}

std::string EventRecorder::MicroTime(SystemTime t) const {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(us / 1'000'000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, us % 1'000'000);
}

Json EventRecorder::NewEvent(const Entry& e) const {
  Json regarding = {{"apiVersion", e.regarding.api_version}, {"kind", e.regarding.kind}, {"name", e.regarding.name}};
  if (!e.regarding.ns.empty()) regarding["namespace"] = e.regarding.ns;
  if (!e.regarding.uid.empty()) regarding["uid"] = e.regarding.uid;
  if (!e.regarding.resource_version.empty()) regarding["resourceVersion"] = e.regarding.resource_version;
  Json ev = {{"apiVersion", "events.k8s.io/v1"},
             {"kind", "Event"},
             {"metadata", {{"name", e.event_name}, {"namespace", e.regarding.ns.empty() ? "default" : e.regarding.ns}}},
             {"eventTime", MicroTime(e.last_seen_wall)},
             {"reportingController", options_.reporting_controller},
             {"reportingInstance", options_.reporting_instance},
             {"action", e.action},
             {"reason", e.reason},
             {"type", e.type},
             {"note", e.note},
             {"regarding", regarding}};
  if (e.count > 1) ev["series"] = {{"count", e.count}, {"lastObservedTime", MicroTime(e.last_seen_wall)}};
  return ev;
}

Status EventRecorder::Flush(bool force_series) {
  std::lock_guard flush_lock(flush_mu_);
  struct Work {
    std::string key;
    Entry entry;
    bool create;
  };
  std::vector<Work> work;
  {
    std::lock_guard lock(mu_);
    const MonotonicTime now = clock_->Now();
    for (auto it = entries_.begin(); it != entries_.end();) {
      Entry& e = it->second;
      if (e.event_name.empty()) {
        e.event_name = fmt::format("{}.{:x}", e.regarding.name.empty() ? "event" : e.regarding.name,
                                   std::chrono::duration_cast<std::chrono::nanoseconds>(
                                       e.last_seen_wall.time_since_epoch()).count());
        work.push_back({it->first, e, true});
      } else if (e.count > e.sent_count && (force_series || now - e.last_flush >= options_.flush_period)) {
        work.push_back({it->first, e, false});
      } else if (e.count == e.sent_count && now - e.last_seen >= options_.series_window) {
        it = entries_.erase(it);  // series over; a new occurrence makes a new Event
        continue;
      }
      ++it;
    }
  }
  Status first;
  for (auto& w : work) {
    const std::string ns = w.entry.regarding.ns.empty() ? "default" : w.entry.regarding.ns;
    Status s;
    if (w.create) {
      s = client_.Create(resources::kEvents, ns, NewEvent(w.entry)).status();
    } else {
      Json patch = {{"series", {{"count", w.entry.count}, {"lastObservedTime", MicroTime(w.entry.last_seen_wall)}}}};
      s = client_.Patch(resources::kEvents, ns, w.entry.event_name, PatchType::kMerge, patch).status();
      if (IsNotFound(s)) s = client_.Create(resources::kEvents, ns, NewEvent(w.entry)).status();
    }
    std::lock_guard lock(mu_);
    auto it = entries_.find(w.key);
    if (it == entries_.end()) continue;
    if (s.ok() || w.create) {  // a failed create is not retried (best effort), its series may still be
      it->second.sent_count = w.entry.count;
      it->second.last_flush = clock_->Now();
    }
    if (!s.ok() && s.code() == StatusCode::kPermissionDenied) {
      // A missing RBAC rule is not transient: say once per verb and namespace which one.
      const std::string verb = w.create ? "create" : "patch";
      if (refused_.insert(verb + " " + ns).second) {
        spdlog::warn("event recorder: Events are refused (403): grant {} on events.events.k8s.io in namespace {} "
                     "(e.g. a node's own identity may not write Events); this is logged once: {}",
                     verb, ns, s.message());
      }
    } else if (!s.ok()) {
      spdlog::debug("event recorder: {} {}: {}", w.entry.reason, w.entry.regarding.name, s.message());
    }
    if (!s.ok()) {
      if (first.ok()) first = s;
    }
  }
  return first;
}

void EventRecorder::Start() {
  thread_ = std::thread([this] {
    std::unique_lock lock(mu_);
    while (!stopped_) {
      cv_.wait_for(lock, options_.tick, [&] { return stopped_; });
      if (stopped_) break;
      lock.unlock();
      (void)Flush();
      lock.lock();
    }
  });
}

void EventRecorder::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  (void)Flush(/*force_series=*/true);
}

}  // namespace phalanx::kube
