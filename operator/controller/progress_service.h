// Progress endpoint (POST /progress): workers report {"step","path","committed"} with their
// projected token (audience "phalanx") as a Bearer token. The token is checked with a
// TokenReview and the report is accepted only for the token's own pod and that pod's own
// TrainingJob. HTTP handlers never block: requests are handed to one worker thread (the
// TokenReview and status write are API calls). Thread-safe.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include <spdlog/logger.h>

#include "core/http/http_server.h"
#include "core/kube/client.h"
#include "operator/controller/controller.h"

namespace phalanx::op {

class ProgressService {
 public:
  ProgressService(kube::KubeClient& client, Controller& controller, std::shared_ptr<spdlog::logger> logger);
  ~ProgressService();

  void Register(http::HttpServer& server);
  void Stop();

 private:
  struct Item {
    http::Request request;
    http::ResponseWriter writer;
  };
  void Loop();
  http::Response Handle(const http::Request& request);

  kube::KubeClient& client_;
  Controller& controller_;
  std::shared_ptr<spdlog::logger> logger_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> items_;  // guarded by mu_
  bool stopped_ = false;    // guarded by mu_
  std::thread thread_;
};

}  // namespace phalanx::op
