#include "device-plugin/plugin/resource_server.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "core/log/log.h"

namespace phalanx::device_plugin {

grpc::Status ToGrpc(const Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), s.message());
}

// One ListAndWatch stream: writes the newest list, keeping at most one queued behind the
// write in flight (older lists are superseded: kubelet wants the current state).
class ResourceServer::Stream final : public grpc::ServerWriteReactor<v1beta1::ListAndWatchResponse> {
 public:
  explicit Stream(std::shared_ptr<Streams> streams) : streams_(std::move(streams)) {}

  void Push(const v1beta1::ListAndWatchResponse& list) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (finished_) return;
      if (writing_) {
        pending_ = list;
        return;
      }
      writing_ = true;
      current_ = list;
    }
    StartWrite(&current_);
  }

  void OnWriteDone(bool ok) override {
    bool write = false, finish = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      writing_ = false;
      if (!ok) {
        finish = !finished_;
        finished_ = true;
      } else if (pending_ && !finished_) {
        current_ = std::move(*pending_);
        pending_.reset();
        writing_ = write = true;
      }
    }
    if (write) StartWrite(&current_);
    if (finish) Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "ListAndWatch write failed"));
  }

  void OnCancel() override {
    bool finish = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      finish = !finished_;
      finished_ = true;
    }
    if (finish) Finish(grpc::Status::CANCELLED);
  }

  void OnDone() override {
    {
      std::lock_guard<std::mutex> lock(streams_->mu);
      streams_->open.erase(this);
    }
    delete this;
  }

 private:
  std::shared_ptr<Streams> streams_;
  std::mutex mu_;
  bool writing_ = false;
  bool finished_ = false;
  v1beta1::ListAndWatchResponse current_;
  std::optional<v1beta1::ListAndWatchResponse> pending_;
};

ResourceServer::ResourceServer(ResourceSpec spec, std::string socket_path, ServerDeps deps)
    : spec_(std::move(spec)),
      socket_path_(std::move(socket_path)),
      deps_(std::move(deps)),
      matcher_(spec_, deps_.bandwidth) {}

Result<std::unique_ptr<ResourceServer>> ResourceServer::Start(ResourceSpec spec, std::string socket_path,
                                                              ServerDeps deps) {
  std::error_code ec;
  std::filesystem::remove(socket_path, ec);  // a stale socket from a previous run
  std::unique_ptr<ResourceServer> s(new ResourceServer(std::move(spec), std::move(socket_path), std::move(deps)));
  grpc::ServerBuilder builder;
  int bound = 0;
  builder.AddListeningPort("unix:" + s->socket_path_, grpc::InsecureServerCredentials(), &bound);
  builder.RegisterService(s.get());
  s->server_ = builder.BuildAndStart();
  if (s->server_ == nullptr) {
    return UnavailableError(fmt::format("cannot serve {} on {}", s->spec_.name, s->socket_path_));
  }
  ResourceServer* raw = s.get();
  s->subscription_ = s->deps_.health->Subscribe([raw] { raw->PushToStreams(); });
  s->UpdateDeviceGauges(s->CurrentList());
  return s;
}

ResourceServer::~ResourceServer() { Stop(); }

void ResourceServer::Stop() {
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  deps_.health->Unsubscribe(subscription_);
  // A stopped server advertises nothing: a resource that a reload removed (e.g. a new MIG
  // strategy) must not keep reporting its last device counts.
  if (deps_.metrics != nullptr) {
    deps_.metrics->Set(deps_.metrics->devices, {spec_.name, "Healthy"}, 0);
    deps_.metrics->Set(deps_.metrics->devices, {spec_.name, "Unhealthy"}, 0);
  }
  if (server_) {
    server_->Shutdown(std::chrono::system_clock::now());  // cancels open streams
    server_->Wait();
  }
  std::error_code ec;
  std::filesystem::remove(socket_path_, ec);
}

