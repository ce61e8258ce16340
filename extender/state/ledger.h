// Ledger: the extender's view of every GPU in the cluster (docs/architecture.md §1, §2.5): nodes
// (topology, health, capacity pool), pods (requests, node, devices, gang keys, priority),
// gangs (members, min-members, admitted plan and its reservation) and TrainingJob costs.
//
// It wraps placement::ClusterState (who holds which GPU) with the Kubernetes records the
// accounting came from, so every holding can be explained and rebuilt. A pod's GPUs are,
// in order of trust:
//   confirmed  - the device plugin reports them in the node's `phalanx.io/gpu-state`;
//   committed  - the pod carries `phalanx.io/devices` (written by the extender at bind);
//   assumed    - the pod is bound (or being bound) but nothing names its devices yet:
//                the best free set on its node is charged so the count is right.
// Real devices always win over an assumption: an assumed holder that collides with a
// confirmed/committed one is moved to other free GPUs of the node.
// The ledger is a pure function of the objects fed to it (plus plans, which live only
// in memory), so a restarted extender rebuilds the same holdings from the same objects.
// Nodes without a topology annotation are usable by GPU count (status.allocatable) with
// unknown topology.
//
// Thread-compatible: the Extender guards it with a reader/writer lock.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/admission/gang_min_members.h"
#include "core/base/clock.h"
#include "core/json/json.h"
#include "core/placement/cluster_state.h"
#include "core/placement/gang_plan.h"
#include "core/placement/mig_ledger.h"
#include "extender/objects/k8s_objects.h"

namespace phalanx::extender {

enum class Holding { kNone, kAssumed, kCommitted, kConfirmed };
std::string_view HoldingName(Holding holding);

struct NodeRecord {
  NodeInfo info;
  bool topology_known = false;
  std::vector<std::string> uuids;  // by GPU index; empty when the topology is unknown
  std::unordered_map<std::string, int> index_of_uuid;
};

struct PodRecord {
  PodInfo info;
  Holding holding = Holding::kNone;
  NodeName node;  // where its GPUs are charged
  placement::GpuMask gpus = 0;
};

struct GangRecord {
  GangKey key;
  std::set<PodUid> members;  // known, live (not terminal, not deleting) pods with the label
  std::optional<int> min_annotated;
  int timeout_seconds = 0;  // 0 = the config default
  std::string level;
  bool required = false;
  int priority = 0;
  int gpus_per_member = 0;
  std::string pool_selector;
  admission::GangMinMembers settle;
  MonotonicTime first_seen{};
  // Admitted plan (reserved in the ClusterState under `key` until each member commits).
  std::optional<placement::GangPlan> plan;
  MonotonicTime planned_at{};
  std::map<PodUid, int> assignment;  // member -> plan ordinal
  std::string last_no_fit;           // why the last planning attempt failed, in words
  int filter_refusals = 0;           // TryPlan failures: members refused at filter (gang_requeue.cc)

  // Effective min-members: annotation, else the settled labelled count.
  std::optional<int> MinMembers(MonotonicTime now) const { return settle.MinMembers(min_annotated, now); }
};

class Ledger {
 public:
  explicit Ledger(std::vector<std::string> levels);

  // --- event intake (informers, snapshot, the extender's own binds) ------------------
  Status UpsertNode(const NodeInfo& node);
  void RemoveNode(const NodeName& name);
  // Never fails: inconsistencies (devices of another node, collisions) are resolved
  // towards the pod's real devices and counted in warnings().
  void UpsertPod(const PodInfo& pod, MonotonicTime now);
  void RemovePod(const PodUid& uid);
  void UpsertTrainingJob(const TrainingJobInfo& job);
  void RemoveTrainingJob(const std::string& key);

  // --- the extender's own decisions -------------------------------------------------
  // Charges `gpus` on `node` to a pod being bound (assumed until its devices annotation
  // or the plugin's report arrives). FailedPrecondition if the GPUs are not free.
  Status AssumePod(const PodUid& uid, const NodeName& node, placement::GpuMask gpus);
  // Charges MIG devices (indexes into the node's MigNode) to a pod of `priority` being bound.
  Status AssumeMig(const PodUid& uid, const NodeName& node, const std::vector<int>& devices, int priority);
  // Records a plan and reserves its GPUs. AlreadyExists if the gang has one.
  Status AdmitPlan(const GangKey& gang, placement::GangPlan plan, MonotonicTime now);
  // Unreserves and forgets the gang's plan (idempotent).
  void DropPlan(const GangKey& gang);
  // Member ordinal for a pod of an admitted gang: its existing assignment, else the
  // first unassigned ordinal (preferring one whose node is in `candidates`, if given).
  std::optional<int> AssignMember(const GangKey& gang, const PodUid& uid,
                                  const std::function<bool(const NodeName&)>& candidate = nullptr);
  // Turns member `ordinal`'s reservation into `uid`'s allocation (bind barrier release).
  Status CommitMember(const GangKey& gang, int ordinal, const PodUid& uid);

