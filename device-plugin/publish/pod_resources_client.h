// PodResourcesClient: kubelet's pod-resources v1 List over its unix socket — which pod
// holds which advertised device (the truth for phalanx.io/gpu-state).
// Thread-safe (one channel, calls with a deadline).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "core/base/result.h"
#include "proto/podresources/v1/api.grpc.pb.h"

namespace phalanx::device_plugin {

struct PodKey {
  std::string ns;
  std::string name;
  friend auto operator<=>(const PodKey&, const PodKey&) = default;
};

// device ID -> holder, and holder -> its device IDs (all our resources together), and per
// container.
struct Allocations {
  std::map<std::string, PodKey> by_device;
  std::map<PodKey, std::set<std::string>> by_pod;
  std::map<PodKey, std::map<std::string, std::set<std::string>>> by_container;  // pod -> container -> IDs
};

// One device held by one container (ListHolders).
struct DeviceHolder {
  std::string device_id;
  std::string resource;
  PodKey pod;
  std::string container;
};

class PodResourcesClient {
 public:
  explicit PodResourcesClient(const std::string& socket_path);
  // Devices of `resource_names` held by pods. Unavailable when kubelet does not answer.
  Result<Allocations> List(const std::set<std::string>& resource_names,
                           std::chrono::milliseconds timeout = std::chrono::seconds(5));
  // Every device of every resource with its pod and container (utilisation attribution).
  Result<std::vector<DeviceHolder>> ListHolders(std::chrono::milliseconds timeout = std::chrono::seconds(5));

 private:
  // One List call with a deadline; the error names the socket.
  Result<v1::ListPodResourcesResponse> Call(std::chrono::milliseconds timeout);

  std::string socket_path_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::PodResourcesLister::Stub> stub_;
};

}  // namespace phalanx::device_plugin
