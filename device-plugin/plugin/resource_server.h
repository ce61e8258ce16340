// ResourceServer: kubelet's DevicePlugin service for one resource, on its own unix socket
// in the device-plugins directory (gRPC callback API: no thread per stream).
//
// ListAndWatch sends the complete device list (ID, Healthy/Unhealthy, NUMA node) at once
// and again on every health change (HealthTable subscription; only the newest list is
// queued behind a write in flight). GetPreferredAllocation and Allocate follow
// allocation.h; PreStartContainer is not required (options say so) and answers
// UNIMPLEMENTED. Errors reach kubelet as gRPC INVALID_ARGUMENT / FAILED_PRECONDITION /
// RESOURCE_EXHAUSTED with the reason.
//
// Stop() (and the destructor) cancels open streams, stops serving and removes the
// socket file. Thread-safe.
#pragma once

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <spdlog/logger.h>

#include "core/base/result.h"
#include "core/placement/device_set.h"
#include "device-plugin/plugin/allocation.h"
#include "device-plugin/plugin/config.h"
#include "device-plugin/plugin/device_model.h"
#include "device-plugin/plugin/health_table.h"
#include "device-plugin/plugin/plugin_metrics.h"
#include "proto/deviceplugin/v1beta1/api.grpc.pb.h"

namespace phalanx::device_plugin {

// Pending pods on this node carrying phalanx.io/devices (the publisher's, from its pod
// watch; null = no API access, preferred allocation uses topology only). Called on kubelet's
// admission path for a pod that wants `resource` and may use `available`: must not call the
// API server.
class PendingPodSource {
 public:
  virtual ~PendingPodSource() = default;
  virtual std::vector<AnnotatedPod> PendingPods(const std::string& resource,
                                                const std::vector<std::string>& available) = 0;
};

struct ServerDeps {
  const Config* config = nullptr;
  HealthTable* health = nullptr;
  std::shared_ptr<const placement::BandwidthMatrix> bandwidth;
  PendingPodSource* pods = nullptr;          // optional
  const PluginMetrics* metrics = nullptr;    // optional
  std::shared_ptr<spdlog::logger> logger;
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

  const ResourceSpec spec_;
  const std::string socket_path_;
  const ServerDeps deps_;
  std::unique_ptr<grpc::Server> server_;
  int subscription_ = 0;

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
