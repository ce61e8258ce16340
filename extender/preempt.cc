// The preempt verb: whole lower-tier gangs only, least work at risk, graceful notice
// for TrainingJobs that need it; members on other nodes evicted by the extender.
#include "extender/extender.h"

#include <bit>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/placement/preemption.h"
#include "extender/extender_internal.h"

namespace phalanx::extender {

using namespace internal;  // NOLINT: this component's own helpers

// --- preempt -------------------------------------------------------------------------------

double Extender::GpuSecondsAtRisk(const PodRecord& pod, SystemTime now, double* notice, std::string* job) const {
  if (!pod.info.training_job.empty()) {
    const std::string key = pod.info.ns + "/" + pod.info.training_job;
    if (const TrainingJobInfo* tj = ledger_.FindTrainingJob(key)) {
      *notice = std::max(*notice, tj->notice_seconds_needed);
      *job = key;
      return tj->gpu_seconds_at_risk;
    }
  }
  auto start = pod.info.start_time ? pod.info.start_time : pod.info.creation_time;
  if (!start) return 0;
  const double elapsed = std::max(0.0, std::chrono::duration<double>(now - *start).count());
  return elapsed * std::popcount(pod.gpus);
}

void Extender::RequestNotice(const std::map<std::string, std::string>& jobs, const PodInfo& preemptor) {
  const SystemTime now = clock_.WallNow();
  for (const auto& [key, request_id] : jobs) {
    const TrainingJobInfo* tj = ledger_.FindTrainingJob(key);
    if (!tj || !tj->preempt_request.empty()) continue;  // already asked
    json::Json req = {{"requestId", request_id},
                      {"deadline", FormatRfc3339(now + std::chrono::seconds(static_cast<int64_t>(tj->notice_seconds_needed) + 60))},
                      {"reason", fmt::format("preempted by {} (priority {})", preemptor.Key(), preemptor.priority)},
                      {"preemptor", preemptor.Key()}};
    TrainingJobInfo updated = *tj;
    updated.preempt_request = json::Dump(req);
    ledger_.UpsertTrainingJob(updated);
    io_.Submit([this, ns = tj->ns, name = tj->name, body = updated.preempt_request] {
      if (!writer_.RequestGracefulPreemption(ns, name, body).ok()) stats_.write_errors++;
    });
  }
}

std::string Extender::BudgetRefusal(const std::vector<const PodRecord*>& victims) const {
  if (!budgets_ || victims.empty()) return "";
  std::set<std::string> namespaces;
  for (const PodRecord* v : victims) namespaces.insert(v->info.ns);
  std::vector<PdbInfo> budgets;
  bool estimate = false;  // some budget has no status: count the pods we know
  for (const std::string& ns : namespaces) {
    for (PdbInfo& b : budgets_->BudgetsIn(ns)) {
      estimate = estimate || !b.has_status;
      budgets.push_back(std::move(b));
    }
  }
  if (budgets.empty()) return "";
  std::vector<const PodInfo*> victim_pods, namespace_pods;
  for (const PodRecord* v : victims) victim_pods.push_back(&v->info);
  if (estimate) {
    for (const auto& [uid, rec] : ledger_.pods()) {
      if (namespaces.contains(rec.info.ns)) namespace_pods.push_back(&rec.info);
    }
  }
  return CheckEvictions(budgets, victim_pods, namespace_pods);
}

void Extender::Event(const PodInfo& pod, std::string_view type, std::string_view reason, std::string_view note) {
  if (events_) events_->Record({.ns = pod.ns, .name = pod.name, .uid = pod.uid.str()}, type, reason, "Preempting", note);
}

void Extender::OnEvictionReport(const EvictionReport& report) {
  stats_.evictions += report.done.size();
  stats_.write_errors += static_cast<uint64_t>(report.write_errors);
  if (!events_) return;
  using Outcome = EvictionReport::Outcome;
  const bool ok = report.outcome == Outcome::kEvicted;
  const char* reason = report.outcome == Outcome::kEvicted  ? "Preempted"
                       : report.outcome == Outcome::kRefused ? "PreemptionRefused"
                                                             : "PreemptionForced";
  for (const PodRef& ref : report.outcome == Outcome::kRefused ? report.job.pods : report.done) {
    events_->Record({.ns = ref.ns, .name = ref.name, .uid = ref.uid}, ok ? "Normal" : "Warning", reason, "Preempting",
                    report.message);
  }
}

PreemptResult Extender::Preempt(const PreemptArgs& args) {
  PreemptResult r;
  r.meta = args.meta;
  if (args.pod.gpus <= 0) {  // not about GPUs: the scheduler's choice stands
    r.victims = args.victims;
    r.pdb_violations = args.pdb_violations;
    return r;
  }
  std::unique_lock lock(mu_);
  if (!ledger_.FindPod(args.pod.uid)) ledger_.UpsertPod(args.pod, clock_.Now());
  const PodRecord& preemptor = *ledger_.FindPod(args.pod.uid);
  if (args.pod.IsGangMember()) return PreemptGang(args, preemptor);

  const SystemTime wall = clock_.WallNow();
  const auto& state = ledger_.state();
  struct Candidate {
    std::string node;
    std::vector<std::string> on_node;
    std::vector<PodRef> elsewhere;
    double risk = 0;
    int highest_tier = 0;  // lowest index = highest tier; we prefer victims of the lowest tiers
    std::map<std::string, std::string> notice_jobs;
    std::map<std::string, EvictionJob> jobs;  // victim group -> members the extender evicts
    std::vector<const PodRecord*> victims;
  };
  std::optional<Candidate> best;
  std::string budget_refusal;  // the last candidate refused for a PodDisruptionBudget
  for (const auto& [node_name, uids] : args.victims) {
    auto idx = state.FindNode(NodeName(node_name));
    if (!idx) continue;
    Candidate c;
    c.node = node_name;
    c.highest_tier = static_cast<int>(config_.tiers.size());
    bool allowed = true;
    std::set<std::string> groups;  // victim gangs ("ns/gang") or single pods ("pod:<uid>")
    std::set<std::string> on_node(uids.begin(), uids.end());
    std::vector<PodUid> release;
    std::vector<const PodRecord*> victims;
    std::vector<std::string> victim_group;  // parallel to victims
    for (const std::string& uid : uids) {
      const PodRecord* v = ledger_.FindPod(PodUid(uid));
      if (!v) continue;  // holds no GPU we know of (the scheduler needs it for other resources)
      if (!config_.MayPreempt(args.pod.priority, v->info.priority)) {
        allowed = false;
        break;
      }
      if (v->info.IsGangMember()) {
        if (groups.insert(v->info.Gang().str()).second) {
          const GangRecord* g = ledger_.FindGang(v->info.Gang());
          std::vector<PodUid> members = g ? std::vector<PodUid>(g->members.begin(), g->members.end())
                                          : std::vector<PodUid>{v->info.uid};
          for (const PodUid& m : members) {
            const PodRecord* mr = ledger_.FindPod(m);
            if (!mr) continue;
            if (!config_.MayPreempt(args.pod.priority, mr->info.priority)) allowed = false;
            victims.push_back(mr);
            victim_group.push_back(v->info.Gang().str());
          }
        }
      } else if (groups.insert("pod:" + uid).second) {
        victims.push_back(v);
        victim_group.push_back(v->info.Key());
      }
    }
    if (!allowed) continue;
    double notice = 0;
    std::set<std::string> jobs_counted;
    for (size_t vi = 0; vi < victims.size(); ++vi) {
      const PodRecord* v = victims[vi];
      if (v->holding != Holding::kNone) release.push_back(v->info.uid);
      double n = 0;
      std::string job;
      const double risk = GpuSecondsAtRisk(*v, wall, &n, &job);
      if (job.empty() || jobs_counted.insert(job).second) c.risk += risk;
      if (n > 0 && !job.empty()) c.notice_jobs[job] = fmt::format("{}-{}", args.pod.uid.str(), job);
      notice = std::max(notice, n);
      c.highest_tier = std::min(c.highest_tier, config_.TierOf(v->info.priority));
      EvictionJob& evict = c.jobs[victim_group[vi]];
      evict.group = victim_group[vi];
      if (v->node.str() == node_name || v->info.node_name == node_name) {
        on_node.insert(v->info.uid.str());
        evict.others_disrupted = true;  // kube-scheduler deletes it once we answer
      } else if (!v->info.node_name.empty()) {
        c.elsewhere.push_back(RefOf(v->info));
        evict.pods.push_back(RefOf(v->info));
      }
      c.victims.push_back(v);
    }
    // The preemptor must really fit on this node once the victims' GPUs are free.
    placement::GangSpec spec;
    spec.key = GangKey("preemptor/" + args.pod.uid.str());
    spec.gpus_per_member = std::clamp(args.pod.gpus, 1, placement::kMaxGpusPerNode);
    if (!args.pod.pool_selector.empty()) spec.pool = args.pod.pool_selector;
    spec.level = config_.topology_levels.front();
    spec.mode = placement::TopologyMode::kRequired;
    placement::PlanOptions options;
    options.assume_released = release;
    options.only_domain = state.node(*idx).spec.domains.empty() ? node_name : state.node(*idx).spec.domains[0];
    auto plan = placement::PlanGang(state, spec, options);
    if (!plan.ok() || !plan->fits()) continue;
    // Every member's budgets, before anything is written: a refusal must leave no gang half-evicted.
    if (std::string why = BudgetRefusal(victims); !why.empty()) {
      budget_refusal = fmt::format("node {}: {}", node_name, why);
      continue;
    }
    c.on_node.assign(on_node.begin(), on_node.end());
    // Rank: victims from the lowest tiers, then least work at risk, then fewest victims.
    auto rank = [](const Candidate& x) { return std::make_tuple(-x.highest_tier, x.risk, x.on_node.size() + x.elsewhere.size()); };
    if (!best || rank(c) < rank(*best)) best = std::move(c);
  }
  if (!best) {
    stats_.preempt_vetoed++;
    if (!budget_refusal.empty()) Event(args.pod, "Warning", "PreemptionBlocked", budget_refusal);
    return r;  // veto: no candidate is made of whole lower-tier gangs that make room
  }
  if (!best->notice_jobs.empty()) {
    RequestNotice(best->notice_jobs, args.pod);
    stats_.preempt_vetoed++;
    return r;  // the operator drains the job after a checkpoint; the preemptor retries
  }
  r.victims[best->node] = best->on_node;
  if (auto it = args.pdb_violations.find(best->node); it != args.pdb_violations.end()) {
    r.pdb_violations[best->node] = it->second;
  }
  stats_.preempt_accepted++;
  Event(args.pod, "Normal", "Preempting",
        fmt::format("preempting {} pod(s) of lower tiers to make room on {}", best->victims.size(), best->node));
  for (const PodRecord* v : best->victims) {
    if (v->info.node_name == best->node) {
      Event(v->info, "Normal", "Preempted",
            fmt::format("preempted by {} (priority {}) on {}", args.pod.Key(), args.pod.priority, best->node));
    }
  }
  for (auto& [group, job] : best->jobs) {
    if (job.pods.empty()) continue;
    job.preemptor = args.pod.Key();
    evictor_.Submit(std::move(job));
  }
  return r;
}

PreemptResult Extender::PreemptGang(const PreemptArgs& args, const PodRecord& preemptor) {
  PreemptResult r;
  r.meta = args.meta;
  const MonotonicTime now = clock_.Now();
  const SystemTime wall = clock_.WallNow();
  GangRecord* g = ledger_.MutableGang(preemptor.info.Gang());
  if (!g) return r;
  const int members = std::max(EffectiveMin(*g, now).value_or(static_cast<int>(g->members.size())),
                               static_cast<int>(g->members.size()));
  // Candidate victims: every whole gang (or single pod) of a tier we may preempt.
  std::map<std::string, placement::VictimGang> groups;
  std::map<std::string, std::map<std::string, std::string>> notice_jobs;
  std::map<std::string, std::set<std::string>> counted_jobs;
  for (const auto& [uid, rec] : ledger_.pods()) {
    if (rec.holding == Holding::kNone) continue;
    const std::string key = rec.info.IsGangMember() ? rec.info.Gang().str() : "pod:" + uid.str();
    auto& vg = groups[key];
    vg.key = GangKey(key);
    vg.priority = std::max(vg.priority, rec.info.priority);
    vg.pods.push_back(uid);
    double n = 0;
    std::string job;
    const double risk = GpuSecondsAtRisk(rec, wall, &n, &job);
    if (job.empty() || counted_jobs[key].insert(job).second) vg.gpu_seconds_at_risk += risk;
    vg.notice_seconds_needed = std::max(vg.notice_seconds_needed, n);
    if (n > 0) notice_jobs[key][job] = fmt::format("{}-{}", preemptor.info.Gang().str(), job);
  }
  std::vector<placement::VictimGang> candidates;
  std::string budget_refusal;
  for (auto& [key, vg] : groups) {
    bool ok = true;
    std::vector<const PodRecord*> members;
    for (const PodUid& uid : vg.pods) {
      members.push_back(ledger_.FindPod(uid));
      ok = ok && config_.MayPreempt(preemptor.info.priority, members.back()->info.priority);
    }
    if (!ok) continue;
    // A gang whose budgets would refuse its eviction is never a candidate (nothing half-evicted).
    if (std::string why = BudgetRefusal(members); !why.empty()) {
      budget_refusal = why;
      continue;
    }
    candidates.push_back(std::move(vg));
  }
  placement::PreemptionRequest req;
  req.preemptor = SpecOf(*g, members);
  req.priority = preemptor.info.priority;
  req.candidates = candidates;
  if (g->plan) req.own_plan = g->key;
  auto result = placement::ChoosePreemption(ledger_.state(), req);
  if (!result.ok() || !result->helps() || result->decision->victims.empty()) {
    if (result.ok() && result->none) g->last_no_fit = "preemption: " + result->none->Message();
    if (!budget_refusal.empty()) {
      g->last_no_fit = "preemption: " + budget_refusal;
      Event(preemptor.info, "Warning", "PreemptionBlocked", budget_refusal);
    }
    stats_.preempt_vetoed++;
    return r;
  }
  const auto& decision = *result->decision;
  {
    // Budgets shared by several chosen gangs: check the set as a whole too.
    std::vector<const PodRecord*> all;
    for (int v : decision.victims) {
      for (const PodUid& uid : candidates[static_cast<size_t>(v)].pods) all.push_back(ledger_.FindPod(uid));
    }
    if (std::string why = BudgetRefusal(all); !why.empty()) {
      g->last_no_fit = "preemption: " + why;
      Event(preemptor.info, "Warning", "PreemptionBlocked", why);
      stats_.preempt_vetoed++;
      return r;
    }
  }
  std::map<std::string, std::string> jobs;
  for (int v : decision.victims) {
    auto it = notice_jobs.find(candidates[static_cast<size_t>(v)].key.str());
    if (it != notice_jobs.end()) jobs.insert(it->second.begin(), it->second.end());
  }
  if (!jobs.empty()) {
    RequestNotice(jobs, preemptor.info);
    stats_.preempt_vetoed++;
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
    EvictionJob job;
    job.group = candidates[static_cast<size_t>(v)].key.str();
    job.preemptor = "gang " + g->key.str();
    for (const PodUid& uid : candidates[static_cast<size_t>(v)].pods) {
      const PodRecord* rec = ledger_.FindPod(uid);
      if (!rec) continue;
      victim_count++;
      if (!reply_node.empty() && rec->node.str() == reply_node) {
        r.victims[reply_node].push_back(uid.str());
        job.others_disrupted = true;  // kube-scheduler deletes it once we answer
        Event(rec->info, "Normal", "Preempted",
              fmt::format("preempted by gang {} (priority {}) on {}", g->key.str(), preemptor.info.priority, reply_node));
      } else {
        job.pods.push_back(RefOf(rec->info));
      }
    }
    if (!job.pods.empty()) evictions.push_back(std::move(job));
  }
  stats_.preempt_accepted++;
  Event(preemptor.info, "Normal", "Preempting",
        fmt::format("gang {} preempts {} pod(s) of {} lower-tier gang(s)", g->key.str(), victim_count,
                    decision.victims.size()));
  for (EvictionJob& job : evictions) evictor_.Submit(std::move(job));
  return r;
}

}  // namespace phalanx::extender
