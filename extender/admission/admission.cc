// The tick: bind-barrier timeouts, plan expiry, and gang admission. Admission is the
// scheduling engine (core/scheduling, docs/algorithms.md §8) driven by the ledger: gated
// gangs that are complete wait in the engine; what it admits is reserved as a plan and
// its gates are lifted. The simulator drives the same engine (sim/policy/phalanx_policy.cc).
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
#include "extender/extender.h"

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

double EngineSeconds(MonotonicTime t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); }

// An evicted pod is gone within its termination grace period (30 s by default); the
// preemptor waits that long (plus the engine's grace) before it may choose other victims.
constexpr double kTerminationAllowanceSeconds = 30;

}  // namespace

struct Extender::PlannedEviction {
  GangKey victim;
  PodInfo preemptor;  // a member of the preempting gang (events, the notice's reason)
  std::string preemptor_key;
  std::string reason;
  bool notice = false;  // ask the victim's TrainingJob to checkpoint and stop
};

// What a pass leaves to apply after it, under the exclusive lock (its admissions are
// committed as they are made).
struct Extender::AdmissionPlan {
  std::vector<PlannedEviction> evictions;
  std::vector<std::pair<GangKey, std::string>> whys;  // waiting gangs whose reason changed
  bool empty() const { return evictions.empty() && whys.empty(); }
};

// The ledger as the engine's driver. The pass holds `shared` (the ledger's shared lock);
// Admit commits under the exclusive lock (CommitAdmission) and takes `shared` back;
// Evict records the eviction for after the pass. StateFor adds the GPUs nominated to
// pending pods.
class Extender::AdmissionDriver final : public scheduling::EngineDriver {
 public:
  AdmissionDriver(Extender& ext, std::shared_lock<std::shared_mutex>& shared, MonotonicTime now, AdmissionPlan& out)
      : ext_(ext), shared_(shared), now_(now), out_(out) {}

  const placement::ClusterState& state() const override { return ext_.ledger_.state(); }

  // GPUs kube-scheduler nominated to a pending pod of higher priority are spoken for: a
  // plan that took them would stall the preemptor behind a lower tier (and the gang
  // behind the scheduler's own fit). One overlay per priority, kept for the pass.
  const placement::ClusterState& StateFor(const scheduling::GangRequest& gang) const override {
    auto it = overlays_.find(gang.priority);
    if (it == overlays_.end()) {
      it = overlays_.emplace(gang.priority, ext_.StateWithNominatedHolds(state(), gang.priority)).first;
    }
    return it->second ? *it->second : state();
  }

