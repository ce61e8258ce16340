// FakeKubelet: the parts of kubelet a device plugin talks to, over real unix sockets.
//
// Layout under a kubelet directory (the plugin's --kubelet-dir), as on a real node:
//   <kubelet-dir>/device-plugins/kubelet.sock   Registration service (v1beta1)
//   <kubelet-dir>/pod-resources/kubelet.sock    PodResourcesLister (v1), see FakePodResources
//
// Register behaves like kubelet's device manager (devicemanager/plugin/v1beta1/server.go):
// the version must be "v1beta1" and the resource name an extended resource name, else
// the call fails with UNKNOWN and kubelet's message; then kubelet dials
// <kubelet-dir>/device-plugins/<endpoint> (the plugin must already serve it), asks
// GetDevicePluginOptions, and only then answers Register; afterwards it follows
// ListAndWatch. A second registration of a resource replaces (and disconnects) the first.
// Every request is recorded, accepted or not.
//
// Start() and Restart() clean device-plugins/ as kubelet's device manager does on start: every
// file in it except its checkpoint (kubelet_internal_checkpoint, written then) is deleted —
// plugins' sockets and anything else kept there (a lock file); directories stay.
// Restart() is a kubelet restart: both servers stop, the directory is cleaned, and both are
// served again; plugin connections are dropped. Plugins notice by their socket vanishing or
// kubelet.sock being recreated, and must register again. Admitted pods keep their devices
// (the checkpoint) and stay in pod-resources.
//
// devices(): kubelet's admission of pods (DeviceManager, device_manager.h): one at a time,
// GetPreferredAllocation then Allocate per container.
//
// Thread-safety: all methods are thread-safe. Plugin() pointers stay valid until the next
// Restart(), re-registration of that resource, or destruction.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "core/base/result.h"
#include "proto/deviceplugin/v1beta1/api.grpc.pb.h"
#include "tests/fakes/kubelet/device_manager.h"
#include "tests/fakes/kubelet/device_plugin_client.h"
#include "tests/fakes/kubelet/fake_pod_resources.h"

namespace phalanx::fake_kubelet {

struct FakeKubeletOptions {
  // How long Register waits for the plugin's socket to accept connections (kubelet: 10 s).
  std::chrono::milliseconds connect_timeout{10'000};
  // Follow ListAndWatch after a successful registration (kubelet always does).
  bool follow_list_and_watch = true;
};

struct Registration {
  v1beta1::RegisterRequest request;
  Status result;      // what Register answered
  int generation = 0; // kubelet restarts before this request
};

class FakeKubelet {
 public:
  static constexpr const char* kSupportedVersion = "v1beta1";

  // Creates <kubelet_dir>/device-plugins and /pod-resources and starts both servers.
  static Result<std::unique_ptr<FakeKubelet>> Start(const std::string& kubelet_dir,
                                                    FakeKubeletOptions options = {});
  ~FakeKubelet();
  FakeKubelet(const FakeKubelet&) = delete;
  FakeKubelet& operator=(const FakeKubelet&) = delete;

  std::string device_plugin_dir() const;     // <kubelet_dir>/device-plugins
  std::string registration_socket() const;   // <kubelet_dir>/device-plugins/kubelet.sock
  std::string pod_resources_socket() const;  // <kubelet_dir>/pod-resources/kubelet.sock
  FakePodResources& pod_resources();
  DeviceManager& devices() { return *devices_; }
  std::string checkpoint_path() const;       // <kubelet_dir>/device-plugins/kubelet_internal_checkpoint

  std::vector<Registration> registrations() const;
  int generation() const;  // Restart() calls so far

  // Waits until `n` registrations were accepted since the last Restart().
  ::testing::AssertionResult WaitForRegistrations(int n, std::chrono::milliseconds timeout) const;
  // The connection to the plugin registered for `resource_name`, or null.
  DevicePluginClient* Plugin(const std::string& resource_name) const;

  enum class RestartMode {
    kWipeDirectory,        // kubelet's behaviour: every file in device-plugins/ but the checkpoint is deleted
    kRecreateSocketOnly,   // only kubelet.sock is deleted and recreated (plugin sockets stay)
  };
  // Simulates a kubelet restart (see the file comment).
  Status Restart(RestartMode mode = RestartMode::kWipeDirectory);

 private:
  class RegistrationService;
  FakeKubelet(std::string kubelet_dir, FakeKubeletOptions options);
  Status StartServers();
  Status CleanPluginDir();  // kubelet's start: every file but the checkpoint
  void StopServers();
  // Called by the Registration service; returns what Register answers.
  grpc::Status HandleRegister(const v1beta1::RegisterRequest& request);

  const std::string kubelet_dir_;
  const FakeKubeletOptions options_;
  std::unique_ptr<RegistrationService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<FakePodResources> pod_resources_;
  std::unique_ptr<DeviceManager> devices_;

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::vector<Registration> registrations_;
  int accepted_since_restart_ = 0;
  int generation_ = 0;
  std::map<std::string, std::unique_ptr<DevicePluginClient>> plugins_;
};

// kubelet's test for an extended resource name ("vendor.example/thing", not in the
// kubernetes.io namespace).
bool IsExtendedResourceName(const std::string& name);

}  // namespace phalanx::fake_kubelet
