// Store: the fake API server's objects and their Kubernetes semantics, independent of HTTP (the
// HTTP router and the in-process test API both call it, so both see the same behaviour).
//
//  - One global, monotonically increasing resourceVersion (like etcd's revision) shared by all
//    resources; every write that changes an object gets the next one. A write that changes
//    nothing (same object apart from resourceVersion) is a no-op: no new version, no event.
//  - metadata.uid, creationTimestamp on create; generateName; generation = 1 on create, +1 when
//    anything outside metadata and status changes.
//  - Kinds with a status subresource: the main endpoint keeps the stored status, /status keeps
//    everything but status.
//  - Deletion: preconditions (uid, resourceVersion); finalizers keep an object (with
//    deletionTimestamp, deletionGracePeriodSeconds 0) until an update removes the last one;
//    bound, non-terminal pods deleted with a grace period > 0 stay (deletionTimestamp = now +
//    grace) until deleted with grace 0, as a kubelet would; ownerReferences cascade (Background
//    and Foreground delete dependents, Orphan removes the reference).
//  - A bounded history of events serves watches that resume from a resourceVersion and
//    consistent paginated lists; anything older than the history is 410 Expired.
//
// Thread-safety: every public method is thread-safe (one mutex). Watch sinks are called with that
// mutex held, so they must not call back into the Store.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/json/json.h"
#include "tests/fakes/apiserver/api_error.h"
#include "tests/fakes/apiserver/kind_registry.h"
#include "tests/fakes/apiserver/patch.h"
#include "tests/fakes/apiserver/selectors.h"
#include "tests/fakes/apiserver/stored_object.h"

namespace phalanx::fakes::apiserver {

struct StoreOptions {
  // Events kept for watch resumption and paginated lists; older versions answer 410 Expired.
  size_t event_window = 100000;
  // Eviction adds the DisruptionTarget condition (reason EvictionByEvictionAPI) before deleting,
  // as Kubernetes >= 1.26 does with PodDisruptionConditions.
  bool eviction_disruption_condition = true;
  // Wall clock for creationTimestamp/deletionTimestamp; null = system_clock.
  std::function<std::chrono::system_clock::time_point()> now;
  // Called (with the Store's mutex held: only schedule work) when a pod starts a graceful
  // deletion, e.g. to play the kubelet and finish it later with grace 0.
  std::function<void(const std::string& namespace_, const std::string& name,
                     const std::string& uid, int64_t grace_seconds)>
      on_graceful_pod_delete;
};

enum class Subresource { kNone, kStatus };

struct ListOptions {
  std::string namespace_;  // "" = all namespaces
  LabelSelector labels;
  FieldSelector fields;
  size_t limit = 0;  // 0 = everything
  std::string continue_token;
};

struct ListResult {
  std::vector<ObjectPtr> items;
  uint64_t resource_version = 0;
  std::string continue_token;  // "" on the last page
};

struct DeleteOptions {
  std::optional<int64_t> grace_period_seconds;
  std::string propagation_policy;  // "", "Background", "Foreground", "Orphan"
  std::optional<std::string> precondition_uid, precondition_resource_version;
};

struct DeleteResult {
  ObjectPtr object;  // the last state (gone) or the terminating object (still present)
  bool gone = false;
};

// Receives one watch stream's lines. Called with the Store's mutex held.
class WatchSink {
 public:
  virtual ~WatchSink() = default;
  // One or more complete JSON lines. False when the client is gone (the watch is removed).
  virtual bool Send(std::string lines) = 0;
  virtual void Close() = 0;  // the server ends the stream
  virtual bool Gone() const = 0;
};

struct WatchOptions {
  std::string namespace_;
  LabelSelector labels;
  FieldSelector fields;
  // nullopt (or "0"): synthetic ADDED events for the current objects, then changes. Otherwise
  // the changes after that version (410 when it is older than the history).
  std::optional<uint64_t> resource_version;
  bool bookmarks = false;
};

class Store {
 public:
  Store(KindRegistry& kinds, StoreOptions options);

  // POST. `object` as sent by the client; namespace_ from the URL ("" for cluster-scoped).
  ApiResult<ObjectPtr> Create(const KindInfo& kind, const std::string& namespace_, json::Json object);
  // Inserts an object as given (status kept, no defaulting); fills missing metadata. For seeds
  // and tests. Replaces an existing object of the same name.
  ApiResult<ObjectPtr> Seed(const KindInfo& kind, json::Json object);
  ApiResult<ObjectPtr> Get(const KindInfo& kind, const std::string& namespace_,
                           const std::string& name);
  ApiResult<ListResult> List(const KindInfo& kind, const ListOptions& options);
  // PUT (main or status endpoint).
  ApiResult<ObjectPtr> Update(const KindInfo& kind, const std::string& namespace_,
                              const std::string& name, json::Json object, Subresource sub);
  // PATCH; apply creates the object when missing, and removes the fields `field_manager`
  // applied before and no longer applies (patch.h RemoveDroppedFields).
  ApiResult<ObjectPtr> Patch(const KindInfo& kind, const std::string& namespace_,
                             const std::string& name, PatchType type, std::string_view body,
                             Subresource sub, const std::string& field_manager = "");
  ApiResult<DeleteResult> Delete(const KindInfo& kind, const std::string& namespace_,
                                 const std::string& name, const DeleteOptions& options);
  // pods/binding: sets spec.nodeName (and the binding's annotations), PodScheduled=True. The
  // binding's metadata.uid and metadata.resourceVersion, when set, are preconditions (409).
  ApiResult<ObjectPtr> Bind(const std::string& namespace_, const std::string& name,
                            const json::Json& binding);
  // pods/eviction: the pod's PodDisruptionBudget (429 when it allows no disruption, 500 when
  // several select the pod; nothing changes), then the DisruptionTarget condition (optional),
  // then delete with the Eviction's DeleteOptions.
  ApiResult<ObjectPtr> Evict(const std::string& namespace_, const std::string& name,
                             const json::Json& eviction);

