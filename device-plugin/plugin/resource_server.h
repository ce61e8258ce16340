// ResourceServer: kubelet's DevicePlugin service for one resource, on its own unix socket
// in the device-plugins directory (gRPC callback API: no thread per stream).
//
// ListAndWatch sends the complete device list (ID, Healthy/Unhealthy, NUMA node) at once
// and again on every health change (HealthTable subscription; only the newest list is
// queued behind a write in flight). GetPreferredAllocation and Allocate follow
// admission_match.h (which pod, which plan) and allocation.h; PreStartContainer is not required (options say so) and answers
// UNIMPLEMENTED. Errors reach kubelet as gRPC INVALID_ARGUMENT / FAILED_PRECONDITION /
// RESOURCE_EXHAUSTED with the reason.
//
// Stop() (and the destructor) cancels open streams, stops serving and removes the
// socket file. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <spdlog/logger.h>

#include "core/base/result.h"
#include "core/placement/device_set.h"
#include "device-plugin/plugin/admission_match.h"
#include "device-plugin/plugin/allocation.h"
#include "device-plugin/plugin/config.h"
#include "device-plugin/plugin/device_model.h"
#include "device-plugin/plugin/health_table.h"
#include "device-plugin/plugin/plugin_metrics.h"
#include "proto/deviceplugin/v1beta1/api.grpc.pb.h"

namespace phalanx::device_plugin {

// The pods bound to this node that kubelet may still admit, for one resource (the publisher's,
// from its pod watch; null = no API access, preferred allocation uses topology only). Called on
// kubelet's admission path: must not call the API server.
class PendingPodSource {
 public:
  struct View {
    uint64_t version = 0;  // grows with every change of the node's pods
    bool synced = true;    // false until the pods were listed once
    std::vector<PendingPod> pods;  // arrival order (= kubelet's admission order)
  };
  virtual ~PendingPodSource() = default;
  virtual View PendingPods(const std::string& resource) = 0;
  // Sleeps until the pods change after `version`, at most until `deadline`; false then.
  virtual bool WaitForChange(uint64_t version, std::chrono::steady_clock::time_point deadline) = 0;
  // How long a call that matches no pending pod waits for the watch (it may trail kubelet's).
  virtual std::chrono::milliseconds watch_grace() const = 0;
};

struct ServerDeps {
  const Config* config = nullptr;
  HealthTable* health = nullptr;
  std::shared_ptr<const placement::BandwidthMatrix> bandwidth;
  PendingPodSource* pods = nullptr;          // optional
  const PluginMetrics* metrics = nullptr;    // optional
  std::shared_ptr<spdlog::logger> logger;
  // A planned container that did not get its plan (an Event on the pod); optional, must not block.
  std::function<void(const std::string& resource, const PlanMiss&)> on_plan_miss;
};

class ResourceServer final : public v1beta1::DevicePlugin::CallbackService {
 public:
  // Removes a stale socket file, then serves. Unavailable if the socket cannot be bound.
  static Result<std::unique_ptr<ResourceServer>> Start(ResourceSpec spec, std::string socket_path,
                                                       ServerDeps deps);
  ~ResourceServer() override;
  void Stop();

  const ResourceSpec& spec() const { return spec_; }
  const std::string& socket_path() const { return socket_path_; }
  // The list ListAndWatch sends now.
  v1beta1::ListAndWatchResponse CurrentList() const;
  // Open ListAndWatch streams.
  int open_streams() const;

  grpc::ServerUnaryReactor* GetDevicePluginOptions(grpc::CallbackServerContext* ctx, const v1beta1::Empty*,
                                                   v1beta1::DevicePluginOptions* out) override;
  grpc::ServerWriteReactor<v1beta1::ListAndWatchResponse>* ListAndWatch(grpc::CallbackServerContext* ctx,
                                                                        const v1beta1::Empty*) override;
  grpc::ServerUnaryReactor* GetPreferredAllocation(grpc::CallbackServerContext* ctx,
                                                   const v1beta1::PreferredAllocationRequest* req,
                                                   v1beta1::PreferredAllocationResponse* out) override;
  grpc::ServerUnaryReactor* Allocate(grpc::CallbackServerContext* ctx, const v1beta1::AllocateRequest* req,
                                     v1beta1::AllocateResponse* out) override;
  grpc::ServerUnaryReactor* PreStartContainer(grpc::CallbackServerContext* ctx,
                                              const v1beta1::PreStartContainerRequest*,
                                              v1beta1::PreStartContainerResponse*) override;

 private:
  class Stream;
  ResourceServer(ResourceSpec spec, std::string socket_path, ServerDeps deps);
  void PushToStreams();
  void UpdateDeviceGauges(const v1beta1::ListAndWatchResponse& list) const;
  // The matcher's answer for one container, waiting up to the source's grace for the watch when
  // no pending pod fits.
  Result<MatchedPreference> MatchPreferred(const PreferredRequest& request,
                                           std::chrono::steady_clock::time_point wait_until);
  void ReportMiss(const PlanMiss& miss) const;

  const ResourceSpec spec_;
  const std::string socket_path_;
  const ServerDeps deps_;
  std::unique_ptr<grpc::Server> server_;
  int subscription_ = 0;
  AdmissionMatcher matcher_;

  // Shared with the streams, which may finish after the server object is gone.
  struct Streams {
    std::mutex mu;
    std::set<Stream*> open;  // guarded by mu
  };
  std::shared_ptr<Streams> streams_ = std::make_shared<Streams>();
  std::mutex stop_mu_;
  bool stopped_ = false;       // guarded by stop_mu_
};

grpc::Status ToGrpc(const Status& s);

}  // namespace phalanx::device_plugin
