#include "operator/controller/progress_service.h"

#include "core/kube/resource.h"
#include "core/log/log.h"
#include "operator/api/keys.h"
#include "operator/controller/token_review.h"
#include "operator/lifecycle/checkpoint.h"

namespace phalanx::op {

namespace {

constexpr size_t kMaxQueued = 1000;  // beyond this, 503: workers retry later

http::Response Error(int code, const std::string& message) {
  return http::Response{code, "application/json", {}, json::Dump(json::Json{{"error", message}})};
}

int HttpCode(const Status& s) {
  switch (s.code()) {
    case StatusCode::kUnauthenticated: return 401;
    case StatusCode::kPermissionDenied: return 403;
    case StatusCode::kNotFound: return 404;
    case StatusCode::kInvalidArgument: return 400;
    default: return 503;
  }
}

}  // namespace

ProgressService::ProgressService(kube::KubeClient& client, Controller& controller,
                                 std::shared_ptr<spdlog::logger> logger)
    : client_(client), controller_(controller), logger_(std::move(logger)) {
  thread_ = std::thread([this] { Loop(); });
}

ProgressService::~ProgressService() { Stop(); }

void ProgressService::Stop() {
  {
    std::lock_guard lock(mu_);
    stopped_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ProgressService::Register(http::HttpServer& server) {
  server.Handle("POST", "/progress", http::Handler([this](http::Request&& req, http::ResponseWriter&& w) {
    std::unique_lock lock(mu_);
    if (stopped_ || items_.size() >= kMaxQueued) {
      lock.unlock();
      w.Reply(Error(503, "progress endpoint busy"));
      return;
    }
    items_.push_back(Item{std::move(req), std::move(w)});
    cv_.notify_one();
  }));
}

void ProgressService::Loop() {
  while (true) {
    Item item;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopped_ || !items_.empty(); });
      if (stopped_) {
        for (auto& i : items_) i.writer.Reply(Error(503, "shutting down"));
        items_.clear();
        return;
      }
      item = std::move(items_.front());
      items_.pop_front();
    }
    item.writer.Reply(Handle(item.request));
  }
}

http::Response ProgressService::Handle(const http::Request& request) {
  auto token = BearerToken(request.HeaderValue("Authorization"));
  if (!token.ok()) return Error(401, token.status().message());
  auto report = ParseCheckpointReport(request.body);
  if (!report.ok()) return Error(400, report.status().message());
  auto review = client_.Create(kube::resources::kTokenReviews, "", MakeTokenReview(*token, kTokenAudience));
  if (!review.ok()) return Error(503, "TokenReview failed: " + review.status().message());
  auto id = ParseTokenReview(*review, kTokenAudience);
  if (!id.ok()) return Error(HttpCode(id.status()), id.status().message());
  auto moved = controller_.ReportProgress(id->namespace_, id->pod_name, id->pod_uid, *report);
  if (!moved.ok()) return Error(HttpCode(moved.status()), moved.status().message());
  PHX_LOG_DEBUG(logger_, "Accepted progress report", kv("pod", id->namespace_ + "/" + id->pod_name),
                kv("step", report->step), kv("recorded", *moved));
  return http::Response{200, "application/json", {}, json::Dump(json::Json{{"recorded", *moved}})};
}

}  // namespace phalanx::op
