// The admission pass (admission_pass.h): the scheduling engine (core/scheduling,
// docs/algorithms.md §8) driven by the ledger: gated gangs that are complete wait in the
// engine; what it admits is reserved as a plan and its gates are lifted. The simulator
// drives the same engine (sim/policy/phalanx_policy.cc).
//
// A pass runs under the ledger's shared lock (filter and prioritize keep running). Each
// admission the engine makes is committed on its own under the exclusive lock: the shared
// lock is let go, the exclusive one taken, the admission re-checked against the ledger as
// it is then (the gang unchanged and without a plan, every planned GPU still free, the
// domain still the plan's) and reserved whole or not at all, then the pass goes on under
// the shared lock again, on the ledger as it now is. An admission that no longer holds is
// not applied and the engine is told so (the gang keeps waiting, in its place). Nothing is
// applied stale, and nothing is copied: the ledger is never held exclusively for a pass.
// Evictions and the waiting gangs' reasons are applied once, after the pass.
#include "extender/admission/admission_pass.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <shared_mutex>

#include <fmt/format.h>

#include "core/placement/gang_plan.h"
#include "extender/extender_internal.h"

namespace phalanx::extender {

using namespace internal;  // NOLINT: this component's own helpers

namespace {

// An evicted pod is gone within its termination grace period (30 s by default); the
// preemptor waits that long (plus the engine's grace) before it may choose other victims.
constexpr double kTerminationAllowanceSeconds = 30;

}  // namespace

struct AdmissionPass::PlannedEviction {
  GangKey victim;
  PodInfo preemptor;  // a member of the preempting gang (events, the notice's reason)
  std::string preemptor_key;
  std::string reason;
  bool notice = false;  // ask the victim's TrainingJob to checkpoint and stop
};

// What a pass leaves to apply after it, under the exclusive lock (its admissions are
// committed as they are made).
struct AdmissionPass::Plan {
  std::vector<PlannedEviction> evictions;
  std::vector<std::pair<GangKey, std::string>> whys;  // waiting gangs whose reason changed
  bool empty() const { return evictions.empty() && whys.empty(); }
};

// The ledger as the engine's driver. The pass holds `shared` (the ledger's shared lock);
// Admit commits under the exclusive lock (CommitAdmission) and takes `shared` back;
// Evict records the eviction for after the pass. StateFor adds the GPUs nominated to
// pending pods.
class AdmissionPass::Driver final : public scheduling::EngineDriver {
 public:
  Driver(AdmissionPass& pass, std::shared_lock<std::shared_mutex>& shared, MonotonicTime now, Plan& out)
      : pass_(pass), shared_(shared), now_(now), out_(out) {}

  const placement::ClusterState& state() const override { return pass_.h_.ledger.state(); }

  // GPUs kube-scheduler nominated to a pending pod of higher priority are spoken for: a
  // plan that took them would stall the preemptor behind a lower tier (and the gang
  // behind the scheduler's own fit). One overlay per priority, kept for the pass.
  const placement::ClusterState& StateFor(const scheduling::GangRequest& gang) const override {
    auto it = overlays_.find(gang.priority);
    if (it == overlays_.end()) {
      it = overlays_.emplace(gang.priority, pass_.StateWithNominatedHolds(state(), gang.priority)).first;
    }
    return it->second ? *it->second : state();
  }

