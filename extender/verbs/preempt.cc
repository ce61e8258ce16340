// The preempt verb (kube-scheduler's preemption cycle for pods that are not gated gangs):
// whole lower-tier gangs only, chosen and priced by the scheduling engine's own rule
// (Engine::QuotePreemption -> ChoosePricedPreemption, docs/algorithms.md §8.3): a victim
// set is offered only when its benefit exceeds its cost, victims inside their minimum run
// time or over their daily cap are left out, and per victim the cheaper of "at once" and
// "graceful" is taken (graceful: a phalanx.io/preempt-request and a veto until it stopped).
// Members on other nodes are evicted by the extender. Nothing offered = kube-scheduler gets
// no candidate for any node and the pod stays pending until something frees.
#include "extender/verbs/preempt_verb.h"

#include <algorithm>
#include <bit>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/placement/preemption.h"
#include "core/scheduling/preemption_cost.h"
#include "extender/extender_internal.h"

namespace phalanx::extender {

using namespace internal;  // NOLINT: this component's own helpers

namespace {

double EngineSeconds(MonotonicTime t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); }

// kube-scheduler asks to preempt only for a pod that fits on no node. When the engine's GPU-count
// forecast says it would fit now (scattered GPUs, a node selector the forecast does not see), its
// wait is unknown: counted as the horizon (the benefit is then capped by the victims' remaining run).
double WaitOfUnfitPod(const scheduling::Engine& engine, const scheduling::GangRequest& req, double now,
                      const placement::ClusterState& state) {
  const double wait = engine.ExpectedWait(req, now, state);
  return wait > 0 ? wait : engine.policy().wait_horizon_s;
}

// A candidate victim as the verb sees it: a whole gang ("ns/gang") or a single pod
// ("pod:<uid>"), every member that holds GPUs.
struct VictimGroup {
  std::string key;
  std::vector<const PodRecord*> members;
  int priority = 0;
  int gpus = 0;
  std::string pool;
  std::optional<SystemTime> started;  // the earliest member's start
  double risk = 0;                    // GPU-seconds lost if evicted at once
  double notice = 0;                  // seconds it needs to checkpoint on notice (0 = cannot)
  std::string job;                    // preemption history: its TrainingJob, else the gang or pod
  std::map<std::string, std::string> notice_jobs;  // TrainingJob -> request id, if graceful
  bool leaving = false;               // a TrainingJob of it was asked to stop already
};

// The engine's key of a victim group: a gang's, none for a single pod ("pod:<uid>").
std::optional<GangKey> EngineKeyOf(const VictimGroup& g) {
  if (g.key.starts_with("pod:")) return std::nullopt;
  return GangKey(g.key);
}

// Answers the engine's questions about candidates from what the verb computed.
class QuoteDriver final : public scheduling::EngineDriver {
 public:
  QuoteDriver(const placement::ClusterState& state, const std::map<std::string, VictimGroup>& groups)
      : state_(state), groups_(groups) {}
  const placement::ClusterState& state() const override { return state_; }
  std::optional<std::vector<PodUid>> Admit(const scheduling::GangRequest&, const scheduling::Admission&) override {
    return std::nullopt;  // quoting only
  }
  std::optional<double> Evict(const GangKey&, const GangKey&, std::string_view, bool) override { return std::nullopt; }
  double GpuSecondsAtRisk(const GangKey& running) const override {
    auto it = groups_.find(running.str());
    return it == groups_.end() ? 0 : it->second.risk;
  }
  double NoticeSeconds(const GangKey& running) const override {
    auto it = groups_.find(running.str());
    return it == groups_.end() ? 0 : it->second.notice;
  }
  // As admission's driver: idle when every member holding GPUs carries phalanx.io/idle-since.
  bool IsIdle(const GangKey& running) const override {
    auto it = groups_.find(running.str());
    if (it == groups_.end() || it->second.members.empty()) return false;
    return std::all_of(it->second.members.begin(), it->second.members.end(),
                       [](const PodRecord* m) { return m->info.idle_since.has_value(); });
  }

 private:
  const placement::ClusterState& state_;
  const std::map<std::string, VictimGroup>& groups_;
};

// The victim groups offered to the engine's quote (index = candidate index) and what a
// chosen set of them means for the writes.
struct Candidates {
  std::vector<scheduling::VictimCandidate> list;
  std::vector<const VictimGroup*> groups;

