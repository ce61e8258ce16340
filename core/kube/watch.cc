#include "core/kube/watch.h"

#include <fmt/format.h>

namespace phalanx::kube {
namespace {

const Json* Metadata(const Json& object) {
  if (!object.is_object()) return nullptr;
  auto m = object.find("metadata");
  return m != object.end() && m->is_object() ? &*m : nullptr;
}

std::string StringField(const Json* object, const char* key) {
  if (object == nullptr) return {};
  auto it = object->find(key);
  return it != object->end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

std::string_view EventTypeName(EventType type) {
  switch (type) {
    case EventType::kAdded: return "ADDED";
    case EventType::kModified: return "MODIFIED";
    case EventType::kDeleted: return "DELETED";
    case EventType::kBookmark: return "BOOKMARK";
  }
  return "?";
}

std::string ResourceVersionOf(const Json& object) { return StringField(Metadata(object), "resourceVersion"); }

std::string ObjectKey(const Json& object) {
  const Json* m = Metadata(object);
  std::string ns = StringField(m, "namespace");
  std::string name = StringField(m, "name");
  return ns.empty() ? name : ns + "/" + name;
}

Result<WatchEvent> ParseWatchEvent(std::string_view line, RawObjectReader& reader) {
  std::string type;
  WatchEvent event;
  PHX_RETURN_IF_ERROR(reader.WatchLine(line, type, event.object_json));
  if (type == "ADDED") {
    event.type = EventType::kAdded;
  } else if (type == "MODIFIED") {
    event.type = EventType::kModified;
  } else if (type == "DELETED") {
    event.type = EventType::kDeleted;
  } else if (type == "BOOKMARK") {
    event.type = EventType::kBookmark;
  } else if (type == "ERROR") {
    // The object is a metav1.Status; code 410 means our resourceVersion is too old.
    ApiError e = DecodeStatusObject(event.object_json, 500);
    if (e.http_code == 410 && e.reason != Reason::kExpired) e.reason = Reason::kGone;
    return ToStatus(e).WithContext("watch ERROR event");
  } else {
    return InvalidArgumentError(fmt::format("watch event has unknown type \"{}\"", type));
  }
  PHX_ASSIGN_OR_RETURN(event.meta, reader.Meta(event.object_json));
  return event;
}

Result<WatchEvent> ParseWatchEvent(std::string_view line) {
  RawObjectReader reader;
  return ParseWatchEvent(line, reader);
}

Result<bool> WatchStream::Next(WatchEvent& event) {
  while (true) {
    PHX_ASSIGN_OR_RETURN(bool got, stream_->ReadLine(line_));
    if (!got) return false;
    if (line_.empty()) continue;  // keep-alive blank lines
    PHX_ASSIGN_OR_RETURN(event, ParseWatchEvent(line_, reader_));
    return true;
  }
}

std::string WatchTarget(const Resource& resource, std::string_view ns, const WatchOptions& options) {
  std::vector<std::pair<std::string, std::string>> q;
  q.emplace_back("watch", "1");
  if (!options.label_selector.empty()) q.emplace_back("labelSelector", options.label_selector);
  if (!options.field_selector.empty()) q.emplace_back("fieldSelector", options.field_selector);
  if (!options.resource_version.empty()) q.emplace_back("resourceVersion", options.resource_version);
  if (options.allow_bookmarks) q.emplace_back("allowWatchBookmarks", "true");
  if (options.timeout_seconds > 0) q.emplace_back("timeoutSeconds", std::to_string(options.timeout_seconds));
  return ResourcePath(resource, ns) + QueryString(q);
}

Result<std::unique_ptr<WatchStream>> OpenWatch(KubeClient& client, const Resource& resource,
                                               std::string_view ns, const WatchOptions& options) {
  HttpRequest req;
  req.target = WatchTarget(resource, ns, options);
  req.timeout = options.idle_timeout;
  PHX_ASSIGN_OR_RETURN(std::unique_ptr<ResponseStream> stream, client.OpenStream(std::move(req)));
  if (stream->status() < 200 || stream->status() >= 300) {
    std::string body, line;
    while (body.size() < (64u << 10)) {
      auto more = stream->ReadLine(line);
      if (!more.ok() || !*more) break;
      body += line;
      body += '\n';
    }
    return ToStatus(DecodeApiError(stream->status(), body)).WithContext("watch " + resource.resource);
  }
  return std::make_unique<WatchStream>(std::move(stream));
}

}  // namespace phalanx::kube