v1beta1::ListAndWatchResponse ResourceServer::CurrentList() const {
  v1beta1::ListAndWatchResponse list;
  for (const auto& d : spec_.devices) {
    auto* out = list.add_devices();
    out->set_id(d.id);
    const bool healthy = deps_.health->Effective(d.physical.str(), d.parent_gpu.str()).healthy;
    out->set_health(healthy ? "Healthy" : "Unhealthy");
    if (d.numa_node) out->mutable_topology()->add_nodes()->set_id(*d.numa_node);
  }
  return list;
}

int ResourceServer::open_streams() const {
  std::lock_guard<std::mutex> lock(streams_->mu);
  return static_cast<int>(streams_->open.size());
}

void ResourceServer::UpdateDeviceGauges(const v1beta1::ListAndWatchResponse& list) const {
  if (deps_.metrics == nullptr) return;
  int healthy = 0;
  for (const auto& d : list.devices()) healthy += d.health() == "Healthy";
  deps_.metrics->Set(deps_.metrics->devices, {spec_.name, "Healthy"}, healthy);
  deps_.metrics->Set(deps_.metrics->devices, {spec_.name, "Unhealthy"}, list.devices_size() - healthy);
}

void ResourceServer::PushToStreams() {
  auto list = CurrentList();
  UpdateDeviceGauges(list);
  std::lock_guard<std::mutex> lock(streams_->mu);  // no stream is deleted meanwhile
  for (Stream* s : streams_->open) s->Push(list);
}

grpc::ServerUnaryReactor* ResourceServer::GetDevicePluginOptions(grpc::CallbackServerContext* ctx,
                                                                 const v1beta1::Empty*,
                                                                 v1beta1::DevicePluginOptions* out) {
  out->set_pre_start_required(false);
  out->set_get_preferred_allocation_available(true);
  auto* r = ctx->DefaultReactor();
  r->Finish(grpc::Status::OK);
  return r;
}

grpc::ServerWriteReactor<v1beta1::ListAndWatchResponse>* ResourceServer::ListAndWatch(
    grpc::CallbackServerContext*, const v1beta1::Empty*) {
  auto* stream = new Stream(streams_);
  {
    std::lock_guard<std::mutex> lock(streams_->mu);
    streams_->open.insert(stream);
  }
  PHX_LOG_DEBUG(deps_.logger, "Opened ListAndWatch", kv("resource", spec_.name));
  stream->Push(CurrentList());
  return stream;
}

Result<MatchedPreference> ResourceServer::MatchPreferred(const PreferredRequest& request,
                                                         std::chrono::steady_clock::time_point wait_until) {
  if (deps_.pods == nullptr) return matcher_.Preferred(request, {});
  for (;;) {
    PendingPodSource::View view = deps_.pods->PendingPods(spec_.name);
    auto m = matcher_.Preferred(request, view.pods);
    // Unidentified: kubelet admits a pod the watch has not delivered yet (it may trail kubelet's
    // own by milliseconds); an unidentified answer recorded nothing, so asking again is safe.
    if (!m.ok() || m->identified || !view.synced || !deps_.pods->WaitForChange(view.version, wait_until)) {
      if (m.ok() && !m->identified && view.synced) {
        PHX_LOG_DEBUG(deps_.logger, "No pending pod on the node matches kubelet's request; the pod watch may be behind",
                      kv("resource", spec_.name), kv("size", request.size));
      }
      return m;
    }
  }
}

void ResourceServer::ReportMiss(const PlanMiss& miss) const {
  const auto join = [](const std::vector<std::string>& ids) {
    std::string out;
    for (const auto& id : ids) out += (out.empty() ? "" : ",") + id;
    return out;
  };
  PHX_LOG_WARN(deps_.logger, "Container does not get its planned devices (phalanx.io/devices)",
               kv("resource", spec_.name), kv("pod", miss.pod), kv("container", miss.container),
               kv("gang_member", miss.gang), kv("reason", miss.reason), kv("planned", join(miss.planned)),
               kv("given", join(miss.given)));
  if (deps_.metrics) deps_.metrics->Inc(deps_.metrics->plan_misses, {spec_.name, miss.reason});
  if (deps_.on_plan_miss) deps_.on_plan_miss(spec_.name, miss);
}