  void Add(const std::string& key, const VictimGroup& g, double started) {
    std::vector<PodUid> pods;
    for (const PodRecord* m : g.members) pods.push_back(m->info.uid);
    list.push_back({.key = GangKey(key), .job = g.job, .priority = g.priority, .gpus = g.gpus, .pool = g.pool,
                    .started = started, .pods = std::move(pods), .leaving = g.leaving});
    groups.push_back(&g);
  }
  // Every pod of the chosen groups (their budgets are checked as one set).
  std::vector<const PodRecord*> PodsOf(const placement::PreemptionDecision& decision) const {
    std::vector<const PodRecord*> all;
    for (int v : decision.victims) {
      const VictimGroup& g = *groups[static_cast<size_t>(v)];
      all.insert(all.end(), g.members.begin(), g.members.end());
    }
    return all;
  }
  // TrainingJobs of the chosen groups cheaper to ask for a checkpoint than to lose
  // (job -> request id); each group newly asked counts toward its job's daily cap.
  std::map<std::string, std::string> NoticeJobs(const scheduling::PricedPreemption& quote, scheduling::Engine& engine,
                                                double now) const {
    std::map<std::string, std::string> jobs;
    for (int v : quote.decision->victims) {
      if (!quote.graceful[static_cast<size_t>(v)]) continue;
      const VictimGroup& g = *groups[static_cast<size_t>(v)];
      if (!g.leaving) engine.RecordPreemption(g.job, now, EngineKeyOf(g));
      jobs.insert(g.notice_jobs.begin(), g.notice_jobs.end());
    }
    return jobs;
  }
};

// Every gang or single pod holding GPUs that `preemptor_priority` may preempt (tiers[].preempts
// for every member), with its work at risk and notice. Lock held.
std::map<std::string, VictimGroup> VictimGroupsFor(const Ledger& ledger, const ExtenderConfig& config,
                                                   int preemptor_priority, const std::string& request_prefix,
                                                   const std::function<double(const PodRecord&, double*, std::string*)>& risk_of) {
  std::map<std::string, VictimGroup> groups;
  std::set<std::string> refused;
  std::map<std::string, std::set<std::string>> counted_jobs;
  const placement::ClusterState& state = ledger.state();
  for (const auto& [uid, rec] : ledger.pods()) {
    if (rec.holding == Holding::kNone) continue;
    const std::string key = rec.info.IsGangMember() ? rec.info.Gang().str() : "pod:" + uid.str();
    if (refused.contains(key)) continue;
    if (!config.MayPreempt(preemptor_priority, rec.info.priority)) {
      refused.insert(key);
      groups.erase(key);
      continue;
    }
    VictimGroup& g = groups[key];
    g.key = key;
    g.members.push_back(&rec);
    g.priority = std::max(g.priority, rec.info.priority);
    g.gpus += std::popcount(rec.gpus);
    if (g.pool.empty()) {
      if (auto node = state.FindNode(rec.node)) g.pool = state.pool(state.node(*node).pool).name;
    }
    const auto start = rec.info.start_time ? rec.info.start_time : rec.info.creation_time;
    if (start && (!g.started || *start < *g.started)) g.started = start;
    double n = 0;
    std::string job;
    const double risk = risk_of(rec, &n, &job);
    if (job.empty() || counted_jobs[key].insert(job).second) g.risk += risk;
    g.notice = std::max(g.notice, n);
    if (!job.empty()) {
      g.job = job;
      if (n > 0) g.notice_jobs[job] = fmt::format("{}-{}", request_prefix, job);
      if (const TrainingJobInfo* tj = ledger.FindTrainingJob(job); tj && !tj->preempt_request.empty()) g.leaving = true;
    }
  }
  // A gang whose other members are protected (a higher tier we may not preempt) is not a
  // whole lower-tier gang: never a candidate.
  for (const auto& [key, g] : ledger.gangs()) {
    auto it = groups.find(key.str());
    if (it == groups.end()) continue;
    for (const PodUid& m : g.members) {
      const PodRecord* rec = ledger.FindPod(m);
      if (rec && !config.MayPreempt(preemptor_priority, rec->info.priority)) {
        groups.erase(it);
        break;
      }
    }
  }
  for (auto& [key, g] : groups) {
    if (g.job.empty()) g.job = key.starts_with("pod:") ? g.members.front()->info.Key() : key;
  }
  return groups;
}

}  // namespace

