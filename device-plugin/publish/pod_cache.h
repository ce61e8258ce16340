// PodCache: the pods bound to this node as the API server last told us, kept current by a
// watch (KubePodWatch feeds it; tests feed it directly). Readers get an immutable snapshot,
// so GetPreferredAllocation reads it without an API call and without copying pods.
//
// version() grows with every change; WaitForChange() sleeps until it grows (or a deadline),
// so a reader that suspects it is behind can wait for the watch instead of asking the server.
// Synced() is false until the first complete list arrived.
//
// Pods() is in arrival order: the order in which the watch first showed each pod on this node
// (its resourceVersion then, a local sequence where the version is not a number). Kubelet's own
// watch on spec.nodeName delivers the same events in the same order, and kubelet admits pods in
// the order they arrive, so this is kubelet's admission order (docs/device-plugin.md, "Which pod
// kubelet is admitting").
// Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "device-plugin/publish/node_api.h"

namespace phalanx::device_plugin {

class PodCache {
 public:
  using Snapshot = std::shared_ptr<const std::vector<PodOnNode>>;

  // Inserts or replaces the pod with `pod.ns`/`pod.name`.
  void Put(PodOnNode pod);
  void Remove(const std::string& ns, const std::string& name);
  // The first complete list is in (a node without pods counts).
  void SetSynced();

  bool Synced() const;
  Snapshot Pods() const;
  uint64_t version() const;
  // True when version() > `seen` before `deadline`.
  bool WaitForChange(uint64_t seen, std::chrono::steady_clock::time_point deadline) const;

 private:
  void PublishLocked();

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::map<std::string, PodOnNode> pods_;  // "ns/name" -> pod; guarded by mu_
  uint64_t next_seq_ = 0;                  // guarded by mu_
  Snapshot snapshot_ = std::make_shared<const std::vector<PodOnNode>>();  // guarded by mu_
  uint64_t version_ = 0;                   // guarded by mu_
  bool synced_ = false;                    // guarded by mu_
};

}  // namespace phalanx::device_plugin