  std::optional<std::vector<PodUid>> Admit(const scheduling::GangRequest& gang,
                                           const scheduling::Admission& a) override {
    const GangRecord* g = ext_.ledger_.FindGang(gang.key);
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
    if (ext_.admission_hook_for_test_) ext_.admission_hook_for_test_();
    std::optional<std::vector<PodUid>> admitted;
    {
      std::unique_lock exclusive(ext_.mu_);
      admitted = ext_.CommitAdmission(gang.key, members, std::move(plan), now_);
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
    const GangRecord* v = ext_.ledger_.FindGang(victim);
    const GangRecord* p = ext_.ledger_.FindGang(preemptor);
    if (v == nullptr || p == nullptr || p->members.empty()) return std::nullopt;
    const PodRecord* by = ext_.ledger_.FindPod(*p->members.begin());
    if (by == nullptr) return std::nullopt;
    // A queue taking back its nominal quota outranks tiers (the engine chose only borrowing
    // gangs of its cohort); any other eviction follows the tier rules.
    const bool reclaim = reason.starts_with(scheduling::kQueueReclaimReason);
    std::vector<const PodRecord*> members;
    for (const PodUid& uid : v->members) {
      const PodRecord* rec = ext_.ledger_.FindPod(uid);
      if (rec == nullptr) continue;
      if (!reclaim && !ext_.config_.MayPreempt(by->info.priority, rec->info.priority)) return std::nullopt;
      members.push_back(rec);
    }
    if (members.empty()) return std::nullopt;
    if (!ext_.disruptions_.BudgetRefusal(members).empty()) return std::nullopt;  // a budget would refuse a member
    PlannedEviction e{victim, by->info, preemptor.str(), std::string(reason), false};
    if (const TrainingJobInfo* tj = ext_.JobOf(victim); graceful && tj && tj->notice_seconds_needed > 0) {
      e.notice = true;
      out_.evictions.push_back(std::move(e));
      return tj->notice_seconds_needed + 60;  // the deadline the request gives the operator
    }
    out_.evictions.push_back(std::move(e));
    return kTerminationAllowanceSeconds;
  }

  double GpuSecondsAtRisk(const GangKey& running) const override {
    const GangRecord* g = ext_.ledger_.FindGang(running);
    if (g == nullptr) return 0;
    // As the preempt verb counts it: a TrainingJob's reported risk once, else each
    // member's GPUs times its run time.
    const SystemTime wall = ext_.clock_.WallNow();
    double risk = 0;
    std::set<std::string> jobs;
    for (const PodUid& uid : g->members) {
      const PodRecord* rec = ext_.ledger_.FindPod(uid);
      if (rec == nullptr || rec->holding == Holding::kNone) continue;
      double notice = 0;
      std::string job;
      const double r = ext_.disruptions_.GpuSecondsAtRisk(*rec, wall, &notice, &job);
      if (job.empty() || jobs.insert(job).second) risk += r;
    }
    return risk;
  }

  double NoticeSeconds(const GangKey& running) const override {
    const TrainingJobInfo* tj = ext_.JobOf(running);
    return tj ? tj->notice_seconds_needed : 0;
  }

  // Idle victims first: every member holding GPUs carries phalanx.io/idle-since.
  bool IsIdle(const GangKey& running) const override {
    const GangRecord* g = ext_.ledger_.FindGang(running);
    if (g == nullptr) return false;
    int holding = 0;
    for (const PodUid& uid : g->members) {
      const PodRecord* rec = ext_.ledger_.FindPod(uid);
      if (rec == nullptr || rec->holding == Holding::kNone) continue;
      if (!rec->info.idle_since) return false;
      ++holding;
    }
    return holding > 0;
  }

 private:
  Extender& ext_;
  std::shared_lock<std::shared_mutex>& shared_;
  MonotonicTime now_;
  AdmissionPlan& out_;
  mutable std::map<int, std::optional<placement::ClusterState>> overlays_;
};

const TrainingJobInfo* Extender::JobOf(const GangKey& key) const {
  const GangRecord* g = ledger_.FindGang(key);
  if (g == nullptr || g->members.empty()) return nullptr;
  const PodRecord* rec = ledger_.FindPod(*g->members.begin());
  if (rec == nullptr || rec->info.training_job.empty()) return nullptr;
  return ledger_.FindTrainingJob(rec->info.ns + "/" + rec->info.training_job);
}

std::optional<int> Extender::EffectiveMin(const GangRecord& g, MonotonicTime now) const {
  return g.MinMembers(now);
}

placement::GangSpec Extender::SpecOf(const GangRecord& g, int members) const {
  placement::GangSpec spec;
  spec.key = g.key;
  spec.members = members;
  spec.gpus_per_member = std::clamp(g.gpus_per_member, 1, placement::kMaxGpusPerNode);
  if (!g.pool_selector.empty()) spec.pool = g.pool_selector;
  if (!g.level.empty() && ledger_.state().LevelIndex(g.level) >= 0) {
    spec.level = g.level;
    spec.mode = g.required ? placement::TopologyMode::kRequired : placement::TopologyMode::kPreferred;
  }
  return spec;
}

std::string Extender::TryPlan(GangRecord& g, MonotonicTime now, bool* over_quota) {
  std::string why = TryPlanOnce(g, now, over_quota);
  if (!why.empty()) g.filter_refusals++;
  return why;
}

std::string Extender::TryPlanOnce(GangRecord& g, MonotonicTime now, bool* over_quota) {
  auto min = EffectiveMin(g, now);
  const int live = static_cast<int>(g.members.size());
  if (!min) {
    return g.last_no_fit = fmt::format(
               "gang {}: {} member(s) seen; without phalanx.io/gang-min-members the count is taken once no new "
               "member appears for {} ms",
               g.key.str(), live, config_.member_settle.count());
  }
  if (live < *min) {
    return g.last_no_fit = fmt::format("gang {}: {} of {} members exist; waiting for the rest", g.key.str(),
                                       live, *min);
  }
  if (!g.level.empty() && ledger_.state().LevelIndex(g.level) < 0) {
    return g.last_no_fit = fmt::format("gang {}: topology level \"{}\" is not configured (topologyLevels)",
                                       g.key.str(), g.level);
  }
  // kube-scheduler counts a nominated preemptor's resources as taken on its node; a plan that
  // took them would stall the preemptor behind a lower tier (and the gang behind the
  // scheduler's own fit), so plan as if they were held.
  const std::optional<placement::ClusterState> held = StateWithNominatedHolds(ledger_.state(), g.priority);
  auto planned = placement::PlanGang(held ? *held : ledger_.state(), SpecOf(g, std::max(*min, live)));
  if (!planned.ok()) return g.last_no_fit = fmt::format("gang {}: {}", g.key.str(), planned.status().message());
  if (!planned->fits()) return g.last_no_fit = fmt::format("gang {}: {}", g.key.str(), planned->no_fit->Message());
  // The team queue's quota, as the engine applies it to gated gangs: an ungated gang (no
  // webhook, or created while it was away) must not run its queue past its quota either.
  const int members = static_cast<int>(planned->plan->members.size());
  const std::string pool = planned->plan->pool;
  if (std::string why = QuotaRefusal(g, pool, members); !why.empty()) {
    if (over_quota != nullptr) *over_quota = true;
    return g.last_no_fit = fmt::format("gang {}: {}", g.key.str(), why);
  }
  const GangKey key = g.key;
  Status st = ledger_.AdmitPlan(key, std::move(*planned->plan), now);
  if (!st.ok()) return fmt::format("gang {}: {}", key.str(), st.message());
  RecordUncounted(g, pool, members);
  stats_.gangs_admitted++;
  g.last_no_fit.clear();
  return "";
}

std::optional<placement::ClusterState> Extender::StateWithNominatedHolds(const placement::ClusterState& base,
                                                                        int priority) const {
  std::optional<placement::ClusterState> state;
  for (const PodUid& uid : ledger_.nominated_pods()) {
    const PodRecord* rec = ledger_.FindPod(uid);
    if (rec == nullptr || rec->info.gpus <= 0 || rec->info.priority <= priority || rec->holding != Holding::kNone) {
      continue;
    }
    const PodInfo& p = rec->info;
    if (!state) state.emplace(base);
    const auto index = state->FindNode(NodeName(p.nominated_node));
    if (!index) continue;
    placement::GpuMask free = state->node(*index).free, take = 0;
    for (int n = 0; n < p.gpus && free != 0; ++n) {
      const placement::GpuMask lowest = free & (~free + 1);
      take |= lowest;
      free &= ~lowest;
    }
    if (take != 0) (void)state->Allocate(PodUid("nominated:" + uid.str()), NodeName(p.nominated_node), take, p.priority);
  }
  return state;
}

// --- tick: barrier timeouts, plan expiry, admission -------------------------------------------

void Extender::Tick() {
  const MonotonicTime now = clock_.Now();
  std::lock_guard admission(admission_mu_);
  bool due = false;
  {
    std::shared_lock lock(mu_);
    due = AnyExpired(now);
  }
  if (due) {
    std::unique_lock lock(mu_);
    ExpireBarriersAndPlans(now);
  }
  if (leadership_.IsLeader()) {
    Admit(now);
    RequeueUngatedGangs(now);
  }
}

bool Extender::AnyExpired(MonotonicTime now) const {
  if (bind_.AnyBarrierExpired(now)) return true;
  for (const auto& [key, g] : ledger_.gangs()) {
    if (g.plan && !bind_.HasBarrier(key) && now - g.planned_at > config_.plan_ttl && bind_.CommittedMembers(key) == 0) {
      return true;
    }
  }
  return false;
}

void Extender::ExpireBarriersAndPlans(MonotonicTime now) {
  bind_.ExpireBarriers(now);
  // Plans nobody binds against expire (there is no Unreserve verb).
  std::vector<GangKey> stale;
  for (const auto& [key, g] : ledger_.gangs()) {
    if (g.plan && !bind_.HasBarrier(key) && bind_.CommittedMembers(key) == 0 && now - g.planned_at > config_.plan_ttl) {
      stale.push_back(key);
    }
  }
  for (const GangKey& key : stale) {
    stats_.plans_expired++;
    ledger_.DropPlan(key);
    if (GangRecord* g = ledger_.MutableGang(key)) {
      g->last_no_fit = fmt::format("the plan expired after {} without a bind", Seconds(config_.plan_ttl));
    }
  }
}

std::string Extender::PoolOf(const GangRecord& g) const {
  if (g.plan) return g.plan->pool;
  // Where its members hold GPUs (a gang never spans pools); its selector otherwise.
  const placement::ClusterState& state = ledger_.state();
  for (const PodUid& uid : g.members) {
    const PodRecord* rec = ledger_.FindPod(uid);
    if (rec == nullptr || rec->holding == Holding::kNone) continue;
    if (auto node = state.FindNode(rec->node)) return state.pool(state.node(*node).pool).name;
  }
  return g.pool_selector;
}

scheduling::GangRequest Extender::EngineRequestOf(const GangRecord& g, int members) const {
  scheduling::GangRequest r;
  r.key = g.key;
  r.job = g.key.str();
  r.pool = g.pool_selector;
  r.priority = g.priority;
  r.members = members;
  r.gpus_per_member = std::clamp(g.gpus_per_member, 1, placement::kMaxGpusPerNode);
  if (!g.level.empty() && ledger_.state().LevelIndex(g.level) >= 0) {
    r.level = g.level;
    r.mode = g.required ? placement::TopologyMode::kRequired : placement::TopologyMode::kPreferred;
  }
  r.submitted = EngineSeconds(g.first_seen);
  r.queue = QueueOf(g);
  if (!g.members.empty()) {
    const PodRecord* rec = ledger_.FindPod(*g.members.begin());
    if (rec && !rec->info.training_job.empty()) {
      r.job = rec->info.ns + "/" + rec->info.training_job;
      const TrainingJobInfo* tj = ledger_.FindTrainingJob(r.job);
      r.checkpoints = tj && tj->notice_seconds_needed > 0;
      // Its deadline is an upper bound of its run: a safe expected end for backfill.
      if (tj && tj->active_deadline_seconds > 0) r.duration_hint_s = tj->active_deadline_seconds;
    }
  }
  return r;
}

void Extender::Admit(MonotonicTime now) {
  AdmissionPlan plan;
  {
    std::shared_lock shared(mu_);
    Pass(now, shared, plan);
  }
  if (plan.empty()) return;
  std::unique_lock exclusive(mu_);
  FinishPass(plan);
}

void Extender::Pass(MonotonicTime now, std::shared_lock<std::shared_mutex>& shared, AdmissionPlan& plan) {
  // Gated gangs that are complete wait in the engine; a gang that vanished, got a plan
  // elsewhere (filter of an ungated member) or changed size is withdrawn (and re-queued
  // with its new size).
  std::set<GangKey> ready, holding_gangs;
  std::vector<std::pair<const GangRecord*, int>> arrivals;  // to queue, with their size
  for (const auto& [key, g] : ledger_.gangs()) {
    int gated = 0, holding = 0;
    for (const PodUid& uid : g.members) {
      const PodRecord* rec = ledger_.FindPod(uid);
      if (rec && rec->info.gated) gated++;
      if (rec && rec->holding != Holding::kNone) holding++;
    }
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
    engine_.OnFinished(key);
    engine_queue_of_.erase(key);
    return true;
  });
  // Pods on MIG devices count in their queues (they run outside the engine's placement).
  const bool mig_freed = BookMigHolders(now);
  if (engine_waiting_.empty()) return;
  // Nothing came free since the last pass: what failed then fails now, so only new gangs
  // are tried. A full pass at least every second regardless (a gang's min-members may
  // settle, time moves heads' expected starts).
  const bool full = mig_freed || ledger_.release_epoch() != release_epoch_seen_ ||
                    now - last_full_pass_ >= std::chrono::seconds(1);
  release_epoch_seen_ = ledger_.release_epoch();
  AdmissionDriver driver(*this, shared, now, plan);
  engine_.Pass(EngineSeconds(now), driver, full ? scheduling::Engine::Scope::kFull : scheduling::Engine::Scope::kArrivalsOnly);
  if (full) last_full_pass_ = now;
  for (auto it = engine_waiting_.begin(); it != engine_waiting_.end();) {
    if (engine_.IsRunning(it->first)) {
      engine_running_.insert(it->first);
      it = engine_waiting_.erase(it);
      continue;
    }
    const GangRecord* g = ledger_.FindGang(it->first);
    if (std::string why = engine_.WhyWaiting(it->first); g && g->last_no_fit != why) {
      plan.whys.emplace_back(it->first, std::move(why));
    }
    ++it;
  }
}

