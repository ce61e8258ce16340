#include "device-plugin/publish/pod_resources_client.h"

#include <fmt/format.h>

namespace phalanx::device_plugin {

PodResourcesClient::PodResourcesClient(const std::string& socket_path)
    : socket_path_(socket_path),
      channel_(grpc::CreateChannel("unix:" + socket_path, grpc::InsecureChannelCredentials())),
      stub_(v1::PodResourcesLister::NewStub(channel_)) {}

Result<v1::ListPodResourcesResponse> PodResourcesClient::Call(std::chrono::milliseconds timeout) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  v1::ListPodResourcesRequest req;
  v1::ListPodResourcesResponse resp;
  grpc::Status s = stub_->List(&ctx, req, &resp);
  if (!s.ok()) {
    return Status(static_cast<StatusCode>(s.error_code()),
                  fmt::format("pod-resources List on {}: {}", socket_path_, s.error_message()));
  }
  return resp;
}

Result<Allocations> PodResourcesClient::List(const std::set<std::string>& resource_names,
                                             std::chrono::milliseconds timeout) {
  auto listed = Call(timeout);
  if (!listed.ok()) return listed.status();
  const v1::ListPodResourcesResponse& resp = *listed;
  Allocations out;
  for (const auto& pod : resp.pod_resources()) {
    PodKey key{pod.namespace_(), pod.name()};
    for (const auto& c : pod.containers()) {
      for (const auto& d : c.devices()) {
        if (!resource_names.count(d.resource_name())) continue;
        for (const auto& id : d.device_ids()) {
          out.by_device[id] = key;
          out.by_pod[key].insert(id);
          out.by_container[key][c.name()].insert(id);
        }
      }
    }
  }
  return out;
}

Result<std::vector<DeviceHolder>> PodResourcesClient::ListHolders(std::chrono::milliseconds timeout) {
  auto listed = Call(timeout);
  if (!listed.ok()) return listed.status();
  const v1::ListPodResourcesResponse& resp = *listed;
  std::vector<DeviceHolder> out;
  for (const auto& pod : resp.pod_resources()) {
    for (const auto& c : pod.containers()) {
      for (const auto& d : c.devices()) {
        for (const auto& id : d.device_ids()) {
          out.push_back(DeviceHolder{id, d.resource_name(), PodKey{pod.namespace_(), pod.name()}, c.name()});
        }
      }
    }
  }
  return out;
}

}  // namespace phalanx::device_plugin
