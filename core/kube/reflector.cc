#include "core/kube/reflector.h"

#include <random>

#include <spdlog/spdlog.h>

namespace phalanx::kube {

Reflector::Reflector(KubeClient& client, ReflectorOptions options, WatchSink& sink)
    : client_(client), options_(std::move(options)), sink_(sink) {}

Reflector::~Reflector() { Stop(); }

std::string Reflector::last_resource_version() const {
  std::lock_guard lock(mu_);
  return last_rv_;
}

void Reflector::Stop() {
  std::shared_ptr<WatchStream> active;
  {
    std::lock_guard lock(mu_);
    stopped_ = true;
    active = active_;
  }
  cv_.notify_all();
  if (active) active->Cancel();
}

bool Reflector::WaitFor(Duration d) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, d, [&] { return stopped_; });
  return !stopped_;
}

Status Reflector::ListOnce() {
  lists_.fetch_add(1);
  ListOptions lo;
  lo.label_selector = options_.label_selector;
  lo.field_selector = options_.field_selector;
  lo.limit = options_.page_size;
  sink_.BeginList();
  RawObjectReader reader;
  size_t skipped = 0;
  std::string resource_version;
  while (true) {
    {
      std::lock_guard lock(mu_);
      if (stopped_) {
        sink_.AbortList();
        return CancelledError("reflector stopped");
      }
    }
    auto body = client_.ListRaw(options_.resource, options_.ns, lo);
    if (!body.ok()) {
      sink_.AbortList();
      return body.status();
    }
    auto page = reader.ForEachItem(*body, [&](std::string_view item) {
      auto meta = reader.Meta(item);
      if (!meta.ok() || !sink_.ListItem(item, *meta).ok()) ++skipped;
    });
    if (!page.ok()) {
      sink_.AbortList();
      return page.status().WithContext("list " + options_.resource.resource);
    }
    resource_version = page->resource_version;
    if (page->continue_token.empty()) break;
    lo.continue_token = page->continue_token;
  }
  if (skipped > 0) spdlog::warn("{}: skipped {} undecodable objects", options_.name, skipped);
  sink_.EndList(resource_version);
  std::lock_guard lock(mu_);
  last_rv_ = resource_version;
  return OkStatus();
}

Status Reflector::WatchOnce() {
  static thread_local std::mt19937 rng{std::random_device{}()};
  WatchOptions wo;
  wo.label_selector = options_.label_selector;
  wo.field_selector = options_.field_selector;
  wo.resource_version = last_resource_version();
  wo.allow_bookmarks = true;
  const int min_s = static_cast<int>(options_.min_watch_timeout.count());
  wo.timeout_seconds = min_s + std::uniform_int_distribution<int>(0, std::max(0, min_s - 1))(rng);
  wo.idle_timeout = options_.idle_timeout;
  watches_.fetch_add(1);
  PHX_ASSIGN_OR_RETURN(std::unique_ptr<WatchStream> opened,
                       OpenWatch(client_, options_.resource, options_.ns, wo));
  std::shared_ptr<WatchStream> stream(std::move(opened));
  {
    std::lock_guard lock(mu_);
    if (stopped_) return CancelledError("reflector stopped");
    active_ = stream;
  }
  struct Clear {
    Reflector* r;
    ~Clear() {
      std::lock_guard lock(r->mu_);
      r->active_.reset();
    }
  } clear{this};
  WatchEvent event;
  while (true) {
    PHX_ASSIGN_OR_RETURN(bool got, stream->Next(event));
    if (!got) return OkStatus();
    if (event.type != EventType::kBookmark) {
      events_.fetch_add(1);
      sink_.Event(event);
    }
    // Advance only after the sink has the event: a reconnect resumes right after it.
    if (!event.meta.resource_version.empty()) {
      std::lock_guard lock(mu_);
      last_rv_ = event.meta.resource_version;
    }
  }
}

void Reflector::Run() {
  const std::string name = options_.name.empty() ? options_.resource.resource : options_.name;
  Backoff backoff(options_.backoff);
  bool need_list = true;
  while (true) {
    {
      std::lock_guard lock(mu_);
      if (stopped_) return;
    }
    if (need_list) {
      Status s = ListOnce();
      if (!s.ok()) {
        if (s.code() == StatusCode::kCancelled) return;
        const auto delay = backoff.Next();
        spdlog::warn("{}: list failed: {}; retrying in {} ms", name, s.message(), delay.count());
        if (!WaitFor(delay)) return;
        continue;
      }
      need_list = false;
      backoff.Reset();
    }
    const auto started = std::chrono::steady_clock::now();
    const uint64_t events_before = events_.load();
    Status s = WatchOnce();
    if (s.ok()) {
      // The server closed the stream normally (timeoutSeconds): resume at once, unless it
      // keeps closing immediately (then back off instead of spinning).
      if (events_.load() != events_before || std::chrono::steady_clock::now() - started > std::chrono::seconds(1)) {
        backoff.Reset();
        continue;
      }
      s = UnavailableError("watch closed immediately");
    }
    if (s.code() == StatusCode::kCancelled) {
      std::lock_guard lock(mu_);
      if (stopped_) return;
    }
    if (IsGone(s)) {
      spdlog::info("{}: resourceVersion {} is gone ({}); relisting", name, last_resource_version(),
                   s.message());
      need_list = true;
      continue;
    }
    const auto delay = backoff.Next();
    spdlog::warn("{}: watch failed: {}; resuming from resourceVersion {} in {} ms", name, s.message(),
                 last_resource_version(), delay.count());
    if (!WaitFor(delay)) return;
  }
}

}  // namespace phalanx::kube