// --- preempt -------------------------------------------------------------------------------

PreemptResult PreemptVerb::Preempt(const PreemptArgs& args) {
  PreemptResult r;
  r.meta = args.meta;
  if (args.pod.gpus <= 0) {  // not about GPUs: the scheduler's choice stands
    r.victims = args.victims;
    r.pdb_violations = args.pdb_violations;
    return r;
  }
  std::lock_guard admission(admission_mu_);  // the engine (quote, preemption record), before the ledger lock
  std::unique_lock lock(h_.mu);
  if (!h_.ledger.FindPod(args.pod.uid)) h_.ledger.UpsertPod(args.pod, h_.clock.Now());
  const PodRecord& preemptor = *h_.ledger.FindPod(args.pod.uid);
  if (args.pod.IsGangMember()) return PreemptGang(args, preemptor);

  const MonotonicTime mono = h_.clock.Now();
  const double now = EngineSeconds(mono);
  const SystemTime wall = h_.clock.WallNow();
  auto engine_time = [&](std::optional<SystemTime> t) {
    return t ? now - std::chrono::duration<double>(wall - *t).count() : now;
  };
  const auto& state = h_.ledger.state();
  // The nodes kube-scheduler offered, as domains of the node level (the plan must be on one).
  std::set<std::string> domains;
  for (const auto& [node_name, uids] : args.victims) {
    if (auto idx = state.FindNode(NodeName(node_name))) {
      const auto& spec = state.node(*idx).spec;
      domains.insert(spec.domains.empty() ? node_name : spec.domains[0]);
    }
  }
  if (domains.empty()) {
    h_.stats.preempt_vetoed++;
    return r;
  }
  // The pod as the engine sees a one-member gang that must fit on one node.
  scheduling::GangRequest req;
  req.key = GangKey("pod:" + args.pod.uid.str());
  req.job = args.pod.training_job.empty() ? args.pod.Key() : args.pod.ns + "/" + args.pod.training_job;
  req.pool = args.pod.pool_selector;
  req.priority = args.pod.priority;
  req.gpus_per_member = std::clamp(args.pod.gpus, 1, placement::kMaxGpusPerNode);
  req.level = h_.config.topology_levels.front();
  req.mode = placement::TopologyMode::kRequired;
  req.submitted = engine_time(args.pod.creation_time);
  // Its GPUs fit on an offered node already: the preemption is about other resources (CPU,
  // memory), not the engine's business; kube-scheduler's choice for those nodes stands.
  {
    placement::GangSpec spec;
    spec.key = req.key;
    spec.gpus_per_member = req.gpus_per_member;
    if (!req.pool.empty()) spec.pool = req.pool;
    spec.level = req.level;
    spec.mode = req.mode;
    for (const auto& [node_name, uids] : args.victims) {
      auto idx = state.FindNode(NodeName(node_name));
      if (!idx) continue;
      placement::PlanOptions options;
      options.only_domain = state.node(*idx).spec.domains.empty() ? node_name : state.node(*idx).spec.domains[0];
      auto plan = placement::PlanGang(state, spec, options);
      if (!plan.ok() || !plan->fits()) continue;
      r.victims[node_name] = uids;
      if (auto it = args.pdb_violations.find(node_name); it != args.pdb_violations.end()) {
        r.pdb_violations[node_name] = it->second;
      }
    }
    if (!r.victims.empty()) {
      h_.stats.preempt_accepted++;
      return r;
    }
  }
  std::map<std::string, VictimGroup> groups = VictimGroupsFor(
      h_.ledger, h_.config, args.pod.priority, args.pod.uid.str(),
      [&](const PodRecord& pod, double* notice, std::string* job) {
        return disruptions_.GpuSecondsAtRisk(pod, wall, notice, job);
      });
  // Candidates: groups kube-scheduler offered a member of (its reply may only narrow what it
  // offered: in full mode it reads back only pods it sent) whose budgets allow evicting them.
  std::set<std::string> offered_uids;
  for (const auto& [node_name, uids] : args.victims) offered_uids.insert(uids.begin(), uids.end());
  Candidates candidates;
  std::string budget_refusal;
  for (const auto& [key, g] : groups) {
    bool offered = false;
    for (const PodRecord* m : g.members) {
      auto it = args.victims.find(m->node.str());
      offered = offered || (it != args.victims.end() && offered_uids.contains(m->info.uid.str()));
    }
    if (!offered) continue;
    if (std::string why = disruptions_.BudgetRefusal(g.members); !why.empty()) {
      budget_refusal = why;
      continue;
    }
    candidates.Add(key, g, engine_time(g.started));
  }
  QuoteDriver driver(state, groups);
  auto quote = engine_.QuotePreemption(req, WaitOfUnfitPod(engine_, req, now, state), candidates.list, now, driver, domains);
  if (!quote.ok() || !quote->pays()) {
    h_.stats.preempt_vetoed++;
    if (!budget_refusal.empty()) disruptions_.Event(args.pod, "Warning", "PreemptionBlocked", budget_refusal);
    return r;  // no candidate for any node: nothing here pays for itself (or makes room)
  }
  const placement::PreemptionDecision& decision = *quote->decision;
  // Budgets shared by several chosen groups: the set as a whole too, before anything is written.
  if (std::string why = disruptions_.BudgetRefusal(candidates.PodsOf(decision)); !why.empty()) {
    disruptions_.Event(args.pod, "Warning", "PreemptionBlocked", why);
    h_.stats.preempt_vetoed++;
    return r;
  }
  // Victims cheaper to ask for a checkpoint than to lose: ask, veto; the pod retries.
  const std::map<std::string, std::string> notice_jobs = candidates.NoticeJobs(*quote, engine_, now);
  if (!notice_jobs.empty()) {
    disruptions_.RequestNotice(notice_jobs, args.pod);
    h_.stats.preempt_vetoed++;
    return r;
  }
  const std::string node = decision.plan.members.empty() ? "" : decision.plan.members[0].node.str();
  auto offered = args.victims.find(node);
  if (offered == args.victims.end()) {  // cannot happen with domains; never answer for another node
    h_.stats.preempt_vetoed++;
    return r;
  }
  // kube-scheduler's own victims on the node that hold no GPU we know of stay (it needs them
  // for other resources); of the GPU pods, only the engine's choice.
  std::set<std::string> on_node;
  for (const std::string& uid : offered->second) {
    if (!h_.ledger.FindPod(PodUid(uid))) on_node.insert(uid);
  }
  std::vector<EvictionJob> evictions;
  size_t victim_count = 0;
  for (int v : decision.victims) {
    const VictimGroup& g = *candidates.groups[static_cast<size_t>(v)];
    if (!g.leaving) engine_.RecordPreemption(g.job, now, EngineKeyOf(g));
    EvictionJob job;
    job.group = g.key.starts_with("pod:") ? g.members.front()->info.Key() : g.key;
    job.preemptor = args.pod.Key();
    for (const PodRecord* m : g.members) {
      ++victim_count;
      if (m->node.str() == node || m->info.node_name == node) {
        on_node.insert(m->info.uid.str());
        job.others_disrupted = true;  // kube-scheduler deletes it once we answer
        disruptions_.Event(m->info, "Normal", "Preempted",
              fmt::format("preempted by {} (priority {}) on {}: {}", args.pod.Key(), args.pod.priority, node,
                          quote->price.Describe()));
      } else if (!m->info.node_name.empty()) {
        job.pods.push_back(RefOf(m->info));
      }
    }
    if (!job.pods.empty()) evictions.push_back(std::move(job));
  }
  r.victims[node].assign(on_node.begin(), on_node.end());
  if (auto it = args.pdb_violations.find(node); it != args.pdb_violations.end()) r.pdb_violations[node] = it->second;
  h_.stats.preempt_accepted++;
  disruptions_.Event(args.pod, "Normal", "Preempting",
        fmt::format("preempting {} pod(s) of {} lower-tier gang(s) to make room on {} ({})", victim_count,
                    decision.victims.size(), node, quote->price.Describe()));
  for (EvictionJob& job : evictions) disruptions_.Evict(std::move(job));
  return r;
}

