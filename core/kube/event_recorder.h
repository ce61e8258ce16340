// EventRecorder: Kubernetes events (events.k8s.io/v1) with de-duplication, as client-go's
// events.EventBroadcaster does it.
//
// Record() never blocks and never fails (events are best effort): it queues. Identical events
// (same regarding object, type, reason, action, note) within `series_window` of the previous
// one are aggregated into the first Event's `series` {count, lastObservedTime}, patched at
// most once per `flush_period`, instead of creating a new Event object each time. The first
// occurrence is created at the next flush. Flush() does the pending work synchronously (the
// background thread started by Start() calls it every `tick`); Stop() flushes a last time.
// The queue is bounded (max_queue): beyond it, new distinct events are dropped and counted.
// Thread-safe.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "core/kube/client.h"

namespace phalanx::kube {

struct ObjectReference {
  std::string api_version, kind, ns, name, uid, resource_version;
  // From an object's apiVersion/kind/metadata.
  static ObjectReference FromObject(const Json& object);
};

struct EventRecorderOptions {
  std::string reporting_controller = "phalanx.io/phalanx";  // e.g. "phalanx.io/extender"
  std::string reporting_instance;                           // e.g. the pod name
  Duration series_window = std::chrono::minutes(6);
  Duration flush_period = std::chrono::seconds(30);  // series patches at most this often per event
  Duration tick = std::chrono::seconds(1);
  size_t max_queue = 1000;
};

class EventRecorder {
 public:
  EventRecorder(KubeClient& client, EventRecorderOptions options, const Clock* clock = nullptr);
  ~EventRecorder();

  // type: "Normal" or "Warning". note is truncated to 1 KiB.
  void Record(const ObjectReference& regarding, std::string_view type, std::string_view reason,
              std::string_view action, std::string_view note);

  void Start();
  void Stop();
  // Creates new events and patches due series now. A write refused with 403 is logged once per verb
  // and namespace at warning level, naming the missing permission. Returns the first error (work is kept for a
  // retry on the next flush only for series; a failed create is dropped).
  Status Flush(bool force_series = false);

  uint64_t dropped() const;

 private:
  struct Entry {
    ObjectReference regarding;
    std::string type, reason, action, note;
    std::string event_name;  // "" until created
    int count = 0;           // occurrences
    int sent_count = 0;      // count the server has
    MonotonicTime last_seen{}, last_flush{};
    SystemTime last_seen_wall{};
  };
  Json NewEvent(const Entry& e) const;
  std::string MicroTime(SystemTime t) const;

  KubeClient& client_;
  const EventRecorderOptions options_;
  const Clock* clock_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Entry> entries_;  // by dedup key
  std::set<std::string> refused_;         // guarded by mu_: "<verb> <namespace>" refused with 403, logged
  std::mutex flush_mu_;
  uint64_t dropped_ = 0;
  bool stopped_ = false;
  std::thread thread_;
};

}  // namespace phalanx::kube