  std::optional<std::vector<PodUid>> Admit(const scheduling::GangRequest& gang,
                                           const scheduling::Admission& a) override {
    const GangRecord* g = pass_.h_.ledger.FindGang(gang.key);
    if (g == nullptr || g->plan || a.share) return std::nullopt;
    placement::GangPlan plan;
    if (a.plan) {
      plan = *a.plan;
    } else {
      plan.key = gang.key;
      plan.pool = a.pool;
      plan.members = a.members;
    }
    // Plans later in this pass see this one in every overlay too.
    std::vector<placement::ClusterState*> reserved;
    auto unreserve = [&] {
      for (placement::ClusterState* s : reserved) (void)s->Unreserve(plan.key);
    };
    for (auto& [priority, overlay] : overlays_) {
      if (!overlay) continue;
      if (!placement::ReservePlan(*overlay, plan).ok()) {
        unreserve();
        return std::nullopt;
      }
      reserved.push_back(&*overlay);
    }
    const std::set<PodUid> members = g->members;  // the gang as planned
    shared_.unlock();
    if (pass_.hook_for_test_) pass_.hook_for_test_();
    std::optional<std::vector<PodUid>> admitted;
    {
      std::unique_lock exclusive(pass_.h_.mu);
      admitted = pass_.CommitAdmission(gang.key, members, std::move(plan), now_);
    }
    shared_.lock();  // the pass goes on over the ledger as it is now
    if (!admitted) unreserve();
    return admitted;
  }

  // A whole victim gang: a TrainingJob that checkpoints on notice is asked to (the operator
  // drains it after the checkpoint); anything else is evicted by the GangEvictor (budgets
  // checked first, never left half-evicted). Either way the GPUs free only when the pods
  // are gone, so the engine waits (Admit reports the gang finished then).
  std::optional<double> Evict(const GangKey& victim, const GangKey& preemptor, std::string_view reason,
                              bool graceful) override {
    const GangRecord* v = pass_.h_.ledger.FindGang(victim);
    const GangRecord* p = pass_.h_.ledger.FindGang(preemptor);
    if (v == nullptr || p == nullptr || p->members.empty()) return std::nullopt;
    const PodRecord* by = pass_.h_.ledger.FindPod(*p->members.begin());
    if (by == nullptr) return std::nullopt;
    // A queue taking back its nominal quota outranks tiers (the engine chose only borrowing
    // gangs of its cohort); any other eviction follows the tier rules.
    const bool reclaim = reason.starts_with(scheduling::kQueueReclaimReason);
    std::vector<const PodRecord*> members;
    for (const PodUid& uid : v->members) {
      const PodRecord* rec = pass_.h_.ledger.FindPod(uid);
      if (rec == nullptr) continue;
      if (!reclaim && !pass_.h_.config.MayPreempt(by->info.priority, rec->info.priority)) return std::nullopt;
      members.push_back(rec);
    }
    if (members.empty()) return std::nullopt;
    if (!pass_.disruptions_.BudgetRefusal(members).empty()) return std::nullopt;  // a budget would refuse a member
    PlannedEviction e{victim, by->info, preemptor.str(), std::string(reason), false};
    if (const TrainingJobInfo* tj = pass_.JobOf(victim); graceful && tj && tj->notice_seconds_needed > 0) {
      e.notice = true;
      out_.evictions.push_back(std::move(e));
      // When the victim is expected gone: its notice. The engine adds its own grace to the
      // preemptor's wait (kEvictionGrace), as the operator's deadline does to the request.
      return tj->notice_seconds_needed;
    }
    out_.evictions.push_back(std::move(e));
    return kTerminationAllowanceSeconds;
  }

  double GpuSecondsAtRisk(const GangKey& running) const override {
    const GangRecord* g = pass_.h_.ledger.FindGang(running);
    if (g == nullptr) return 0;
    // As the preempt verb counts it: a TrainingJob's reported risk once, else each
    // member's GPUs times its run time.
    const SystemTime wall = pass_.h_.clock.WallNow();
    double risk = 0;
    std::set<std::string> jobs;
    for (const PodUid& uid : g->members) {
      const PodRecord* rec = pass_.h_.ledger.FindPod(uid);
      if (rec == nullptr || rec->holding == Holding::kNone) continue;
      double notice = 0;
      std::string job;
      const double r = pass_.disruptions_.GpuSecondsAtRisk(*rec, wall, &notice, &job);
      if (job.empty() || jobs.insert(job).second) risk += r;
    }
    return risk;
  }