  // --- reads --------------------------------------------------------------------------
  const placement::ClusterState& state() const { return state_; }
  // MIG devices per node and their holders (extender/mig/mig_filter.h).
  const placement::MigLedger& mig() const { return mig_; }
  // Pods that hold MIG devices (the admission pass books them in their team queues without
  // walking every pod). May name a pod whose holding its node's update dropped: check
  // mig().FindPod. mig_version() changes whenever a holding, a holder or a MIG node may have.
  const std::set<PodUid>& mig_holders() const { return mig_holders_; }
  uint64_t mig_version() const { return mig_version_; }
  // The pods whose MIG holding (or pod, or node) changed since mig_version() was `since`,
  // each once; nullopt when the change log no longer reaches back that far (walk
  // mig_holders() instead). The pass re-books only these.
  std::optional<std::vector<PodUid>> MigChangedSince(uint64_t since) const;
  const PodRecord* FindPod(const PodUid& uid) const;
  const PodRecord* FindPodByName(std::string_view ns_name) const;
  const GangRecord* FindGang(const GangKey& key) const;
  GangRecord* MutableGang(const GangKey& key);
  const NodeRecord* FindNode(const NodeName& name) const;
  const TrainingJobInfo* FindTrainingJob(const std::string& key) const;
  const std::unordered_map<GangKey, GangRecord>& gangs() const { return gangs_; }
  const std::unordered_map<PodUid, PodRecord>& pods() const { return pods_; }
  // Unbound, live pods that kube-scheduler nominated to a node (status.nominatedNodeName):
  // kept as an index so gang planning does not walk every pod (Extender::StateWithNominatedHolds).
  const std::set<PodUid>& nominated_pods() const { return nominated_; }
  // Device IDs for `gpus` on `node` (GPU UUIDs); empty when the topology is unknown.
  std::vector<std::string> DeviceIds(const NodeName& node, placement::GpuMask gpus) const;
  uint64_t warnings() const { return warnings_; }
  // Bumped whenever something may have come free: a holding released, a plan dropped, a
  // nomination ended, a node added or updated. Equal values: nothing was released.
  uint64_t release_epoch() const { return release_epoch_; }

  // The whole ledger as JSON (GET /debug/state), deterministic (sorted) so two ledgers
  // built from the same objects render identically.
  json::Json ToJson() const;

 private:
  void Charge(PodRecord& rec);    // (re)computes and applies the pod's holding
  bool ChargeMig(const PodRecord& rec);  // false if a bound MIG pod could not be charged yet
  void ChargeNow(PodRecord& rec);
  void Uncharge(PodRecord& rec);  // releases whatever it holds
  void Unwait(const PodInfo& pod);
  std::optional<placement::GpuMask> RealDevices(const PodRecord& rec, const NodeRecord& node, Holding* kind) const;
  void UpdateGangMembership(const PodRecord* old_rec, const PodRecord& rec, MonotonicTime now);
  void RemoveFromGang(const PodInfo& info);
  void RecomputeGang(GangRecord& gang, MonotonicTime now);
  placement::NodeSpec SpecFor(const NodeRecord& node) const;
  std::shared_ptr<const placement::BandwidthMatrix> SharedMatrix(placement::BandwidthMatrix matrix);

  placement::ClusterState state_;
  placement::MigLedger mig_;
  std::unordered_map<NodeName, NodeRecord> nodes_;
  std::unordered_map<PodUid, PodRecord> pods_;
  std::unordered_map<std::string, PodUid> pod_by_name_;
  std::set<PodUid> nominated_;
  std::unordered_map<GangKey, GangRecord> gangs_;
  // Bound pods that hold nothing yet (node unknown or full), re-charged when their node changes.
  std::unordered_map<NodeName, std::set<PodUid>> waiting_;
  std::unordered_map<std::string, TrainingJobInfo> jobs_;
  std::vector<std::shared_ptr<const placement::BandwidthMatrix>> matrices_;  // shared per machine shape
  uint64_t warnings_ = 0;
  uint64_t release_epoch_ = 0;
  std::set<PodUid> mig_holders_;
  uint64_t mig_version_ = 0;
  struct MigChange {
    uint64_t version;
    PodUid pod;
  };
  static constexpr size_t kMigLogLength = 16384;  // past it, MigChangedSince says walk them all
  std::deque<MigChange> mig_log_;                 // the last changes, by version
  void NoteMigChange(const PodUid& uid);
  void NoteMigNode(const NodeName& node);  // every holder on the node changed
};

}  // namespace phalanx::extender
