// BindVerb: kube-scheduler's bind verb (docs/architecture.md §2.5 "Bind barrier").
//   non-gang pods: choose devices, patch phalanx.io/devices, POST the Binding (write lane kBind).
//   gang members: the permit barrier. Each bind is held (its callback kept, no thread) until
//   held + bound >= min-members; then every held member is committed (devices patched = the
//   commit point) and bound, each write of the gang in parallel on the write pool (lane
//   kBulk). A barrier that times out (ExpireBarriers, from the tick) fails every held bind
//   together and drops the plan.
// Only the active extender binds; others fail bind with a retryable error.
// The barriers are guarded by the ledger lock (VerbHandle::mu): Bind takes it; the methods
// marked "mu held" expect the caller to hold it. Thread-safe otherwise; bind callbacks run on
// the write pool's threads (or inline for immediate errors).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/json/json.h"
#include "extender/verbs/verb_handle.h"
#include "extender/verbs/wire.h"
#include "extender/writes/write_context.h"

namespace phalanx::extender {

class BindVerb {
 public:
  BindVerb(VerbHandle& handle, WriteHandle writes, AdmissionHandle& admission)
      : h_(handle), w_(writes), admission_(admission) {}

  void Bind(const BindArgs& args, BindCallback done);

  // Binds held at barriers now (takes the shared lock).
  size_t HeldBinds() const;
  // --- for the tick and introspection; mu held (exclusively where it says so) ---
  bool HasBarrier(const GangKey& key) const { return barriers_.contains(key); }
  // Members of the gang's plan past the commit point (all of them once the plan is done).
  int CommittedMembers(const GangKey& key) const;
  bool AnyBarrierExpired(MonotonicTime now) const;
  // Fails every barrier past its deadline (and drops its plan). mu held exclusively.
  void ExpireBarriers(MonotonicTime now);
  // A gang's barrier: binds held and when it times out; nullopt without one.
  std::optional<std::pair<size_t, MonotonicTime>> BarrierOf(const GangKey& key) const;
  json::Json BarriersJson() const;  // [{"gang", "held"}] for /debug/state

 private:
  struct HeldBind {
    PodUid uid;
    int ordinal = 0;
    BindCallback done;
    WriteClock::time_point deadline;  // kube-scheduler gives up on this bind (httpTimeout)
  };
  struct Barrier {
    std::vector<HeldBind> held;
    MonotonicTime deadline{};
  };
  // A released barrier's writes in flight on the write pool.
  struct GangCommit {
    struct Member {
      PodRef ref;
      PodInfo pod;
      std::string node;
      DeviceAssignment devices;
      BindCallback done;
    };
    GangKey key;
    std::vector<Member> members;
    std::vector<char> patched;         // [i]: member i's devices landed (written by its task only)
    std::atomic<bool> failing{false};  // a devices patch failed: the commit point is lost
    std::mutex mu;
    Status failure = OkStatus();       // guarded by mu: the first failure
  };

  void ReleaseBarrier(const GangKey& key);                        // exclusive lock held
  void FailBarrier(const GangKey& key, const std::string& why);   // exclusive lock held
  void FailCommit(const std::shared_ptr<GangCommit>& commit);     // on the write pool, no lock
  void BindCommitted(const std::shared_ptr<GangCommit>& commit);  // on the write pool, no lock

  VerbHandle& h_;
  WriteHandle w_;
  AdmissionHandle& admission_;
  std::map<GangKey, Barrier> barriers_;  // guarded by h_.mu
};

}  // namespace phalanx::extender