  // Starts a watch: replays (under the lock, so nothing is missed) then streams. Returns its id.
  ApiResult<uint64_t> Watch(const KindInfo& kind, WatchOptions options,
                            std::shared_ptr<WatchSink> sink);
  void StopWatch(uint64_t id);  // closes the sink
  void SendBookmarks();         // a BOOKMARK at the current version to watches that asked
  void DropAllWatches();        // closes every stream (apiserver restart)
  void ReapGoneWatches();       // forgets watches whose client went away
  size_t watch_count() const;
  // Forgets the whole event history: every older resourceVersion now answers 410.
  void CompactHistory();

  uint64_t resource_version() const;
  // Blocks until the resourceVersion exceeds `after` or the deadline passes; the current version.
  uint64_t WaitForChange(uint64_t after, std::chrono::steady_clock::time_point deadline) const;

 private:
  struct Table {
    KindInfo kind;
    std::map<std::string, ObjectPtr> objects;  // key "<ns>/<name>"
  };
  struct Event {
    const char* type;  // "ADDED", "MODIFIED", "DELETED"
    uint64_t rv;
    std::string storage_key;
    ObjectPtr object;  // new state (DELETED: last state at the deletion's version)
    ObjectPtr prev;    // state before (null for ADDED)
  };
  struct Watcher {
    std::string storage_key;
    WatchOptions options;
    std::shared_ptr<WatchSink> sink;
    KindInfo kind;
  };

  Table& TableFor(const KindInfo& kind);
  std::string Now(std::chrono::seconds offset = std::chrono::seconds(0)) const;
  std::string NextName(const std::string& prefix);
  uint64_t NextRv() { return ++rv_; }

  // Writes `object` (metadata.resourceVersion set to a new version), records the event.
  ObjectPtr Commit(Table& table, json::Json object, const ObjectPtr& prev);
  // Removes the object; the DELETED event carries `last` (default: current) at a new version.
  ObjectPtr Remove(Table& table, const ObjectPtr& current, json::Json* last = nullptr);
  std::string NewUid();
  void Record(Event event);
  void IndexOwners(const ObjectPtr& prev, const ObjectPtr& next, const std::string& storage_key);

  ApiResult<ObjectPtr> CreateLocked(const KindInfo& kind, const std::string& namespace_,
                                    json::Json object);
  ApiResult<ObjectPtr> UpdateLocked(Table& table, const ObjectPtr& current, json::Json object,
                                    Subresource sub);
  ApiResult<DeleteResult> DeleteLocked(Table& table, const ObjectPtr& current,
                                       const DeleteOptions& options);
  void CascadeLocked(const ObjectPtr& owner, const std::string& policy);
  ApiResult<ObjectPtr> AdmitPodCreate(json::Json& pod);
  // The eviction's verdict from the budgets selecting `pod` (disruption_budget.h): nullopt = go.
  std::optional<ApiError> CheckDisruptionBudgetsLocked(const ObjectPtr& pod);
  // The summed spec.replicas of the pods' controllers (ownerReferences with controller: true,
  // each counted once); nullopt when a pod has none, or it is missing or has no replicas.
  std::optional<int64_t> ControllersScaleLocked(const std::vector<json::Json>& pods);
  std::optional<ApiError> ValidatePodUpdate(const json::Json& old_pod, const json::Json& new_pod);
  // A CRD update as the real API server validates it (group, scope and plural immutable; every
  // stored version still served), then re-registers the kind so its new schema applies at once.
  std::optional<ApiError> UpdateCrdLocked(const KindInfo& kind, const json::Json& old_crd,
                                          const json::Json& new_crd);

  bool MatchesWatch(const Watcher& w, const StoredObject& object) const;
  void Deliver(Watcher& w, const Event& event, std::string* out) const;
  void Broadcast(const Event& event);

  KindRegistry& kinds_;
  const StoreOptions options_;

  mutable std::mutex mu_;
  mutable std::condition_variable changed_;
  uint64_t rv_ = 0;
  uint64_t compacted_rv_ = 0;  // versions below this are no longer in events_
  std::mt19937_64 rng_;
  std::map<std::string, Table> tables_;  // storage key -> table
  // Server-side apply: each manager's last applied configuration, by "<uid>\n<manager>".
  std::unordered_map<std::string, json::Json> applied_;
  std::deque<Event> events_;
  // owner uid -> (storage key, object key) of its dependents
  std::unordered_map<std::string, std::set<std::pair<std::string, std::string>>> dependents_;
  uint64_t next_watch_id_ = 1;
  std::map<uint64_t, Watcher> watchers_;
};

}  // namespace phalanx::fakes::apiserver