std::string Extender::AdmissionConflict(const GangRecord* g, const std::set<PodUid>& members,
                                        const placement::GangPlan& plan) const {
  if (g == nullptr) return "the gang is gone";
  if (g->plan) return "the gang was planned meanwhile";
  if (g->members != members) return "its members changed";
  const placement::ClusterState& state = ledger_.state();
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

std::optional<std::vector<PodUid>> Extender::CommitAdmission(const GangKey& key, const std::set<PodUid>& members,
                                                            placement::GangPlan plan, MonotonicTime now) {
  GangRecord* g = ledger_.MutableGang(key);
  std::string conflict = AdmissionConflict(g, members, plan);
  // All or nothing: a plan is reserved whole or not at all.
  if (conflict.empty()) {
    if (Status st = ledger_.AdmitPlan(key, std::move(plan), now); !st.ok()) conflict = std::string(st.message());
  }
  if (!conflict.empty()) {
    stats_.admission_conflicts++;
    return std::nullopt;  // the engine keeps it waiting and goes on with the ledger as it is
  }
  stats_.gangs_admitted++;
  g->last_no_fit.clear();
  // The engine records it once this returns; a filter in between must count it already.
  RecordUncounted(*g, g->plan->pool, static_cast<int>(g->plan->members.size()));
  LiftGates(*g);
  return std::vector<PodUid>(members.begin(), members.end());
}

void Extender::FinishPass(AdmissionPlan& plan) {
  for (const PlannedEviction& e : plan.evictions) CarryOutEviction(e);
  for (auto& [key, why] : plan.whys) {
    if (GangRecord* g = ledger_.MutableGang(key); g && !g->plan) g->last_no_fit = std::move(why);
  }
}

// The victim's members as they are now: the whole gang, whatever joined or left since the
// pass chose it.
void Extender::CarryOutEviction(const PlannedEviction& e) {
  const GangRecord* v = ledger_.FindGang(e.victim);
  if (v == nullptr) return;  // gone already: its GPUs are free
  if (e.notice) {
    if (const TrainingJobInfo* tj = JobOf(e.victim)) {
      disruptions_.RequestNotice({{tj->Key(), fmt::format("{}-{}", e.preemptor_key, tj->Key())}}, e.preemptor,
                                 e.reason);
    }
    for (const PodUid& uid : v->members) {
      if (const PodRecord* rec = ledger_.FindPod(uid)) {
        disruptions_.Event(rec->info, "Normal", "Preempted", e.reason + " (asked to checkpoint and stop)");
      }
    }
    stats_.preempt_accepted++;
    return;
  }
  EvictionJob job;
  job.group = e.victim.str();
  job.preemptor = "gang " + e.preemptor_key;
  for (const PodUid& uid : v->members) {
    const PodRecord* rec = ledger_.FindPod(uid);
    if (rec == nullptr) continue;
    if (!rec->info.node_name.empty()) job.pods.push_back(RefOf(rec->info));
    disruptions_.Event(rec->info, "Normal", "Preempted", e.reason);
  }
  stats_.preempt_accepted++;
  disruptions_.Evict(std::move(job));
}

void Extender::LiftGates(const GangRecord& g) {
  std::vector<PodRef> refs;
  for (const PodUid& uid : g.members) {
    const PodRecord* rec = ledger_.FindPod(uid);
    if (!rec || !rec->info.gated) continue;
    refs.push_back(RefOf(rec->info));
    PodInfo ungated = rec->info;
    ungated.gated = false;  // assumed; the informer confirms
    ledger_.UpsertPod(ungated, clock_.Now());
  }
  // One task per member: the pool lifts a gang's gates in parallel.
  std::vector<WritePool::Task> lifts;
  for (PodRef& ref : refs) {
    lifts.push_back([this, ref = std::move(ref)] {
      if (!writer_.LiftGangGate(ref).ok()) stats_.write_errors++;
    });
  }
  io_.FanOut(std::move(lifts), [] {});
}

}  // namespace phalanx::extender
