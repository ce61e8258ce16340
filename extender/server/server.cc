#include "extender/server/server.h"

#include <charconv>
#include <chrono>

#include <fmt/format.h>

#include "core/metrics/buckets.h"
#include "core/metrics/counter.h"
#include "core/metrics/gauge.h"
#include "core/metrics/histogram.h"
#include "extender/admission/engine_metrics.h"
#include "extender/queues/queue_metrics.h"
#include "extender/state/ledger_metrics.h"

namespace phalanx::extender {
namespace {

using Clock = std::chrono::steady_clock;

http::Response JsonReply(int status, std::string body) {
  http::Response r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

http::Response ErrorReply(int status, std::string_view message) {
  return JsonReply(status, EncodeBindResult(message));  // {"Error":"..."}
}

json::FastJsonParser& ThreadParser() {
  thread_local json::FastJsonParser parser;
  return parser;
}

}  // namespace

Status ParseHostPort(std::string_view text, std::string* host, uint16_t* port) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return InvalidArgumentError(fmt::format("\"{}\": expected HOST:PORT", text));
  std::string_view p = text.substr(colon + 1);
  unsigned value = 0;
  auto [ptr, ec] = std::from_chars(p.data(), p.data() + p.size(), value);
  if (p.empty() || ec != std::errc() || ptr != p.data() + p.size() || value > 65535) {
    return InvalidArgumentError(fmt::format("\"{}\": bad port", text));
  }
  std::string_view h = text.substr(0, colon);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  *host = h.empty() ? "0.0.0.0" : std::string(h);
  *port = static_cast<uint16_t>(value);
  return OkStatus();
}

ExtenderServer::ExtenderServer(Extender& extender, metrics::Registry& registry, ServerAddresses addresses)
    : extender_(extender), registry_(registry), addresses_(std::move(addresses)) {
  auto requests = registry_.AddCounter("phalanx_extender_requests_total", "Extender verb requests by HTTP status.",
                                       {"verb", "code"});
  if (requests.ok()) requests_ = *requests;
  auto buckets = metrics::ExponentialBuckets(25e-6, 2, 16);
  auto latency = registry_.AddHistogram("phalanx_extender_request_duration_seconds",
                                        "Server time per verb request (parse, decide, encode).", {"verb"},
                                        buckets.ok() ? *buckets : metrics::DefaultLatencyBuckets());
  if (latency.ok()) latency_ = *latency;
  auto gauge = [&](const char* name, const char* help, std::function<double()> fn) {
    auto family = registry_.AddGauge(name, help);
    if (!family.ok()) return;
    auto g = (*family)->WithLabels({});
    if (g.ok()) (*g)->SetCallback(std::move(fn));
  };
  gauge("phalanx_extender_held_binds", "Bind requests held at gang barriers.",
        [this] { return static_cast<double>(extender_.HeldBinds()); });
  const ExtenderStats& s = extender_.stats();
  gauge("phalanx_extender_gangs_admitted", "Gang plans admitted (reserved) since start.",
        [&s] { return static_cast<double>(s.gangs_admitted.load()); });
  gauge("phalanx_extender_gangs_bound", "Gangs whose barrier released and every member bound, since start.",
        [&s] { return static_cast<double>(s.gangs_bound.load()); });
  gauge("phalanx_extender_barrier_timeouts", "Gang bind barriers that timed out since start.",
        [&s] { return static_cast<double>(s.barrier_timeouts.load()); });
  gauge("phalanx_extender_admission_conflicts",
        "Admissions the engine made that the commit did not apply (the ledger changed in between), since start.",
        [&s] { return static_cast<double>(s.admission_conflicts.load()); });
  gauge("phalanx_extender_preemptions_accepted", "Preempt calls answered with victims since start.",
        [&s] { return static_cast<double>(s.preempt_accepted.load()); });
  gauge("phalanx_extender_preemptions_vetoed", "Preempt calls vetoed since start.",
        [&s] { return static_cast<double>(s.preempt_vetoed.load()); });
  gauge("phalanx_extender_api_write_errors", "Failed API writes (bind, patch, evict, ungate) since start.",
        [&s] { return static_cast<double>(s.write_errors.load()); });
  gauge("phalanx_extender_ungated_requeues",
        "Ungated gang members touched (phalanx.io/requeued-at) so kube-scheduler retries them once their gang "
        "can be placed, since start.",
        [&s] { return static_cast<double>(s.ungated_requeues.load()); });
}

ExtenderServer::~ExtenderServer() { Shutdown(); }

// Families belong to the registry, which outlives this server: a held bind answered after
// Shutdown may still count through them.
static void CountTo(metrics::CounterFamily* requests, metrics::HistogramFamily* latency, const char* verb,
                    int status, double seconds) {
  if (requests) {
    if (auto c = requests->WithLabels({verb, std::to_string(status)}); c.ok()) (*c)->Inc();
  }
  if (latency) {
    if (auto h = latency->WithLabels({verb}); h.ok()) (*h)->Observe(seconds);
  }
}

void ExtenderServer::SetReadiness(bool ready, std::string why) {
  {
    std::lock_guard lock(why_mu_);
    why_ = std::move(why);
  }
  ready_.store(ready);
}

void ExtenderServer::Count(const char* verb, int status, double seconds) {
  CountTo(requests_, latency_, verb, status, seconds);
}

void ExtenderServer::Register(http::HttpServer& server, bool verbs, bool debug) {
  http::StandardEndpoints endpoints;
  endpoints.ready = [this](std::string* reason) {
    std::lock_guard lock(why_mu_);
    if (ready_.load()) {
      *reason = why_;  // notes of a ready replica ("TrainingJob CRD not installed: ...")
      return true;
    }
    *reason = why_.empty() ? "ledger not synced yet" : why_;
    return false;
  };
  if (debug) {
    // Cluster GPU gauges are computed from the ledger on each scrape (extender/state/ledger_metrics.h).
    auto gpus = std::make_shared<LedgerMetrics>(registry_);
    auto queues = std::make_shared<QueueMetrics>(registry_);  // team queues (extender/queues/queue_metrics.h)
    auto engine = std::make_shared<EngineMetrics>(registry_);  // learned run times (engine_metrics.h)
    endpoints.metrics = [this, gpus, queues, engine] {
      gpus->Refresh(extender_);
      queues->Refresh(extender_);
      engine->Refresh(extender_);
      return registry_.Expose();
    };
  }
  http::AddStandardEndpoints(server, std::move(endpoints));
  if (debug) {
    server.Handle("GET", "/debug/state", http::SyncHandler([this](const http::Request&) {
                    return JsonReply(200, json::Dump(extender_.StateJson(), 1));
                  }));
    server.Handle("GET", "/debug/explain", http::SyncHandler([this](const http::Request& req) {
                    auto pod = req.QueryValue("pod");
                    if (!pod || pod->find('/') == std::string_view::npos) {
                      return ErrorReply(400, "query parameter pod=NAMESPACE/NAME is required");
                    }
                    json::Json body = {{"pod", *pod}, {"explanation", extender_.Explain(*pod)}};
                    return JsonReply(200, json::Dump(body));
                  }));
  }
  if (!verbs) return;
  server.Handle("POST", "/v1/filter", http::SyncHandler([this](const http::Request& req) {
                  const auto start = Clock::now();
                  auto args = ParseFilterArgs(req.body, ThreadParser());
                  http::Response r;
                  if (args.ok()) {
                    args->reply_only = true;  // a kept no-fit answer may stand in for the entries
                    FilterResult result = extender_.Filter(*args);
                    if (result.encoded) {  // sent from where it is kept, not copied
                      r.status = 200;
                      r.shared_body = std::move(result.encoded);
                    } else {
                      r = JsonReply(200, EncodeFilterResult(result));
                    }
                  } else {
                    r = ErrorReply(400, args.status().message());
                  }
                  Count("filter", r.status, std::chrono::duration<double>(Clock::now() - start).count());
                  return r;
                }));
  server.Handle("POST", "/v1/prioritize", http::SyncHandler([this](const http::Request& req) {
                  const auto start = Clock::now();
                  auto args = ParseFilterArgs(req.body, ThreadParser());
                  http::Response r = args.ok() ? JsonReply(200, EncodeHostPriorities(extender_.Prioritize(*args)))
                                               : ErrorReply(400, args.status().message());
                  Count("prioritize", r.status, std::chrono::duration<double>(Clock::now() - start).count());
                  return r;
                }));
  server.Handle("POST", "/v1/preempt", http::SyncHandler([this](const http::Request& req) {
                  const auto start = Clock::now();
                  auto args = ParsePreemptArgs(req.body);
                  http::Response r = args.ok()
                                         ? JsonReply(200, EncodePreemptResult(extender_.Preempt(*args), *args))
                                         : ErrorReply(400, args.status().message());
                  Count("preempt", r.status, std::chrono::duration<double>(Clock::now() - start).count());
                  return r;
                }));
  server.Handle("POST", "/v1/bind", http::Handler([this](http::Request&& req, http::ResponseWriter&& writer) {
                  const auto start = Clock::now();
                  auto args = ParseBindArgs(req.body);
                  if (!args.ok()) {
                    Count("bind", 400, std::chrono::duration<double>(Clock::now() - start).count());
                    writer.Reply(ErrorReply(400, args.status().message()));
                    return;
                  }
                  // The callback may run much later (gang barrier), on another thread.
                  auto shared = std::make_shared<http::ResponseWriter>(std::move(writer));
                  extender_.Bind(*args, [requests = requests_, latency = latency_, shared, start](std::string error) {
                    CountTo(requests, latency, "bind", 200, std::chrono::duration<double>(Clock::now() - start).count());
                    shared->Reply(JsonReply(200, EncodeBindResult(error)));
                  });
                }));
}

Status ExtenderServer::Start() {
  http::ServerOptions options;
  options.address = addresses_.listen_host;
  options.port = addresses_.listen_port;
  options.io_threads = addresses_.io_threads;
  options.max_body_bytes = addresses_.max_body_bytes;
  options.idle_timeout = addresses_.read_timeout;
  // Held binds wait up to the barrier timeout; the idle timeout does not apply to them.
  verbs_ = std::make_unique<http::HttpServer>(options);
  Register(*verbs_, true, !addresses_.serve_metrics);
  PHX_RETURN_IF_ERROR(verbs_->Start());
  if (addresses_.serve_metrics) {
    http::ServerOptions m;
    m.address = addresses_.metrics_host;
    m.port = addresses_.metrics_port;
    m.io_threads = 1;
    metrics_ = std::make_unique<http::HttpServer>(m);
    Register(*metrics_, false, true);
    if (Status st = metrics_->Start(); !st.ok()) {
      verbs_->Shutdown();
      return st;
    }
  }
  return OkStatus();
}

void ExtenderServer::Shutdown() {
  if (verbs_) verbs_->Shutdown();
  if (metrics_) metrics_->Shutdown();
}

uint16_t ExtenderServer::port() const { return verbs_ ? verbs_->port() : 0; }
uint16_t ExtenderServer::metrics_port() const { return metrics_ ? metrics_->port() : 0; }

}  // namespace phalanx::extender