  double NoticeSeconds(const GangKey& running) const override {
    const TrainingJobInfo* tj = pass_.JobOf(running);
    return tj ? tj->notice_seconds_needed : 0;
  }

  // Idle victims first: every member holding GPUs carries phalanx.io/idle-since.
  bool IsIdle(const GangKey& running) const override {
    const GangRecord* g = pass_.h_.ledger.FindGang(running);
    if (g == nullptr) return false;
    int holding = 0;
    for (const PodUid& uid : g->members) {
      const PodRecord* rec = pass_.h_.ledger.FindPod(uid);
      if (rec == nullptr || rec->holding == Holding::kNone) continue;
      if (!rec->info.idle_since) return false;
      ++holding;
    }
    return holding > 0;
  }

 private:
  AdmissionPass& pass_;
  std::shared_lock<std::shared_mutex>& shared_;
  MonotonicTime now_;
  Plan& out_;
  mutable std::map<int, std::optional<placement::ClusterState>> overlays_;
};

const TrainingJobInfo* AdmissionPass::JobOf(const GangKey& key) const {
  const GangRecord* g = h_.ledger.FindGang(key);
  if (g == nullptr || g->members.empty()) return nullptr;
  const PodRecord* rec = h_.ledger.FindPod(*g->members.begin());
  if (rec == nullptr || rec->info.training_job.empty()) return nullptr;
  return h_.ledger.FindTrainingJob(rec->info.ns + "/" + rec->info.training_job);
}

void AdmissionPass::Run(MonotonicTime now) {
  Admit(now);
  RequeueUngatedGangs(now);
}

void AdmissionPass::Admit(MonotonicTime now) {
  Plan plan;
  {
    std::shared_lock shared(h_.mu);
    Pass(now, shared, plan);
  }
  if (plan.empty()) return;
  std::unique_lock exclusive(h_.mu);
  FinishPass(plan);
}

void AdmissionPass::Pass(MonotonicTime now, std::shared_lock<std::shared_mutex>& shared, Plan& plan) {
  // Gated gangs that are complete wait in the engine; a gang that vanished, got a plan
  // elsewhere (filter of an ungated member) or changed size is withdrawn (and re-queued
  // with its new size).
  std::set<GangKey> ready, holding_gangs;
  std::vector<std::pair<const GangRecord*, int>> arrivals;  // to queue, with their size
  for (const auto& [key, g] : h_.ledger.gangs()) {
    int gated = 0, holding = 0, bound = 0;
    for (const PodUid& uid : g.members) {
      const PodRecord* rec = h_.ledger.FindPod(uid);
      if (rec && rec->info.gated) gated++;
      if (rec && rec->holding != Holding::kNone) holding++;
      if (rec && !rec->info.node_name.empty()) bound++;
    }
    if (bound > 0 && engine_running_.contains(key)) engine_ran_.insert(key);
    const auto min = EffectiveMin(g, now);
    const int members = std::max(min.value_or(0), static_cast<int>(g.members.size()));
    if (g.plan || holding > 0) holding_gangs.insert(key);
    if (!g.plan && gated > 0 && min && static_cast<int>(g.members.size()) >= *min) {
      ready.insert(key);
      auto it = engine_waiting_.find(key);
      if (it != engine_waiting_.end() && it->second != members) {
        (void)engine_.Remove(key);
        engine_waiting_.erase(it);
      }
      if (!engine_waiting_.contains(key) && !engine_.IsRunning(key)) arrivals.emplace_back(&g, members);
    } else if (holding_gangs.contains(key) && !engine_.IsRunning(key)) {
      // Running without the engine's admission (planned at filter, bound through
      // kube-scheduler, or found after a restart): the engine counts its GPUs in forecasts
      // and may choose it as a victim.
      if (engine_waiting_.erase(key) > 0) (void)engine_.Remove(key);
      scheduling::GangRequest req = EngineRequestOf(g, members);
      engine_queue_of_[key] = req.queue;
      engine_.AdoptRunning(std::move(req), PoolOf(g), std::vector<PodUid>(g.members.begin(), g.members.end()),
                           EngineSeconds(g.first_seen));
      engine_running_.insert(key);
    }
  }
  // New gangs queue in arrival order (first seen, then name), whatever the ledger's hash
  // order: gangs that arrive together are ordered deterministically.
  std::sort(arrivals.begin(), arrivals.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first->first_seen, a.first->key) < std::tie(b.first->first_seen, b.first->key);
  });
  for (const auto& [g, members] : arrivals) {
    scheduling::GangRequest req = EngineRequestOf(*g, members);
    std::string queue = req.queue;
    if (engine_.Enqueue(std::move(req)).ok()) {
      engine_waiting_.emplace(g->key, members);
      engine_queue_of_[g->key] = std::move(queue);
    }
  }
  std::erase_if(engine_waiting_, [&](const auto& entry) {
    if (ready.contains(entry.first)) return false;
    (void)engine_.Remove(entry.first);
    engine_queue_of_.erase(entry.first);
    return true;
  });
  // Gangs the engine runs that hold nothing any more (finished, deleted, plan dropped).
  std::erase_if(engine_running_, [&](const GangKey& key) {
    if (holding_gangs.contains(key)) return false;
    if (engine_ran_.erase(key) > 0) {
      engine_.OnEnded(key, EngineSeconds(now));
    } else {
      engine_.OnFinished(key);
    }
    engine_queue_of_.erase(key);
    return true;
  });
  // Pods on MIG devices count in their queues (they run outside the engine's placement).
  const bool mig_freed = quotas_.BookMigHolders(now);
  if (engine_waiting_.empty()) return;
  // Nothing came free since the last pass: what failed then fails now, so only new gangs
  // are tried. A full pass at least every second regardless (a gang's min-members may
  // settle, time moves heads' expected starts).
  const bool full = mig_freed || h_.ledger.release_epoch() != release_epoch_seen_ ||
                    now - last_full_pass_ >= std::chrono::seconds(1);
  release_epoch_seen_ = h_.ledger.release_epoch();
  Driver driver(*this, shared, now, plan);
  engine_.Pass(EngineSeconds(now), driver, full ? scheduling::Engine::Scope::kFull : scheduling::Engine::Scope::kArrivalsOnly);
  if (full) last_full_pass_ = now;
  for (auto it = engine_waiting_.begin(); it != engine_waiting_.end();) {
    if (engine_.IsRunning(it->first)) {
      engine_running_.insert(it->first);
      it = engine_waiting_.erase(it);
      continue;
    }
    const GangRecord* g = h_.ledger.FindGang(it->first);
    if (std::string why = engine_.WhyWaiting(it->first); g && g->last_no_fit != why) {
      plan.whys.emplace_back(it->first, std::move(why));
    }
    ++it;
  }
}

