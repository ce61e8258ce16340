// One watch connection: GET <list path>?watch=1&resourceVersion=..&allowWatchBookmarks=true
// &timeoutSeconds=.. streamed as newline-delimited JSON events {"type": ..., "object": ...}.
// Reconnects, resume and relist are the Reflector's job (reflector.h); this is one stream.
//
// A 410 Gone arrives either as the HTTP status of the watch request or, once streaming, as an
// ERROR event carrying a Status with code 410: both surface as an IsGone() status here so the
// caller relists in one place. Other ERROR events surface as their decoded Status.
#pragma once

#include <memory>
#include <string>

#include "core/kube/client.h"
#include "core/kube/raw_object.h"

namespace phalanx::kube {

enum class EventType { kAdded, kModified, kDeleted, kBookmark };
std::string_view EventTypeName(EventType type);

// The object stays raw JSON text: an informer decodes it once, straight into its own type.
struct WatchEvent {
  EventType type = EventType::kAdded;
  std::string object_json;
  ObjectMeta meta;  // namespace, name, resourceVersion (bookmarks: resourceVersion only)
  Result<Json> Object() const { return json::Parse(object_json); }
};

struct WatchOptions {
  std::string label_selector, field_selector;
  std::string resource_version;  // "" = from "now" (avoid: events may be missed); use a list's RV
  bool allow_bookmarks = true;
  int timeout_seconds = 300;  // server closes the stream cleanly after this (0 = server default)
  // Client-side inactivity limit; must exceed the bookmark interval (~1 min on real servers).
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(330)};
};

class WatchStream {
 public:
  explicit WatchStream(std::unique_ptr<ResponseStream> stream) : stream_(std::move(stream)) {}
  // true: `event` filled; false: the server ended the stream cleanly (resume from the last RV);
  // error: IsGone() -> relist; kCancelled after Cancel(); otherwise reconnect with backoff.
  Result<bool> Next(WatchEvent& event);
  void Cancel() { stream_->Cancel(); }

 private:
  std::unique_ptr<ResponseStream> stream_;
  std::string line_;
  RawObjectReader reader_;
};

// Opens the watch. HTTP errors (410 included) come back as their decoded Status.
Result<std::unique_ptr<WatchStream>> OpenWatch(KubeClient& client, const Resource& resource,
                                               std::string_view ns, const WatchOptions& options);

// The target OpenWatch requests (for tests and logs).
std::string WatchTarget(const Resource& resource, std::string_view ns, const WatchOptions& options);

// Parses one line of a watch stream.
Result<WatchEvent> ParseWatchEvent(std::string_view line, RawObjectReader& reader);
Result<WatchEvent> ParseWatchEvent(std::string_view line);

// object.metadata.resourceVersion, or "".
std::string ResourceVersionOf(const Json& object);
// "ns/name" for namespaced objects, "name" otherwise (client-go's MetaNamespaceKeyFunc).
std::string ObjectKey(const Json& object);

}  // namespace phalanx::kube
