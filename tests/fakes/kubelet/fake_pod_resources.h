// FakePodResources: kubelet's pod-resources v1 server (PodResourcesLister on
// <kubelet-dir>/pod-resources/kubelet.sock) whose answers the test sets.
//
// List returns the pods set with SetPods; Get finds one by namespace/name and, like
// kubelet, fails with UNKNOWN "pod <name> in namespace <ns> not found" otherwise;
// GetAllocatableResources returns what SetAllocatable stored. A status set with
// FailNext() is returned by the next call of any method instead (e.g. kubelet's
// RESOURCE_EXHAUSTED "rejected by rate limit"). Calls are counted.
//
// Thread-safety: all methods are thread-safe.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "core/base/result.h"
#include "proto/podresources/v1/api.grpc.pb.h"

namespace phalanx::fake_kubelet {

class FakePodResources {
 public:
  // Serves on the unix socket `socket_path` (its directory must exist; a stale socket
  // file is replaced). Errors: kUnavailable if the socket cannot be bound.
  static Result<std::unique_ptr<FakePodResources>> Start(const std::string& socket_path);
  ~FakePodResources();

  const std::string& socket_path() const;
  void SetPods(std::vector<v1::PodResources> pods);
  void SetAllocatable(v1::AllocatableResourcesResponse allocatable);
  void FailNext(grpc::Status status);
  int list_calls() const;
  int get_calls() const;

  // Builds a PodResources with one container holding `device_ids` of `resource_name`.
  static v1::PodResources MakePod(const std::string& ns, const std::string& name,
                                  const std::string& container, const std::string& resource_name,
                                  const std::vector<std::string>& device_ids);

 private:
  class Service;
  explicit FakePodResources(std::unique_ptr<Service> service);
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace phalanx::fake_kubelet
