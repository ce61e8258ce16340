// AdmissionMatcher: which pod and container kubelet is admitting when it calls
// GetPreferredAllocation or Allocate (the calls carry no pod identity), and the devices the
// extender planned for that container (phalanx.io/devices, per container).
//
// What kubelet guarantees (device manager, v1.26): pods are admitted one at a time, in the order
// its watch on spec.nodeName delivered them; for each container asking for the resource
// (initContainers, then containers, in spec order) it calls GetPreferredAllocation once (when the
// plugin offers it; with NUMA-aligned devices it may skip it) and then Allocate once, one container
// per call. A pod whose admission fails is not retried (it turns Failed).
//
// So the plugin walks the pods as kubelet does: the caller passes the pods bound here that may
// still be admitted, in arrival order (the order its own watch saw them, which is kubelet's), each
// with its containers that hold no device yet; a call is for the first pod whose next unserved
// container asks for exactly the requested number of devices. The matcher remembers which
// containers it served, so the next call moves on to the next container or pod.
//
// The answer for a planned container is its plan, exactly. When the plan cannot be honoured
// (devices no longer available, a different number, kubelet's must-include outside it, or an
// annotated pod without a plan for this container) the answer is the topology choice among the
// devices no other pending pod is planned to get, and the miss is returned for the caller to say
// so (metric, Event on the pod): another pod's planned devices are never handed out while others
// are available. Allocate with devices other than the ones answered is a miss too.
// Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "core/base/result.h"
#include "core/placement/device_set.h"
#include "device-plugin/plugin/allocation.h"
#include "device-plugin/plugin/device_model.h"

namespace phalanx::device_plugin {

struct PendingContainer {
  std::string name;
  int count = 0;              // devices of the resource it asks for
  bool planned = false;       // phalanx.io/devices names devices of this resource for it
  std::vector<std::string> plan;  // those devices, as written
};

// A pod kubelet may still admit, with its containers that hold none of the resource's devices.
struct PendingPod {
  std::string key;  // "namespace/name"
  std::string uid;
  bool gang = false;
  bool annotated = false;  // phalanx.io/devices names devices of this resource (for any container)
  std::vector<PendingContainer> containers;  // asking for the resource, kubelet's order
};

// A planned container that did not get its plan.
struct PlanMiss {
  std::string pod;  // "namespace/name"
  std::string uid;
  std::string container;
  bool gang = false;
  std::vector<std::string> planned;
  std::vector<std::string> given;
  // unavailable | size | must_include | not_planned | kubelet_chose_other
  std::string reason;
};

struct MatchedPreference {
  PreferredChoice choice;
  bool identified = false;  // a pending pod's container was matched to the call
  std::string pod, container;
  std::optional<PlanMiss> miss;
};

class AdmissionMatcher {
 public:
  AdmissionMatcher(const ResourceSpec& resource, std::shared_ptr<const placement::BandwidthMatrix> bandwidth);

  // GetPreferredAllocation for one container. When no pending pod can be the one
  // (identified == false) nothing is recorded and the answer avoids every pending plan: the
  // caller may wait for its pod watch and ask again. Errors as ChoosePreferred.
  Result<MatchedPreference> Preferred(const PreferredRequest& request, std::span<const PendingPod> pods);
  // Allocate for one container with `ids`: after Preferred, checks kubelet allocated what was
  // answered; without one (kubelet skipped GetPreferredAllocation), serves the next container
  // asking for ids.size() devices. A planned container given other devices is a miss.
  std::optional<PlanMiss> Allocated(const std::vector<std::string>& ids, std::span<const PendingPod> pods);

 private:
  struct Served {
    std::string uid, pod, container;
    bool gang = false;
    bool planned = false;
    std::vector<std::string> plan, answered;
  };
  // The pod and container a call for `size` devices is for, or null.
  const PendingPod* Identify(int size, std::span<const PendingPod> pods, const PendingContainer** container) const;
  void Prune(std::span<const PendingPod> pods);  // forgets pods no longer pending
  std::set<std::string> PlannedForOthers(std::span<const PendingPod> pods, const std::string& uid,
                                         const std::string& container) const;

  const ResourceSpec& resource_;
  const std::shared_ptr<const placement::BandwidthMatrix> bandwidth_;
  mutable std::mutex mu_;
  std::map<std::string, std::set<std::string>> served_;  // guarded by mu_: pod uid -> containers
  std::optional<Served> last_;                            // guarded by mu_: answered, awaiting Allocate
};

}  // namespace phalanx::device_plugin
