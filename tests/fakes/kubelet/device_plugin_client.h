// DevicePluginClient: kubelet's side of one device plugin's socket (the device manager's
// plugin client in pkg/kubelet/cm/devicemanager/plugin/v1beta1/client.go).
//
// Connect() dials the plugin's unix socket and waits until it is reachable (kubelet uses
// a blocking dial with a timeout), then asks GetDevicePluginOptions as kubelet does when
// a plugin connects. With `follow` it then runs ListAndWatch on its own thread, keeping
// the latest complete device list; tests wait on it with WaitForDevices (no sleeping).
// Unary calls are made on demand with a deadline.
//
// Thread-safety: all methods are thread-safe. The destructor cancels the stream and
// joins its thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "core/base/result.h"
#include "proto/deviceplugin/v1beta1/api.grpc.pb.h"

namespace phalanx::fake_kubelet {

class DevicePluginClient {
 public:
  using Devices = std::vector<v1beta1::Device>;
  using Clock = std::chrono::steady_clock;

  // Errors: kDeadlineExceeded if the socket is not served within `timeout`; the
  // plugin's status if GetDevicePluginOptions fails.
  static Result<std::unique_ptr<DevicePluginClient>> Connect(const std::string& socket_path,
                                                             bool follow,
                                                             std::chrono::milliseconds timeout);
  ~DevicePluginClient();
  DevicePluginClient(const DevicePluginClient&) = delete;
  DevicePluginClient& operator=(const DevicePluginClient&) = delete;

  const std::string& socket_path() const { return socket_path_; }
  // What GetDevicePluginOptions said at connect time.
  const v1beta1::DevicePluginOptions& options() const { return options_; }

  Result<v1beta1::DevicePluginOptions> GetDevicePluginOptions(std::chrono::milliseconds timeout);
  Result<v1beta1::PreferredAllocationResponse> GetPreferredAllocation(
      const v1beta1::PreferredAllocationRequest& request, std::chrono::milliseconds timeout);
  Result<v1beta1::AllocateResponse> Allocate(const v1beta1::AllocateRequest& request,
                                             std::chrono::milliseconds timeout);
  Result<v1beta1::PreStartContainerResponse> PreStartContainer(
      const v1beta1::PreStartContainerRequest& request, std::chrono::milliseconds timeout);

  // ListAndWatch state (only with follow).
  Devices devices() const;       // the latest list
  int updates() const;           // responses received so far
  bool stream_ended() const;     // the plugin closed or broke the stream
  Status stream_status() const;  // why it ended (OK while running or after a clean finish)

  // Waits until `pred(latest list)` holds. The failure message shows the last list.
  ::testing::AssertionResult WaitForDevices(const std::function<bool(const Devices&)>& pred,
                                            std::chrono::milliseconds timeout) const;
  // Waits until at least `n` ListAndWatch responses arrived.
  ::testing::AssertionResult WaitForUpdates(int n, std::chrono::milliseconds timeout) const;
  ::testing::AssertionResult WaitForStreamEnd(std::chrono::milliseconds timeout) const;

 private:
  DevicePluginClient(std::string socket_path, std::shared_ptr<grpc::Channel> channel);
  void Follow();
  std::string DescribeLocked() const;

  const std::string socket_path_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1beta1::DevicePlugin::Stub> stub_;
  v1beta1::DevicePluginOptions options_;

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  Devices devices_;
  int updates_ = 0;
  bool ended_ = false;
  Status stream_status_;
  grpc::ClientContext stream_context_;
  std::thread stream_thread_;
};

}  // namespace phalanx::fake_kubelet