PreemptResult PreemptVerb::PreemptGang(const PreemptArgs& args, const PodRecord& preemptor) {
  PreemptResult r;
  r.meta = args.meta;
  const MonotonicTime mono = h_.clock.Now();
  const double now = EngineSeconds(mono);
  const SystemTime wall = h_.clock.WallNow();
  auto engine_time = [&](std::optional<SystemTime> t) {
    return t ? now - std::chrono::duration<double>(wall - *t).count() : now;
  };
  GangRecord* g = h_.ledger.MutableGang(preemptor.info.Gang());
  if (!g) return r;
  const int members = std::max(g->MinMembers(mono).value_or(static_cast<int>(g->members.size())),
                               static_cast<int>(g->members.size()));
  std::map<std::string, VictimGroup> groups = VictimGroupsFor(
      h_.ledger, h_.config, preemptor.info.priority, preemptor.info.Gang().str(),
      [&](const PodRecord& pod, double* notice, std::string* job) {
        return disruptions_.GpuSecondsAtRisk(pod, wall, notice, job);
      });
  Candidates candidates;
  std::string budget_refusal;
  for (const auto& [key, vg] : groups) {
    if (key == g->key.str()) continue;
    // A gang whose budgets would refuse its eviction is never a candidate (nothing half-evicted).
    if (std::string why = disruptions_.BudgetRefusal(vg.members); !why.empty()) {
      budget_refusal = why;
      continue;
    }
    candidates.Add(key, vg, engine_time(vg.started));
  }
  const scheduling::GangRequest req = admission_.EngineRequestOf(*g, members);
  QuoteDriver driver(h_.ledger.state(), groups);
  auto quote = engine_.QuotePreemption(req, WaitOfUnfitPod(engine_, req, now, h_.ledger.state()), candidates.list, now, driver,
                                       std::nullopt, g->plan ? std::optional<GangKey>(g->key) : std::nullopt);
  if (!quote.ok() || !quote->pays()) {
    g->last_no_fit = "preemption: " + (quote.ok() ? quote->why : std::string(quote.status().message()));
    if (!budget_refusal.empty()) {
      g->last_no_fit += "; " + budget_refusal;
      disruptions_.Event(preemptor.info, "Warning", "PreemptionBlocked", budget_refusal);
    }
    h_.stats.preempt_vetoed++;
    return r;
  }
  const auto& decision = *quote->decision;
  // Budgets shared by several chosen gangs: check the set as a whole too.
  if (std::string why = disruptions_.BudgetRefusal(candidates.PodsOf(decision)); !why.empty()) {
    g->last_no_fit = "preemption: " + why;
    disruptions_.Event(preemptor.info, "Warning", "PreemptionBlocked", why);
    h_.stats.preempt_vetoed++;
    return r;
  }
  const std::map<std::string, std::string> jobs = candidates.NoticeJobs(*quote, engine_, now);
  if (!jobs.empty()) {
    disruptions_.RequestNotice(jobs, preemptor.info);
    h_.stats.preempt_vetoed++;
    return r;
  }
  // Reply with one planned node the scheduler offered; evict the rest ourselves.
  std::string reply_node;
  for (const auto& m : decision.plan.members) {
    if (args.victims.contains(m.node.str())) {
      reply_node = m.node.str();
      break;
    }
  }
  std::vector<EvictionJob> evictions;
  size_t victim_count = 0;
  for (int v : decision.victims) {
    const VictimGroup& vg = *candidates.groups[static_cast<size_t>(v)];
    if (!vg.leaving) engine_.RecordPreemption(vg.job, now, EngineKeyOf(vg));
    EvictionJob job;
    job.group = vg.key.starts_with("pod:") ? vg.members.front()->info.Key() : vg.key;
    job.preemptor = "gang " + g->key.str();
    for (const PodRecord* rec : vg.members) {
      victim_count++;
      if (!reply_node.empty() && rec->node.str() == reply_node) {
        r.victims[reply_node].push_back(rec->info.uid.str());
        job.others_disrupted = true;  // kube-scheduler deletes it once we answer
        disruptions_.Event(rec->info, "Normal", "Preempted",
              fmt::format("preempted by gang {} (priority {}) on {}: {}", g->key.str(), preemptor.info.priority,
                          reply_node, quote->price.Describe()));
      } else {
        job.pods.push_back(RefOf(rec->info));
      }
    }
    if (!job.pods.empty()) evictions.push_back(std::move(job));
  }
  h_.stats.preempt_accepted++;
  disruptions_.Event(preemptor.info, "Normal", "Preempting",
        fmt::format("gang {} preempts {} pod(s) of {} lower-tier gang(s) ({})", g->key.str(), victim_count,
                    decision.victims.size(), quote->price.Describe()));
  for (EvictionJob& job : evictions) disruptions_.Evict(std::move(job));
  return r;
}

}  // namespace phalanx::extender
