// PluginManager: the lifecycle of the node's ResourceServers against kubelet.
//
// A watcher thread keeps this true, polling the device-plugins directory every
// `poll_interval` (two stat calls per resource; inotify would not survive kubelet deleting
// and recreating the whole directory):
//  - every resource is served on <plugin_dir>/phalanx-<resource>.sock; a socket file that
//    disappeared (kubelet restart wipes the directory) or was replaced by another process's
//    (a new inode or change time) -> all servers restart and register again;
//  - kubelet.sock recreated (new inode or change time) -> kubelet restarted: servers restart and
//    re-register;
//  - every resource is registered (version v1beta1, options: preferred allocation
//    available); failures (kubelet absent, refusing) retry with jittered exponential
//    backoff (base 200 ms, cap `backoff_cap`).
// Serving always precedes Register, as kubelet dials the endpoint before answering.
// Thread-safe.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/base/backoff.h"
#include "core/base/status.h"
#include "device-plugin/plugin/device_model.h"
#include "device-plugin/plugin/resource_server.h"

namespace phalanx::device_plugin {

struct FileId {
  ino_t ino = 0;  // 0 = missing
  int64_t ctime_ns = 0;
  bool operator==(const FileId&) const = default;
};

struct ManagerOptions {
  std::string plugin_dir = "/var/lib/kubelet/device-plugins";
  std::chrono::milliseconds poll_interval{200};
  std::chrono::milliseconds register_timeout{15'000};
  std::chrono::milliseconds backoff_cap{10'000};
  // Called after every registration attempt (Events); optional, must not block.
  std::function<void(const ResourceSpec&, const Status&)> on_register;
};

class PluginManager {
 public:
  PluginManager(ManagerOptions options, std::vector<ResourceSpec> resources, ServerDeps deps);
  ~PluginManager();
  PluginManager(const PluginManager&) = delete;
  PluginManager& operator=(const PluginManager&) = delete;

  // Starts the watcher (which serves and registers at once).
  void Start();
  // Stops the watcher and every server; removes our sockets. Idempotent.
  void Stop();

  // True when every resource is served and registered with the current kubelet.
  bool AllRegistered() const;
  int successful_registrations() const;
  int kubelet_restarts() const;
  std::vector<std::string> SocketPaths() const;
  const std::vector<ResourceSpec>& resources() const { return resources_; }

 private:
  void Loop();
  void Tick();
  Status ServeAll();    // (re)starts every server; guarded by mu_ (caller holds it)
  void StopServers();   // caller holds mu_
  Status RegisterOne(const ResourceSpec& spec);
  std::string KubeletSocket() const;

  const ManagerOptions options_;
  const std::vector<ResourceSpec> resources_;
  const ServerDeps deps_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<std::unique_ptr<ResourceServer>> servers_;  // guarded by mu_
  std::vector<bool> registered_;                          // guarded by mu_
  std::vector<FileId> socket_ids_;                        // guarded by mu_: our sockets as bound
  FileId kubelet_id_;                                     // guarded by mu_
  int successes_ = 0;                                     // guarded by mu_
  int restarts_ = 0;                                      // guarded by mu_
  Backoff backoff_;
  std::chrono::steady_clock::time_point next_attempt_{};
  std::thread thread_;
};

}  // namespace phalanx::device_plugin
