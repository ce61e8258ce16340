// The `phalanx` policy: the scheduling engine of core/scheduling (the same object the
// extender drives) driven by the simulator's event loop. This file only translates:
// jobs -> GangRequests, the engine's admissions -> Simulator::StartJob/StartShare, its
// evictions -> Simulator::Preempt. MIG jobs keep their own queue in the engine of the
// simulator and are placed by core/placement's MIG best fit (PlaceMig below); with team
// queues they are held to their queue's quota of the node's pool and booked in the
// engine's queue ledger while they run (Engine::BookOutside), as the extender does.
#include <chrono>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "core/placement/mig.h"
#include "core/scheduling/engine.h"
#include "sim/cluster/cluster_spec.h"
#include "sim/policy/baseline_placement.h"
#include "sim/policy/baseline_policies.h"
#include "sim/policy/phalanx_policy.h"

namespace phalanx::sim {
namespace {

class PhalanxPolicy final : public Policy, private scheduling::EngineDriver {
 public:
  static constexpr int kPassesPerInstant = 4;

  explicit PhalanxPolicy(const PolicyOptions& options) : options_(options), engine_(options.engine, options.queues) {}

  std::string name() const override { return "phalanx"; }

  void OnQueued(Simulator& sim, JobId id) override {
    sim_ = &sim;
    scheduling::GangRequest g = RequestOf(sim, id);
    by_key_.emplace(g.key, id);
    (void)engine_.Enqueue(std::move(g));
  }

  void OnFinished(Simulator& sim, JobId id) override {
    const GangKey key = KeyOf(sim, id);
    // Ran longer than the engine expected: the reservations it planned re-forecast it.
    if (auto it = expected_end_.find(key); it != expected_end_.end()) {
      if (sim.now() > it->second + 0.5) sim.NoteHintOverrun();
      expected_end_.erase(it);
    }
    // Completed, or preempted: the engine tells its own evictions apart.
    engine_.OnEnded(key, sim.now());
    engine_.UnbookOutside(key);  // a MIG job
    by_key_.erase(key);
  }

  void Schedule(Simulator& sim) override {
    sim_ = &sim;
    // A MIG job booked by PlaceMig that did not start (StartMig refused it) holds nothing.
    for (JobId id : mig_placed_) {
      if (sim.run(id).phase != JobPhase::kRunning) engine_.UnbookOutside(KeyOf(sim, id));
    }
    mig_placed_.clear();
    // Between two equal release epochs nothing was freed: only new arrivals can fit.
    bool released = sim.release_epoch() != seen_epoch_;
    // A pass whose own evictions freed GPUs at once (victims that stop without a checkpoint)
    // is followed by a full pass at the same instant, as the extender's next tick runs one
    // (its release epoch moved): gangs the pass did not try, or walked before the GPUs came
    // free, may fit now. Bounded: each repeat needs another eviction at this instant.
    for (int pass = 0; pass < kPassesPerInstant; ++pass) {
      seen_epoch_ = sim.release_epoch();
      engine_.Pass(sim.now(), *this, released ? scheduling::Engine::Scope::kFull : scheduling::Engine::Scope::kArrivalsOnly);
      released = sim.release_epoch() != seen_epoch_;
      if (!released) break;
    }
    if (auto wake = engine_.NextWake()) sim.WakeAt(*wake);
  }

  // MIG: the core best fit (core/placement/mig.h), as the extender scores nodes: the
  // node whose chosen devices leave its GPUs and its MIG capacity fullest; ties to the
  // first node in name order.
  // With team queues, only nodes of pools where the job's queue has room now.
  std::optional<MigPlacement> PlaceMig(const Simulator& sim, JobId id) override {
    const Job& j = sim.job(id);
    const placement::MigRequest req{j.mig_profile, j.gpus_per_replica};
    const scheduling::QueueLedger& queues = engine_.queues();
    const scheduling::Milli amount =
        static_cast<scheduling::Milli>(j.gpus_per_replica) * scheduling::MigProfileMilli(j.mig_profile);
    std::map<std::string, bool, std::less<>> room;  // by pool (a handful)
    std::optional<MigPlacement> best;
    std::string best_pool;
    double best_score = -1;
    for (const NodeName& name : MigNodesInPool(sim, j.pool)) {
      std::string_view pool;
      if (queues.enabled()) {
        auto idx = sim.state().FindNode(name);
        if (idx) pool = sim.state().node(*idx).spec.pool;
        auto it = room.find(pool);
        if (it == room.end()) {
          const bool fits = !queues.Manages(pool) ||
                            queues.Check(queues.Resolve(j.queue), pool, amount) != scheduling::QueueLedger::Fit::kNoRoom;
          it = room.emplace(std::string(pool), fits).first;
        }
        if (!it->second) continue;
      }
      auto choice = placement::ChooseMigDevices(*sim.mig().Find(name), req);
      if (!choice || choice->score <= best_score) continue;
      best_score = choice->score;
      best = MigPlacement{name, std::move(choice->devices)};
      best_pool = std::string(pool);
    }
    if (best && queues.enabled() && queues.Manages(best_pool)) {
      // Counted from now: the next MIG job of this pass and the engine's next pass see it.
      (void)engine_.BookOutside(KeyOf(sim, id), j.queue, best_pool, amount, j.priority, sim.now());
      mig_placed_.push_back(id);
    }
    return best;
  }

  const scheduling::Engine& engine() const { return engine_; }

