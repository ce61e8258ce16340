// Reflector: keeps a sink in step with the server through list + watch (client-go's Reflector).
//
//   list (paginated, consistent read) -> sink.BeginList/ListItem.../EndList(rv)
//   watch from rv (bookmarks on)      -> sink.Event(...) for each event; rv advances with every
//                                        event and bookmark
//   stream ended by the server        -> watch again from the last rv, at once
//   network error / other error       -> watch again from the last rv after backoff
//   410 Gone (HTTP or ERROR event)    -> list again; the sink diffs the new list against what it
//                                        has, so nothing is lost (deletes in the gap become
//                                        deletes) and nothing is duplicated (unchanged objects
//                                        produce no event)
// Because every watch resumes from the last seen resourceVersion, a reconnect never replays or
// skips an event. Run() blocks until Stop(); Stop() is thread-safe and interrupts a pending
// list/watch/backoff promptly.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "core/kube/watch.h"

namespace phalanx::kube {

// Receives the reflector's view, on the reflector's thread, in order.
class WatchSink {
 public:
  virtual ~WatchSink() = default;
  virtual void BeginList() = 0;
  // One listed object as raw JSON text (valid during the call only): decode it now. An error
  // skips the item.
  virtual Status ListItem(std::string_view object_json, const ObjectMeta& meta) = 0;
  virtual void EndList(const std::string& resource_version) = 0;  // the list is complete
  virtual void AbortList() = 0;                                    // pages so far are void
  virtual void Event(const WatchEvent& event) = 0;                 // never kBookmark
};

struct ReflectorOptions {
  Resource resource;
  std::string ns;  // "" = all namespaces (or cluster-scoped)
  std::string label_selector, field_selector;
  int64_t page_size = 500;
  // Watches ask the server to end after a random time in [min, 2*min) so reconnects spread out.
  std::chrono::seconds min_watch_timeout{300};
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(330)};
  Backoff::Options backoff{std::chrono::milliseconds(800), std::chrono::milliseconds(30'000),
                           std::chrono::milliseconds(0), true};
  std::string name;  // for logs; default "<resource>"
};

class Reflector {
 public:
  Reflector(KubeClient& client, ReflectorOptions options, WatchSink& sink);
  ~Reflector();

  void Run();
  void Stop();

  std::string last_resource_version() const;
  // Counters for tests and metrics.
  uint64_t lists() const { return lists_.load(); }
  uint64_t watches() const { return watches_.load(); }
  uint64_t events() const { return events_.load(); }

 private:
  Status ListOnce();
  Status WatchOnce();  // returns when the stream ends; OK = clean end
  bool WaitFor(Duration d);  // false when stopped

  KubeClient& client_;
  const ReflectorOptions options_;
  WatchSink& sink_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;
  std::shared_ptr<WatchStream> active_;  // cancelled by Stop()
  std::string last_rv_;
  std::atomic<uint64_t> lists_{0}, watches_{0}, events_{0};
};

}  // namespace phalanx::kube