grpc::ServerUnaryReactor* ResourceServer::GetPreferredAllocation(grpc::CallbackServerContext* ctx,
                                                                 const v1beta1::PreferredAllocationRequest* req,
                                                                 v1beta1::PreferredAllocationResponse* out) {
  const auto start = std::chrono::steady_clock::now();
  const auto wait_until = start + (deps_.pods != nullptr ? deps_.pods->watch_grace() : std::chrono::milliseconds(0));
  auto* reactor = ctx->DefaultReactor();
  Status status;
  std::string source = "topology";
  std::vector<PlanMiss> misses;
  // Kubelet asks for one container per call; a request with several is served in order.
  for (const auto& c : req->container_requests()) {
    PreferredRequest pr;
    pr.available.assign(c.available_deviceids().begin(), c.available_deviceids().end());
    pr.must_include.assign(c.must_include_deviceids().begin(), c.must_include_deviceids().end());
    pr.size = c.allocation_size();
    auto match = MatchPreferred(pr, wait_until);
    if (!match.ok()) {
      status = match.status();
      break;
    }
    if (match->choice.source == PreferredSource::kAnnotation) source = "annotation";
    if (match->miss) misses.push_back(*match->miss);
    auto* cr = out->add_container_responses();
    for (const auto& id : match->choice.device_ids) cr->add_deviceids(id);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (deps_.metrics) deps_.metrics->Observe(deps_.metrics->preferred_seconds, {spec_.name, source}, secs);
  if (!status.ok()) {
    PHX_LOG_WARN(deps_.logger, "Rejected GetPreferredAllocation", kv("resource", spec_.name), kv("err", status));
    out->Clear();
  }
  reactor->Finish(ToGrpc(status));
  for (const PlanMiss& m : misses) ReportMiss(m);  // after answering: kubelet does not wait for the log
  return reactor;
}

grpc::ServerUnaryReactor* ResourceServer::Allocate(grpc::CallbackServerContext* ctx,
                                                   const v1beta1::AllocateRequest* req,
                                                   v1beta1::AllocateResponse* out) {
  const auto start = std::chrono::steady_clock::now();
  auto* reactor = ctx->DefaultReactor();
  Status status;
  std::vector<PlanMiss> misses;
  for (const auto& c : req->container_requests()) {
    std::vector<std::string> ids(c.devices_ids().begin(), c.devices_ids().end());
    auto resp = BuildAllocation(spec_, ids, *deps_.config, *deps_.health);
    if (!resp.ok()) {
      status = resp.status();
      break;
    }
    *out->add_container_responses() = std::move(resp).value();
    std::vector<PendingPod> pods;
    if (deps_.pods != nullptr) pods = deps_.pods->PendingPods(spec_.name).pods;
    if (auto miss = matcher_.Allocated(ids, pods)) misses.push_back(std::move(*miss));
  }
  if (deps_.metrics) {
    deps_.metrics->Observe(deps_.metrics->allocate_seconds, {spec_.name},
                           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  if (!status.ok()) {
    PHX_LOG_WARN(deps_.logger, "Rejected Allocate", kv("resource", spec_.name), kv("err", status));
    out->Clear();
  } else {
    PHX_LOG_INFO(deps_.logger, "Allocated devices", kv("resource", spec_.name),
                 kv("containers", req->container_requests_size()));
  }
  reactor->Finish(ToGrpc(status));
  for (const PlanMiss& m : misses) ReportMiss(m);
  return reactor;
}

grpc::ServerUnaryReactor* ResourceServer::PreStartContainer(grpc::CallbackServerContext* ctx,
                                                            const v1beta1::PreStartContainerRequest*,
                                                            v1beta1::PreStartContainerResponse*) {
  auto* r = ctx->DefaultReactor();
  r->Finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                         "PreStartContainer is not required by this plugin (pre_start_required=false)"));
  return r;
}

}  // namespace phalanx::device_plugin
