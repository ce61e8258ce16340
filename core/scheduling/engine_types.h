// What the scheduling engine and its drivers exchange (engine.h): a waiting gang's request,
// an admission, the driver interface, a pool's head, the engine's counters. Split from
// engine.h so the engine's parts (engine/) can name them without the Engine class.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/placement/cluster_state.h"
#include "core/placement/gang_plan.h"

namespace phalanx::scheduling {

// EngineDriver::Evict's reason starts with this when the victim is a borrowing gang
// evicted to give another queue its nominal quota back.
inline constexpr std::string_view kQueueReclaimReason = "queue reclaim";

struct GangRequest {
  GangKey key;          // this attempt
  std::string job;      // the same across attempts (preemption history); "" = key
  std::string pool;     // required capacity pool; "" = any one pool
  std::string queue;    // team queue (queues.h); "" or unknown = the default queue
  int priority = 0;
  int members = 1;
  int gpus_per_member = 1;
  int milli = placement::kMilliPerGpu;  // < kMilliPerGpu: a one-GPU share (members = 1)
  std::string level;                    // topology level key, with `mode`
  placement::TopologyMode mode = placement::TopologyMode::kNone;
  double submitted = 0;                 // first submission (engine seconds)
  std::optional<double> duration_hint_s;  // expected run time once started
  bool checkpoints = false;             // saves progress (may be preemptible backfill)
  // The driver's own handle for the gang (the simulator's job id), opaque to the engine:
  // handed back with the request (EngineDriver::PriceTermsOf) so that the driver need not
  // find the gang by its key. -1: none.
  int64_t driver_tag = -1;

  int Gpus() const { return members * gpus_per_member; }
  bool IsShare() const { return milli < placement::kMilliPerGpu; }
};

enum class AdmitKind {
  kFits,                  // nothing waits ahead of it in its pool
  kBackfillEndsInTime,    // behind a head; ends before the head's expected start
  kBackfillSpareGpus,     // behind a head; uses GPUs the head will not need
  kPreemptibleBackfill,   // behind a head; reclaimed when the head is ready
  kPreempting,            // evicted lower-tier gangs to fit (cost rules or reclaim)
};

struct Admission {
  GangKey key;
  AdmitKind kind = AdmitKind::kFits;
  std::string pool;                                 // where it runs
  std::vector<placement::MemberPlacement> members;  // whole GPUs, index = member
  // The full plan (level, domain, quality) when the placement came from PlanGang.
  std::optional<placement::GangPlan> plan;
  std::optional<std::pair<NodeName, int>> share;    // a one-GPU share: node, GPU index
  std::vector<GangKey> evicted;                     // kPreempting: the victims
  std::string why;                                  // e.g. the price of the preemption
  bool backfill() const {
    return kind == AdmitKind::kBackfillEndsInTime || kind == AdmitKind::kBackfillSpareGpus ||
           kind == AdmitKind::kPreemptibleBackfill;
  }
};

class EngineDriver {
 public:
  virtual ~EngineDriver() = default;
  virtual const placement::ClusterState& state() const = 0;
  // The state `gang` is planned on: state() minus anything the driver knows is spoken for
  // ahead of it (the extender: GPUs kube-scheduler nominated to higher-priority pods).
  // Never more free GPUs in a pool than state() (a pass skips gangs that state() has no
  // room for without planning them).
  virtual const placement::ClusterState& StateFor(const GangRequest& /*gang*/) const { return state(); }
  // Start (simulator) or reserve and release (extender) the gang. The pods that hold its
  // GPUs in state() afterwards (victim search finds them there); nullopt: nothing
  // changed, the gang keeps waiting.
  virtual std::optional<std::vector<PodUid>> Admit(const GangRequest& gang, const Admission& admission) = 0;
  // Evicts a running gang, every member: at once, or `graceful`ly (asked to checkpoint
  // and stop; only for gangs with NoticeSeconds() > 0). nullopt: nothing changed. 0: its
  // GPUs are free now. > 0: it frees them within that many seconds; the driver calls
  // Engine::OnFinished when it is gone, and the preemptor waits for it meanwhile.
  virtual std::optional<double> Evict(const GangKey& victim, const GangKey& preemptor, std::string_view reason,
                                      bool graceful) = 0;
  // Work a running gang would lose if evicted at once (GPU-seconds since its last
  // checkpoint: TrainingJob status.preemptionCost.gpuSecondsAtRisk).
  virtual double GpuSecondsAtRisk(const GangKey& running) const = 0;
  // Seconds it needs to checkpoint on notice (TrainingJob checkpoint.flushSeconds); 0 =
  // it cannot, only immediate eviction.
  virtual double NoticeSeconds(const GangKey& /*running*/) const { return 0; }
  // Both of the above for the running gang queued as `running`: the cost rule asks them
  // of every candidate of every search (~170 per search on the Philly replay), so a driver
  // answers both from one lookup, or none by its GangRequest::driver_tag. Must equal
  // {GpuSecondsAtRisk, NoticeSeconds} of running.key.
  struct PriceTerms {
    double gpu_seconds_at_risk = 0;
    double notice_s = 0;
  };
  virtual PriceTerms PriceTermsOf(const GangRequest& running) const {
    return {GpuSecondsAtRisk(running.key), NoticeSeconds(running.key)};
  }
  // Whether every member of a running gang is idle (the device plugin's
  // phalanx.io/idle-since on each pod). Asked only for victims whose tier sets
  // idleVictimsFirst (TierPolicy::idle_victims_first); false = busy or unknown.
  virtual bool IsIdle(const GangKey& /*running*/) const { return false; }
};

// A pool's head and what it was promised (debug state, explain).
struct HeadReservation {
  std::string pool;
  GangKey head;
  int priority = 0;
  int gpus = 0;
  int members = 0;
  double expected_start = 0;
  bool reachable = true;  // false: GPUs held by gangs without an expected end
  int spare_gpus = 0;     // left for backfill (b)
};

struct EngineStats {
  uint64_t passes = 0;
  uint64_t admitted = 0;
  uint64_t backfilled = 0;
  uint64_t preemptions = 0;         // gangs evicted
  uint64_t reclaims = 0;            // heads that took back preemptible backfill
  uint64_t preemptions_declined = 0;  // victim sets found but not worth their price
  uint64_t plan_calls = 0;
  uint64_t queue_reclaims = 0;      // borrowing gangs evicted to give a queue its nominal quota
  uint64_t overruns = 0;            // running gangs found past their expected end (re-forecast)
  uint64_t evictions_refused = 0;   // OnEvictionRefused: asked to stop, refused, running on
};

// How much of the waiting line a pass tries (Engine::Pass).
enum class PassScope {
  kFull,          // try every waiting gang
  kArrivalsOnly,  // nothing was released since the last pass: try only new gangs
};

}  // namespace phalanx::scheduling