 private:
  static GangKey KeyOf(const Simulator& sim, JobId id) { return GangKey(fmt::format("j{}-a{}", id, sim.run(id).attempt)); }

  scheduling::GangRequest RequestOf(const Simulator& sim, JobId id) const {
    const Job& j = sim.job(id);
    scheduling::GangRequest g;
    g.key = KeyOf(sim, id);
    g.job = fmt::format("j{}", id);
    g.driver_tag = id;
    g.pool = j.pool.value_or("");
    g.queue = j.queue;  // unknown or "" -> the default queue (when queues are configured)
    g.priority = j.priority;
    g.members = j.replicas;
    g.gpus_per_member = j.gpus_per_replica;
    g.milli = j.milli;
    if (j.replicas > 1) {
      g.level = SimLevels()[kLevelRack];
      g.mode = placement::TopologyMode::kPreferred;
    }
    g.submitted = j.submit;
    // What the user says it needs (duration_hints.h: exact, overestimated or none); the
    // engine falls back to the tier default without one.
    HintModel hints = options_.hints;
    if (!options_.duration_hints) hints.mode = HintModel::Mode::kNone;
    g.duration_hint_s = hints.HintFor(j, sim.run(id).remaining);
    g.checkpoints = j.checkpoint_interval > 0;
    return g;
  }

  // --- EngineDriver -------------------------------------------------------------------
  const placement::ClusterState& state() const override { return sim_->state(); }

  std::optional<std::vector<PodUid>> Admit(const scheduling::GangRequest& gang,
                                           const scheduling::Admission& a) override {
    const JobId id = by_key_.at(gang.key);
    const Status started = a.share ? sim_->StartShare(id, a.share->first, a.share->second)
                                   : sim_->StartJob(id, a.members);
    if (!started.ok()) return std::nullopt;
    if (a.backfill()) sim_->NoteBackfill(id);
    const double expected = gang.duration_hint_s && *gang.duration_hint_s > 0
                                ? *gang.duration_hint_s
                                : engine_.policy().TierOf(gang.priority).default_duration_s;
    expected_end_[gang.key] = sim_->now() + expected;
    std::vector<PodUid> pods;
    for (const PodUid& p : sim_->run(id).pods)
      if (!p.empty()) pods.push_back(p);
    return pods;
  }

  std::optional<double> Evict(const GangKey& victim, const GangKey& /*preemptor*/, std::string_view reason,
                              bool graceful) override {
    auto it = by_key_.find(victim);
    if (it == by_key_.end()) return std::nullopt;
    const JobId id = it->second;
    if (reason.starts_with(scheduling::kQueueReclaimReason)) sim_->NoteReclaim(id);
    if (graceful) {
      // The operator's graceful preemption: checkpoint, then stop.
      auto notice = sim_->RequestGracefulStop(id);
      if (!notice.ok()) return std::nullopt;
      if (*notice > 0) return *notice;
    }
    if (!sim_->Preempt(id).ok()) return std::nullopt;
    return 0.0;
  }

  double GpuSecondsAtRisk(const GangKey& running) const override {
    auto it = by_key_.find(running);
    return it == by_key_.end() ? 0 : sim_->GpuSecondsAtRisk(it->second);
  }

  double NoticeSeconds(const GangKey& running) const override {
    auto it = by_key_.find(running);
    if (it == by_key_.end() || sim_->job(it->second).checkpoint_interval <= 0) return 0;
    return sim_->config().graceful_notice_s;
  }

  // The engine runs only gangs queued here, tagged with their job id (RequestOf); the
  // lookup by key is for anything else.
  PriceTerms PriceTermsOf(const scheduling::GangRequest& running) const override {
    JobId id = static_cast<JobId>(running.driver_tag);
    if (running.driver_tag < 0) {
      auto it = by_key_.find(running.key);
      if (it == by_key_.end()) return {};
      id = it->second;
    }
    const bool checkpoints = sim_->job(id).checkpoint_interval > 0;
    return {sim_->GpuSecondsAtRisk(id), checkpoints ? sim_->config().graceful_notice_s : 0};
  }

  PolicyOptions options_;
  scheduling::Engine engine_;
  Simulator* sim_ = nullptr;
  uint64_t seen_epoch_ = ~uint64_t{0};
  std::unordered_map<GangKey, JobId> by_key_;
  std::unordered_map<GangKey, double> expected_end_;  // running: start + hint (or tier default)
  std::vector<JobId> mig_placed_;  // MIG jobs PlaceMig booked since the last pass
};

}  // namespace

std::unique_ptr<Policy> MakePhalanxPolicy(const PolicyOptions& options) {
  return std::make_unique<PhalanxPolicy>(options);
}

const std::vector<std::string>& PolicyNames() {
  static const std::vector<std::string> kNames = {"phalanx", "k8s-default", "gang-fifo", "gang-binpack"};
  return kNames;
}

Result<std::unique_ptr<Policy>> MakePolicy(std::string_view name, const PolicyOptions& options) {
  if (name == "phalanx") return MakePhalanxPolicy(options);
  if (name == "k8s-default") return MakeK8sDefaultPolicy();
  if (name == "gang-fifo") return MakeGangFifoPolicy();
  if (name == "gang-binpack") return MakeGangBinpackPolicy();
  return InvalidArgumentError(fmt::format("unknown policy \"{}\" (phalanx | k8s-default | gang-fifo | gang-binpack | all)", name));
}

}  // namespace phalanx::sim
