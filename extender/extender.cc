// Extender: construction, cluster events, restart recovery, the tick and introspection (the
// verbs are in verbs/, the admission pass in admission/).
#include "extender/extender.h"

#include <map>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "extender/extender_internal.h"

namespace phalanx::extender {

using namespace internal;  // NOLINT: this component's own helpers

Extender::Extender(ExtenderConfig config, Clock& clock, ClusterWriter& writer, Leadership& leadership, int writers)
    : config_(std::move(config)),
      clock_(clock),
      writer_(writer),
      leadership_(leadership),
      engine_(config_.scheduling),
      ledger_(config_.topology_levels),
      io_(writers) {
  evictor_.SetReport([this](const EvictionReport& r) {
    disruptions_.OnEvictionReport(r);
    if (r.outcome == EvictionReport::Outcome::kRefused) {
      // Nothing of the gang stopped: the engine counts it running (and a candidate) again,
      // and its preemptor looks again (a set the verb chose is unknown there: ignored).
      std::lock_guard admission(admission_mu_);
      std::shared_lock lock(mu_);
      engine_.OnEvictionRefused(GangKey(r.job.group));
    }
  });
  GangEvictorOptions eviction;
  eviction.deadline = config_.pdb_override_after;
  evictor_.SetOptions(eviction);
}

Extender::~Extender() { io_.Drain(); }

// --- events ------------------------------------------------------------------------------

Status Extender::OnNode(const NodeInfo& node) {
  std::unique_lock lock(mu_);
  return ledger_.UpsertNode(node);
}

void Extender::OnNodeDeleted(const NodeName& node) {
  std::unique_lock lock(mu_);
  ledger_.RemoveNode(node);
}

void Extender::OnPod(const PodInfo& pod) {
  std::unique_lock lock(mu_);
  // spec.nodeName is never unset. An informer event written before our own Binding landed
  // (the gate lift, the devices patch) must not drop the GPUs charged for that bind.
  if (pod.node_name.empty() && !pod.deleting && !pod.Terminal()) {
    const PodRecord* rec = ledger_.FindPod(pod.uid);
    const bool charged = rec && (rec->holding != Holding::kNone || ledger_.mig().FindPod(pod.uid));
    if (charged && !rec->info.node_name.empty()) {
      PodInfo merged = pod;
      merged.node_name = rec->info.node_name;
      if (!merged.devices) merged.devices = rec->info.devices;
      ledger_.UpsertPod(merged, clock_.Now());
      return;
    }
  }
  ledger_.UpsertPod(pod, clock_.Now());
}

void Extender::OnPodDeleted(const PodUid& uid) {
  std::unique_lock lock(mu_);
  ledger_.RemovePod(uid);
}

void Extender::OnTrainingJob(const TrainingJobInfo& job) {
  std::unique_lock lock(mu_);
  ledger_.UpsertTrainingJob(job);
}

void Extender::OnTrainingJobDeleted(const std::string& ns_name) {
  std::unique_lock lock(mu_);
  ledger_.RemoveTrainingJob(ns_name);
}

void Extender::RecoverCommitted() {
  // The caller decides when: at start in embedded mode, when this replica becomes the
  // active one in API-server mode (before it admits anything).
  std::unique_lock lock(mu_);
  // device UUID -> node, built once for the recovery pass.
  std::unordered_map<std::string, NodeName> node_of;
  for (placement::NodeIndex idx : ledger_.state().Nodes()) {
    const NodeName& name = ledger_.state().node(idx).spec.name;
    const NodeRecord* rec = ledger_.FindNode(name);
    if (!rec) continue;
    for (const std::string& uuid : rec->uuids) node_of.emplace(uuid, name);
  }
  // A gang reached its commit point only when min-members of its live members carry
  // devices; fewer means the previous extender died while writing them: nothing of that
  // gang is bound, and the partial annotations are removed so the gang is planned afresh.
  const MonotonicTime now = clock_.Now();
  std::map<GangKey, int> with_devices;
  for (const auto& [uid, rec] : ledger_.pods()) {
    const PodInfo& p = rec.info;
    if (p.IsGangMember() && p.devices && !p.devices->empty() && !p.Terminal() && !p.deleting) with_devices[p.Gang()]++;
  }
  auto committed = [&](const GangKey& key) {
    const GangRecord* g = ledger_.FindGang(key);
    if (!g) return false;
    const int min = g->MinMembers(now).value_or(static_cast<int>(g->members.size()));
    return with_devices[key] >= min;
  };
  for (const auto& [uid, rec] : ledger_.pods()) {
    const PodInfo& p = rec.info;
    if (!p.IsGangMember() || !p.node_name.empty() || !p.devices || p.Terminal() || p.deleting) continue;
    if (!committed(p.Gang())) {
      io_.Submit([this, ref = RefOf(p)] {
        if (!writer_.PatchPodDevices(ref, "").ok()) stats_.write_errors++;
      });
      continue;
    }
    std::optional<NodeName> node;
    for (const auto& [container, ids] : *p.devices) {
      for (const std::string& id : ids) {
        auto it = node_of.find(id.substr(0, id.find("::")));
        if (it != node_of.end()) node = it->second;
      }
    }
    if (!node) continue;  // devices of a node we do not know (yet): nothing safe to do
    PodInfo bound = p;
    bound.node_name = node->str();
    ledger_.UpsertPod(bound, clock_.Now());  // charge the committed devices now
    io_.Submit([this, ref = RefOf(p), n = node->str()] {
      if (!writer_.BindPod(ref, n).ok()) stats_.write_errors++;
    });
  }
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
  if (leadership_.IsLeader()) admission_.Run(now);
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

// --- introspection -------------------------------------------------------------------------

std::string Extender::Explain(std::string_view ns_name) const {
  const MonotonicTime now = clock_.Now();
  std::lock_guard admission(admission_mu_);  // the engine's standing of the gang
  std::shared_lock lock(mu_);
  const PodRecord* rec = ledger_.FindPodByName(ns_name);
  const std::string summary = memory_.FilterSummary(ns_name);
  if (!rec) {
    return summary.empty() ? fmt::format("pod {} is not known to the extender: it requests no GPU, or no informer "
                                         "event and no filter request has mentioned it yet",
                                         ns_name)
                           : fmt::format("pod {}: {}", ns_name, summary);
  }
  const PodInfo& p = rec->info;
  std::string out;
  if (rec->holding != Holding::kNone) {
    out = fmt::format("pod {} holds GPUs {} on node {} ({})", p.Key(),
                      fmt::join(placement::GpuList(rec->gpus), ","), rec->node.str(), HoldingName(rec->holding));
  } else if (!p.node_name.empty()) {
    out = fmt::format("pod {} is bound to node {}", p.Key(), p.node_name);
  } else {
    out = fmt::format("pod {} is pending (requests {} GPU(s), priority {}, tier {})", p.Key(), p.gpus, p.priority,
                      config_.tiers[static_cast<size_t>(config_.TierOf(p.priority))].name);
  }
  if (p.IsGangMember()) {
    const GangRecord* g = ledger_.FindGang(p.Gang());
    if (!g) {
      out += fmt::format("; gang {} is not tracked (the pod is terminating or finished)", p.Gang().str());
    } else {
      auto min = g->MinMembers(now);
      out += fmt::format("; gang {}: {} live member(s), min-members {}", g->key.str(), g->members.size(),
                         min ? std::to_string(*min) : std::string("not settled yet"));
      out += admission_.DescribeQueue(*g);
      if (p.gated) out += "; the pod still carries the phalanx.io/gang scheduling gate";
      if (g->plan) {
        out += fmt::format("; admitted: planned on {} node(s) in {}", g->plan->quality.nodes_used,
                           g->plan->domain.empty() ? std::string("pool ") + (g->plan->pool.empty() ? "<unlabelled>" : g->plan->pool)
                                                   : g->plan->level_key + "=" + g->plan->domain);
        if (auto barrier = bind_.BarrierOf(g->key)) {
          out += fmt::format("; bind barrier: {} held + {} bound of {} needed, times out in {}", barrier->first,
                             bind_.CommittedMembers(g->key), min.value_or(0),
                             Seconds(std::max(Duration::zero(), barrier->second - now)));
        }
      } else {
        out += "; not admitted";
        if (admission_.IsQueued(g->key)) out += fmt::format(" (waiting: {} gang(s) queued)", engine_.waiting());
        if (!g->last_no_fit.empty()) out += ": " + g->last_no_fit;
      }
      // What protects it as a victim of the engine's preemption (docs/algorithms.md §8.3).
      const double engine_now = std::chrono::duration<double>(now.time_since_epoch()).count();
      if (auto standing = engine_.VictimStanding(g->key, engine_now)) {
        const double wall = std::chrono::duration<double>(clock_.WallNow().time_since_epoch()).count();
        out += fmt::format("; as a preemption victim (tier {}): {}", standing->tier, standing->Describe(engine_now, wall));
      }
    }
  } else if (!summary.empty() && rec->holding == Holding::kNone) {
    out += "; " + summary;
  }
  return out;
}

void Extender::ReadLedger(const std::function<void(const Ledger&)>& read) const {
  std::shared_lock lock(mu_);
  read(ledger_);
}

json::Json Extender::StateJson() const {
  std::lock_guard admission(admission_mu_);  // the queue and the heads
  std::shared_lock lock(mu_);
  json::Json out = ledger_.ToJson();
  out["barriers"] = bind_.BarriersJson();
  out["queue"] = engine_.waiting();
  // Each pool's head and its expected start (docs/algorithms.md §8.2).
  const double now = std::chrono::duration<double>(clock_.Now().time_since_epoch()).count();
  json::Json heads = json::Json::array();
  for (const scheduling::HeadReservation& h : engine_.Heads()) {
    json::Json head = {{"pool", h.pool}, {"gang", h.head.str()}, {"gpus", h.gpus}, {"spareGpus", h.spare_gpus}};
    if (h.reachable) head["expectedStartInSeconds"] = std::max(0.0, h.expected_start - now);
    heads.push_back(std::move(head));
  }
  out["heads"] = std::move(heads);
  json::Json queues = json::Json::array();
  for (const QueueStatusInfo& q : admission_.QueueStatuses()) {
    json::Json j = QueueStatusJson(q);
    j["name"] = q.name;
    queues.push_back(std::move(j));
  }
  out["teamQueues"] = std::move(queues);
  json::Json calibration = json::Json::array();
  for (const DurationRatioInfo& r : ReadEngineLocked().ratios) {
    calibration.push_back({{"tier", r.tier}, {"hinted", r.hinted}, {"ratio", r.ratio}, {"samples", r.samples}});
  }
  out["durationCalibration"] = std::move(calibration);
  return out;
}

EngineReadout Extender::ReadEngine() const {
  std::lock_guard admission(admission_mu_);  // the engine
  return ReadEngineLocked();
}

EngineReadout Extender::ReadEngineLocked() const {
  EngineReadout out{.stats = engine_.stats()};
  const std::vector<scheduling::TierPolicy>& tiers = engine_.policy().tiers;
  for (size_t t = 0; t < tiers.size(); ++t) {
    for (bool hinted : {true, false}) {
      out.ratios.push_back({.tier = tiers[t].name,
                            .hinted = hinted,
                            .ratio = engine_.DurationRatio(t, hinted),
                            .samples = engine_.calibration().Samples(t, hinted)});
    }
  }
  return out;
}

}  // namespace phalanx::extender