std::string AdmissionPass::AdmissionConflict(const GangRecord* g, const std::set<PodUid>& members,
                                        const placement::GangPlan& plan) const {
  if (g == nullptr) return "the gang is gone";
  if (g->plan) return "the gang was planned meanwhile";
  if (g->members != members) return "its members changed";
  const placement::ClusterState& state = h_.ledger.state();
  for (const placement::MemberPlacement& m : plan.members) {
    const auto index = state.FindNode(m.node);
    if (!index) return fmt::format("node {} is gone", m.node.str());
    const placement::NodeState& n = state.node(*index);
    if (m.gpus & ~n.free) {
      return fmt::format("GPUs {} on node {} are no longer free", fmt::join(placement::GpuList(m.gpus & ~n.free), ","),
                         m.node.str());
    }
    if (state.pool(n.pool).name != plan.pool) return fmt::format("node {} left pool {}", m.node.str(), plan.pool);
    if (plan.level >= 0) {
      const placement::DomainId d = n.domains[static_cast<size_t>(plan.level)];
      if (d == placement::kNoDomain || state.domain(plan.level, d).value != plan.domain) {
        return fmt::format("node {} left {}={}", m.node.str(), plan.level_key, plan.domain);
      }
    }
  }
  return "";
}

std::optional<std::vector<PodUid>> AdmissionPass::CommitAdmission(const GangKey& key, const std::set<PodUid>& members,
                                                            placement::GangPlan plan, MonotonicTime now) {
  GangRecord* g = h_.ledger.MutableGang(key);
  std::string conflict = AdmissionConflict(g, members, plan);
  // All or nothing: a plan is reserved whole or not at all.
  if (conflict.empty()) {
    if (Status st = h_.ledger.AdmitPlan(key, std::move(plan), now); !st.ok()) conflict = std::string(st.message());
  }
  if (!conflict.empty()) {
    h_.stats.admission_conflicts++;
    return std::nullopt;  // the engine keeps it waiting and goes on with the ledger as it is
  }
  h_.stats.gangs_admitted++;
  g->last_no_fit.clear();
  // The engine records it once this returns; a filter in between must count it already.
  quotas_.RecordUncounted(*g, g->plan->pool, static_cast<int>(g->plan->members.size()));
  LiftGates(*g);
  return std::vector<PodUid>(members.begin(), members.end());
}

void AdmissionPass::FinishPass(Plan& plan) {
  for (const PlannedEviction& e : plan.evictions) CarryOutEviction(e);
  for (auto& [key, why] : plan.whys) {
    if (GangRecord* g = h_.ledger.MutableGang(key); g && !g->plan) g->last_no_fit = std::move(why);
  }
}

// The victim's members as they are now: the whole gang, whatever joined or left since the
// pass chose it.
void AdmissionPass::CarryOutEviction(const PlannedEviction& e) {
  const GangRecord* v = h_.ledger.FindGang(e.victim);
  if (v == nullptr) return;  // gone already: its GPUs are free
  if (e.notice) {
    if (const TrainingJobInfo* tj = JobOf(e.victim)) {
      disruptions_.RequestNotice({{tj->Key(), fmt::format("{}-{}", e.preemptor_key, tj->Key())}}, e.preemptor,
                                 e.reason);
    }
    for (const PodUid& uid : v->members) {
      if (const PodRecord* rec = h_.ledger.FindPod(uid)) {
        disruptions_.Event(rec->info, "Normal", "Preempted", e.reason + " (asked to checkpoint and stop)");
      }
    }
    h_.stats.preempt_accepted++;
    return;
  }
  EvictionJob job;
  job.group = e.victim.str();
  job.preemptor = "gang " + e.preemptor_key;
  for (const PodUid& uid : v->members) {
    const PodRecord* rec = h_.ledger.FindPod(uid);
    if (rec == nullptr) continue;
    if (!rec->info.node_name.empty()) job.pods.push_back(RefOf(rec->info));
    disruptions_.Event(rec->info, "Normal", "Preempted", e.reason);
  }
  h_.stats.preempt_accepted++;
  disruptions_.Evict(std::move(job));
}

void AdmissionPass::LiftGates(const GangRecord& g) {
  std::vector<PodRef> refs;
  for (const PodUid& uid : g.members) {
    const PodRecord* rec = h_.ledger.FindPod(uid);
    if (!rec || !rec->info.gated) continue;
    refs.push_back(RefOf(rec->info));
    PodInfo ungated = rec->info;
    ungated.gated = false;  // assumed; the informer confirms
    h_.ledger.UpsertPod(ungated, h_.clock.Now());
  }
  // One task per member: the pool lifts a gang's gates in parallel.
  std::vector<WritePool::Task> lifts;
  for (PodRef& ref : refs) {
    lifts.push_back([this, ref = std::move(ref)] {
      if (!writes_.writer.LiftGangGate(ref).ok()) h_.stats.write_errors++;
    });
  }
  writes_.io.FanOut(std::move(lifts), [] {});
}

}  // namespace phalanx::extender
