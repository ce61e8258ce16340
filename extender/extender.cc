#include "extender/extender.h"

#include <algorithm>
#include <array>
#include <bit>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "core/placement/node_score.h"
#include "core/placement/preemption.h"
#include "extender/mig_filter.h"

namespace phalanx::extender {
namespace {

using placement::GpuMask;

constexpr size_t kMaxRememberedPods = 50000;

PodRef RefOf(const PodInfo& p) { return {p.ns, p.name, p.uid.str()}; }

// A gang member past the commit point (devices annotated, charged on its node) whose
// Binding has not happened: the extender owes it a Binding, never a new plan.
bool IsCommittedUnbound(const PodRecord& rec) {
  return rec.info.IsGangMember() && rec.info.devices && !rec.info.devices->empty() && rec.holding != Holding::kNone &&
         !rec.node.empty();
}

placement::PodRequest RequestOf(const PodInfo& p) {
  placement::PodRequest r;
  r.gpus = std::max(1, p.gpus);
  r.priority = p.priority;
  if (!p.pool_selector.empty()) r.pool = p.pool_selector;
  return r;
}

std::string Seconds(Duration d) {
  return fmt::format("{:.0f}s", std::chrono::duration<double>(d).count());
}

}  // namespace

Extender::Extender(ExtenderConfig config, Clock& clock, ClusterWriter& writer, Leadership& leadership)
    : config_(std::move(config)),
      clock_(clock),
      writer_(writer),
      leadership_(leadership),
      ledger_(config_.topology_levels),
      queue_(admission::AdmissionConfig{.head_of_line = config_.head_of_line}) {}

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

// --- filter --------------------------------------------------------------------------------

void Extender::RememberPod(const PodInfo& pod) {
  std::lock_guard lock(summaries_mu_);
  if (seen_pods_.size() >= kMaxRememberedPods) seen_pods_.clear();
  seen_pods_[pod.uid] = pod;
}

void Extender::RecordFilterSummary(const PodInfo& pod, const FilterResult& r) {
  std::map<std::string_view, int> reasons;
  for (const auto& [node, why] : r.failed) reasons[why]++;
  for (const auto& [node, why] : r.unresolvable) reasons[why]++;
  std::string text = fmt::format("last filter: {} of {} candidate nodes fit", r.passed.size(),
                                 r.passed.size() + r.failed.size() + r.unresolvable.size());
  int shown = 0;
  for (const auto& [why, count] : reasons) {
    if (shown++ == 5) break;
    text += fmt::format("; {} node(s): {}", count, why);
  }
  std::lock_guard lock(summaries_mu_);
  if (filter_summaries_.size() >= kMaxRememberedPods) filter_summaries_.clear();
  filter_summaries_[pod.Key()] = std::move(text);
}

FilterResult Extender::Filter(const FilterArgs& args) {
  FilterResult r;
  r.full_nodes = args.full_nodes;
  if (args.full_nodes) {
    // Nodes the ledger has not seen yet (no informer in embedded mode): learn them.
    std::unique_lock lock(mu_);
    for (std::string_view raw : args.raw_nodes) {
      auto doc = json::Parse(raw);
      if (!doc.ok()) continue;
      auto node = ParseNode(*doc);
      if (node.ok() && !ledger_.FindNode(node->name)) (void)ledger_.UpsertNode(*node);
    }
  }
  auto pass = [&](size_t i) {
    r.passed.push_back(args.node_names[i]);
    if (args.full_nodes && i < args.raw_nodes.size()) r.passed_raw.push_back(args.raw_nodes[i]);
  };
  if (RequestsMig(args.pod)) {  // nvidia.com/mig-<profile>: extender/mig_filter.h
    RememberPod(args.pod);
    std::shared_lock lock(mu_);
    FilterResult m = FilterMig(ledger_, args);
    lock.unlock();
    if (m.passed.empty()) RecordFilterSummary(args.pod, m);
    return m;
  }
  if (args.pod.gpus <= 0) {  // not a managed resource: nothing for us to judge
    for (size_t i = 0; i < args.node_names.size(); ++i) pass(i);
    return r;
  }
  RememberPod(args.pod);
  if (args.pod.IsGangMember()) {
    FilterResult g = FilterGang(args);
    RecordFilterSummary(args.pod, g);
    return g;
  }
  const placement::PodRequest request = RequestOf(args.pod);
  std::shared_lock lock(mu_);
  const auto& state = ledger_.state();
  // Most failing nodes share a handful of reasons: format each distinct one once.
  std::map<std::array<int, 8>, std::string> messages;
  for (size_t i = 0; i < args.node_names.size(); ++i) {
    const std::string_view name = args.node_names[i];
    auto idx = state.FindNode(NodeName(name));
    if (!idx) {
      r.unresolvable.emplace_back(name, "node has no GPUs known to phalanx (no nvidia.com/gpu, or not yet synced)");
      continue;
    }
    const placement::Feasibility f = placement::CheckFeasibility(state, *idx, request);
    if (f.fits()) {
      pass(i);
      continue;
    }
    const std::array<int, 8> key = {static_cast<int>(f.reason), f.requested, f.free, f.preemptible,
                                    f.reserved, f.healthy, f.capacity, state.node(*idx).pool};
    auto [it, fresh] = messages.try_emplace(key);
    if (fresh) it->second = placement::FormatFeasibility(f, kGpuResource);
    (f.resolvable_by_preemption() ? r.failed : r.unresolvable).emplace_back(name, it->second);
  }
  lock.unlock();
  if (r.passed.empty()) RecordFilterSummary(args.pod, r);
  return r;
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

std::string Extender::TryPlan(GangRecord& g, MonotonicTime now) {
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
  const std::optional<placement::ClusterState> held = StateWithNominatedHolds(g.priority);
  auto planned = placement::PlanGang(held ? *held : ledger_.state(), SpecOf(g, std::max(*min, live)));
  if (!planned.ok()) return g.last_no_fit = fmt::format("gang {}: {}", g.key.str(), planned.status().message());
  if (!planned->fits()) return g.last_no_fit = fmt::format("gang {}: {}", g.key.str(), planned->no_fit->Message());
  const GangKey key = g.key;
  Status st = ledger_.AdmitPlan(key, std::move(*planned->plan), now);
  if (!st.ok()) return fmt::format("gang {}: {}", key.str(), st.message());
  stats_.gangs_admitted++;
  return "";
}

std::optional<placement::ClusterState> Extender::StateWithNominatedHolds(int priority) const {
  std::optional<placement::ClusterState> state;
  for (const PodUid& uid : ledger_.nominated_pods()) {
    const PodRecord* rec = ledger_.FindPod(uid);
    if (rec == nullptr || rec->info.gpus <= 0 || rec->info.priority <= priority || rec->holding != Holding::kNone) {
      continue;
    }
    const PodInfo& p = rec->info;
    if (!state) state.emplace(ledger_.state());
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

FilterResult Extender::FilterGang(const FilterArgs& args) {
  FilterResult r;
  r.full_nodes = args.full_nodes;
  const PodInfo& pod = args.pod;
  const GangKey key = pod.Gang();
  const MonotonicTime now = clock_.Now();
  std::unique_lock lock(mu_);
  if (!ledger_.FindPod(pod.uid)) ledger_.UpsertPod(pod, now);  // embedded mode: learn it here
  GangRecord* g = ledger_.MutableGang(key);
  auto fail_all = [&](const std::string& why, bool resolvable) {
    for (std::string_view n : args.node_names) (resolvable ? r.failed : r.unresolvable).emplace_back(n, why);
    return r;
  };
  if (!g) return fail_all(fmt::format("pod {} is not a live member of gang {}", pod.Key(), key.str()), false);
  if (const PodRecord* rec = ledger_.FindPod(pod.uid); rec && IsCommittedUnbound(*rec)) {
    // Committed (devices annotated) but its Binding failed: only its node, whatever the plan.
    const std::string why = fmt::format("gang {}: pod {} is committed to node {}", key.str(), pod.Key(), rec->node.str());
    for (size_t i = 0; i < args.node_names.size(); ++i) {
      if (args.node_names[i] == rec->node.str()) {
        r.passed.push_back(args.node_names[i]);
        if (args.full_nodes && i < args.raw_nodes.size()) r.passed_raw.push_back(args.raw_nodes[i]);
      } else {
        r.unresolvable.emplace_back(args.node_names[i], why);
      }
    }
    return r;
  }
  if (!g->plan) {
    if (!leadership_.IsLeader()) {
      return fail_all(fmt::format("gang {} is not admitted yet; the active extender (Lease phalanx-extender) plans it",
                                  key.str()),
                      false);
    }
    std::string why = TryPlan(*g, now);
    if (!why.empty()) return fail_all(why, true);
  }
  std::set<std::string_view> input(args.node_names.begin(), args.node_names.end());
  auto ordinal = ledger_.AssignMember(key, pod.uid, [&](const NodeName& n) { return input.contains(n.str()); });
  if (!ordinal) {
    return fail_all(fmt::format("gang {}: every planned member slot is taken by other pods", key.str()), false);
  }
  const std::string& planned = g->plan->members[static_cast<size_t>(*ordinal)].node.str();
  const std::string why = fmt::format("gang {} member {} is planned on node {}", key.str(), *ordinal, planned);
  for (size_t i = 0; i < args.node_names.size(); ++i) {
    if (args.node_names[i] == planned) {
      r.passed.push_back(args.node_names[i]);
      if (args.full_nodes && i < args.raw_nodes.size()) r.passed_raw.push_back(args.raw_nodes[i]);
    } else {
      r.unresolvable.emplace_back(args.node_names[i], why);
    }
  }
  return r;
}

// --- prioritize ----------------------------------------------------------------------------

std::vector<HostScore> Extender::Prioritize(const FilterArgs& args) {
  std::vector<HostScore> out;
  out.reserve(args.node_names.size());
  std::shared_lock lock(mu_);
  const auto& state = ledger_.state();
  if (RequestsMig(args.pod)) return PrioritizeMig(ledger_, args);
  if (args.pod.gpus <= 0) {
    for (std::string_view n : args.node_names) out.push_back({n, 0});
    return out;
  }
  if (args.pod.IsGangMember()) {
    const GangRecord* g = ledger_.FindGang(args.pod.Gang());
    std::string_view planned;
    if (g && g->plan) {
      if (auto it = g->assignment.find(args.pod.uid); it != g->assignment.end()) {
        planned = g->plan->members[static_cast<size_t>(it->second)].node.str();
      }
    }
    for (std::string_view n : args.node_names) out.push_back({n, n == planned ? 10 : 0});
    return out;
  }
  const placement::PodRequest request = RequestOf(args.pod);
  for (std::string_view n : args.node_names) {
    int score = 0;
    if (auto idx = state.FindNode(NodeName(n))) {
      auto s = placement::ScoreNode(state, *idx, request, config_.weights);
      if (s.ok()) score = std::clamp(s->Rounded(), 0, 10);
    }
    out.push_back({n, score});
  }
  return out;
}

// --- bind ----------------------------------------------------------------------------------

int Extender::CommittedMembers(const GangKey& key) const {
  const GangRecord* g = ledger_.FindGang(key);
  if (!g || !g->plan) return 0;
  const auto* res = ledger_.state().FindReservation(key);
  if (!res) return static_cast<int>(g->plan->members.size());
  return static_cast<int>(std::count(res->committed.begin(), res->committed.end(), true));
}

void Extender::Bind(const BindArgs& args, BindCallback done) {
  if (!leadership_.IsLeader()) {
    done("this extender is not the active one (Lease phalanx-extender is held by another replica); retry");
    return;
  }
  const MonotonicTime now = clock_.Now();
  std::unique_lock lock(mu_);
  const PodRecord* rec = args.pod_uid.empty() ? nullptr : ledger_.FindPod(PodUid(args.pod_uid));
  if (!rec) rec = ledger_.FindPodByName(args.pod_namespace + "/" + args.pod_name);
  if (!rec) {
    std::optional<PodInfo> seen;
    {
      std::lock_guard slock(summaries_mu_);
      if (auto it = seen_pods_.find(PodUid(args.pod_uid)); it != seen_pods_.end()) seen = it->second;
    }
    // A bind to a node the ledger does not know fails before the pod is recorded, so bad
    // input leaves the ledger unchanged.
    if (seen && seen->gpus > 0 && !ledger_.state().FindNode(NodeName(args.node))) {
      done(fmt::format("node {} is not in the extender's ledger", args.node));
      return;
    }
    if (seen) {
      ledger_.UpsertPod(*seen, now);
      rec = ledger_.FindPod(seen->uid);
    }
  }
  const PodRef ref{args.pod_namespace, args.pod_name, args.pod_uid};
  if (!rec) {
    // Not a pod with a managed resource we have seen: bind it as asked.
    lock.unlock();
    io_.Submit([this, ref, node = args.node, done = std::move(done)] {
      Status st = writer_.BindPod(ref, node);
      if (!st.ok()) stats_.write_errors++;
      done(st.ok() ? "" : std::string(st.message()));
    });
    return;
  }
  const PodInfo pod = rec->info;
  const NodeName node(args.node);
  if (!pod.IsGangMember() || pod.gpus <= 0) {
    GpuMask mask = 0;
    if (pod.gpus > 0) {
      auto idx = ledger_.state().FindNode(node);
      if (!idx) {
        done(fmt::format("node {} is not in the extender's ledger", args.node));
        return;
      }
      if (rec->holding != Holding::kNone && rec->node == node) {
        mask = rec->gpus;  // already charged there (bind retried)
      } else {
        auto score = placement::ScoreNode(ledger_.state(), *idx, RequestOf(pod), config_.weights);
        if (!score.ok()) {
          done(fmt::format("pod {} no longer fits on node {}: {}", pod.Key(), args.node, score.status().message()));
          return;
        }
        mask = score->gpus;
        if (Status st = ledger_.AssumePod(pod.uid, node, mask); !st.ok()) {
          done(fmt::format("pod {}: {}", pod.Key(), st.message()));
          return;
        }
      }
    }
    std::vector<std::string> mig_ids;
    if (RequestsMig(pod)) {
      auto chosen = AssumeMigForBind(ledger_, pod, node);
      if (!chosen.ok()) {
        done(fmt::format("pod {} no longer fits on node {}: {}", pod.Key(), args.node, chosen.status().message()));
        return;
      }
      mig_ids = std::move(*chosen);
    }
    DeviceAssignment devices;
    auto ids = ledger_.DeviceIds(node, mask);
    if (!ids.empty()) devices[pod.gpu_container.empty() ? "main" : pod.gpu_container] = std::move(ids);
    if (!mig_ids.empty()) {
      auto& list = devices[pod.mig_container.empty() ? "main" : pod.mig_container];
      list.insert(list.end(), mig_ids.begin(), mig_ids.end());
    }
    lock.unlock();
    io_.Submit([this, ref, pod, node, devices, done = std::move(done)] {
      Status st = OkStatus();
      if (!devices.empty()) st = writer_.PatchPodDevices(ref, EncodeDeviceAssignment(devices));
      if (st.ok()) st = writer_.BindPod(ref, node.str());
      {
        std::unique_lock l(mu_);
        PodInfo updated = pod;
        if (st.ok()) {
          updated.node_name = node.str();
          if (!devices.empty()) updated.devices = devices;
        } else {
          updated.node_name.clear();  // forget the assumption
        }
        ledger_.UpsertPod(updated, clock_.Now());
      }
      if (!st.ok()) stats_.write_errors++;
      done(st.ok() ? "" : fmt::format("binding {} to {}: {}", ref.Key(), node.str(), st.message()));
    });
    return;
  }
  if (IsCommittedUnbound(*rec) && rec->node == node) {
    // Past the commit point already (an earlier Binding failed): just bind it.
    lock.unlock();
    io_.Submit([this, ref, node = args.node, done = std::move(done)] {
      Status st = writer_.BindPod(ref, node);
      if (!st.ok()) stats_.write_errors++;
      done(st.ok() ? "" : fmt::format("binding {} to {}: {}", ref.Key(), node, st.message()));
    });
    return;
  }
  // Gang member: the permit barrier.
  const GangKey key = pod.Gang();
  GangRecord* g = ledger_.MutableGang(key);
  if (!g || !g->plan) {
    done(fmt::format("gang {} has no admitted plan (it timed out or was dropped); the scheduler will retry",
                     key.str()));
    return;
  }
  auto ordinal = ledger_.AssignMember(key, pod.uid, [&](const NodeName& n) { return n == node; });
  if (!ordinal || g->plan->members[static_cast<size_t>(*ordinal)].node != node) {
    done(fmt::format("gang {}: pod {} is planned on node {}, not {}", key.str(), pod.Key(),
                     ordinal ? g->plan->members[static_cast<size_t>(*ordinal)].node.str() : "<none>", args.node));
    return;
  }
  Barrier& b = barriers_[key];
  for (const HeldBind& h : b.held) {
    if (h.uid == pod.uid) {
      done(fmt::format("pod {} already has a bind in progress", pod.Key()));
      return;
    }
  }
  if (b.held.empty()) {
    const auto gang_timeout = g->timeout_seconds > 0 ? std::chrono::seconds(g->timeout_seconds) : config_.gang_timeout;
    b.deadline = now + config_.BarrierTimeout(gang_timeout);
  }
  b.held.push_back({pod.uid, *ordinal, std::move(done)});
  const int min = EffectiveMin(*g, now).value_or(static_cast<int>(g->plan->members.size()));
  if (static_cast<int>(b.held.size()) + CommittedMembers(key) >= min) ReleaseBarrier(key);
}

void Extender::ReleaseBarrier(const GangKey& key) {
  auto bit = barriers_.find(key);
  if (bit == barriers_.end()) return;
  std::vector<HeldBind> held = std::move(bit->second.held);
  barriers_.erase(bit);
  struct Job {
    PodRef ref;
    PodInfo pod;
    std::string node;
    DeviceAssignment devices;
    BindCallback done;
  };
  auto jobs = std::make_shared<std::vector<Job>>();
  for (HeldBind& h : held) {
    const PodRecord* rec = ledger_.FindPod(h.uid);
    if (!rec) {
      h.done(fmt::format("pod {} was deleted while its gang waited", h.uid.str()));
      continue;
    }
    Status st = ledger_.CommitMember(key, h.ordinal, h.uid);
    if (!st.ok()) {
      h.done(fmt::format("gang {}: {}", key.str(), st.message()));
      continue;
    }
    rec = ledger_.FindPod(h.uid);
    Job job{RefOf(rec->info), rec->info, rec->node.str(), {}, std::move(h.done)};
    auto ids = ledger_.DeviceIds(rec->node, rec->gpus);
    if (!ids.empty()) job.devices[rec->info.gpu_container.empty() ? "main" : rec->info.gpu_container] = ids;
    jobs->push_back(std::move(job));
  }
  if (!ledger_.state().FindReservation(key)) {  // every member committed: the plan is done
    ledger_.DropPlan(key);
    stats_.gangs_bound++;
  }
  io_.Submit([this, key, jobs] {
    // Commit point first: every member's devices, then every Binding. Without every
    // member's devices nobody is bound: the annotations that did land are removed, the
    // ledger forgets the members' GPUs and the plan is dropped (the scheduler retries).
    Status failed = OkStatus();
    size_t patched = 0;
    for (; patched < jobs->size() && failed.ok(); ++patched) {
      const Job& j = (*jobs)[patched];
      if (!j.devices.empty()) failed = writer_.PatchPodDevices(j.ref, EncodeDeviceAssignment(j.devices));
    }
    if (!failed.ok()) {
      stats_.write_errors++;
      for (size_t i = 0; i + 1 < patched; ++i) {
        if (!(*jobs)[i].devices.empty() && !writer_.PatchPodDevices((*jobs)[i].ref, "").ok()) stats_.write_errors++;
      }
      const std::string why = fmt::format("gang {}: the commit point was not reached ({}); no member was bound and "
                                          "the plan was dropped",
                                          key.str(), failed.message());
      {
        std::unique_lock l(mu_);
        for (const Job& j : *jobs) {
          PodInfo undone = j.pod;
          undone.node_name.clear();
          undone.devices.reset();
          undone.gated = false;
          ledger_.UpsertPod(undone, clock_.Now());
        }
        ledger_.DropPlan(key);
        if (GangRecord* g = ledger_.MutableGang(key)) g->last_no_fit = why;
      }
      for (Job& j : *jobs) j.done(why);
      return;
    }
    std::vector<Status> results;
    for (const Job& j : *jobs) results.push_back(writer_.BindPod(j.ref, j.node));
    {
      std::unique_lock l(mu_);
      for (size_t i = 0; i < jobs->size(); ++i) {
        // Committed either way: a member whose Binding failed keeps its GPUs and is bound
        // on the scheduler's retry (filter pins it, bind completes it).
        PodInfo updated = (*jobs)[i].pod;
        updated.node_name = (*jobs)[i].node;
        if (!(*jobs)[i].devices.empty()) updated.devices = (*jobs)[i].devices;
        updated.gated = false;
        ledger_.UpsertPod(updated, clock_.Now());
      }
    }
    for (size_t i = 0; i < jobs->size(); ++i) {
      if (!results[i].ok()) stats_.write_errors++;
      (*jobs)[i].done(results[i].ok() ? "" : fmt::format("binding {}: {}", (*jobs)[i].ref.Key(), results[i].message()));
    }
  });
}

void Extender::FailBarrier(const GangKey& key, const std::string& why) {
  auto bit = barriers_.find(key);
  std::vector<HeldBind> held;
  if (bit != barriers_.end()) {
    held = std::move(bit->second.held);
    barriers_.erase(bit);
  }
  ledger_.DropPlan(key);
  if (GangRecord* g = ledger_.MutableGang(key)) g->last_no_fit = why;
  // Reply outside the ledger lock's critical work, on the I/O worker.
  auto callbacks = std::make_shared<std::vector<HeldBind>>(std::move(held));
  io_.Submit([callbacks, why] {
    for (HeldBind& h : *callbacks) h.done(why);
  });
}

size_t Extender::HeldBinds() const {
  std::shared_lock lock(mu_);
  size_t n = 0;
  for (const auto& [key, b] : barriers_) n += b.held.size();
  return n;
}

// --- tick: barrier timeouts, plan expiry, admission -------------------------------------------

void Extender::Tick() {
  const MonotonicTime now = clock_.Now();
  std::unique_lock lock(mu_);
  std::vector<GangKey> expired;
  for (const auto& [key, b] : barriers_) {
    if (now >= b.deadline) expired.push_back(key);
  }
  for (const GangKey& key : expired) {
    const GangRecord* g = ledger_.FindGang(key);
    const size_t held = barriers_[key].held.size();
    const int min = g ? EffectiveMin(*g, now).value_or(0) : 0;
    stats_.barrier_timeouts++;
    FailBarrier(key, fmt::format("gang {} timed out at the bind barrier with {} of {} members held; every held "
                                 "bind failed and the plan was dropped",
                                 key.str(), held, min));
  }
  // Plans nobody binds against expire (there is no Unreserve verb).
  std::vector<GangKey> stale;
  for (const auto& [key, g] : ledger_.gangs()) {
    if (g.plan && !barriers_.contains(key) && CommittedMembers(key) == 0 && now - g.planned_at > config_.plan_ttl) {
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
  if (leadership_.IsLeader()) Admit(now);
}

void Extender::Admit(MonotonicTime now) {
  // Queue gated gangs that are complete, in arrival order (FIFO within a priority);
  // forget queued gangs that vanished, got a plan, or lost members.
  std::set<std::string> pools;
  std::vector<const GangRecord*> ready;
  for (const auto& [key, g] : ledger_.gangs()) {
    int gated = 0;
    for (const PodUid& uid : g.members) {
      const PodRecord* rec = ledger_.FindPod(uid);
      if (rec && rec->info.gated) gated++;
    }
    const auto min = EffectiveMin(g, now);
    if (!g.plan && gated > 0 && min && static_cast<int>(g.members.size()) >= *min) ready.push_back(&g);
  }
  std::sort(ready.begin(), ready.end(), [](const GangRecord* a, const GangRecord* b) {
    return std::tie(a->first_seen, a->key) < std::tie(b->first_seen, b->key);
  });
  std::set<GangKey> still;
  for (const GangRecord* g : ready) {
    still.insert(g->key);
    pools.insert(g->pool_selector);
    if (!queued_.contains(g->key)) {
      (void)queue_.Enqueue({.key = g->key, .pool = g->pool_selector, .priority = g->priority, .gang = true}, now);
      queued_.insert(g->key);
    }
  }
  for (auto it = queued_.begin(); it != queued_.end();) {
    if (still.contains(*it)) {
      ++it;
      continue;
    }
    (void)queue_.Remove(*it);
    it = queued_.erase(it);
  }
  for (const std::string& pool : pools) {
    std::optional<GangKey> after;
    while (auto next = queue_.NextToTry(pool, now, after)) {
      GangRecord* g = ledger_.MutableGang(*next);
      if (!g) {
        (void)queue_.Remove(*next);
        queued_.erase(*next);
        break;
      }
      const bool fitted = TryPlan(*g, now).empty();
      (void)queue_.RecordAttempt(*next, fitted, now);
      if (fitted) {
        queued_.erase(*next);  // admitted gangs leave the queue
        LiftGates(*g);
        break;  // one admission per pool per pass
      }
      after = *next;
    }
  }
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
  io_.Submit([this, refs = std::move(refs)] {
    for (const PodRef& ref : refs) {
      if (!writer_.LiftGangGate(ref).ok()) stats_.write_errors++;
    }
  });
}

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
  };
  std::optional<Candidate> best;
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
          }
        }
      } else if (groups.insert("pod:" + uid).second) {
        victims.push_back(v);
      }
    }
    if (!allowed) continue;
    double notice = 0;
    std::set<std::string> jobs_counted;
    for (const PodRecord* v : victims) {
      if (v->holding != Holding::kNone) release.push_back(v->info.uid);
      double n = 0;
      std::string job;
      const double risk = GpuSecondsAtRisk(*v, wall, &n, &job);
      if (job.empty() || jobs_counted.insert(job).second) c.risk += risk;
      if (n > 0 && !job.empty()) c.notice_jobs[job] = fmt::format("{}-{}", args.pod.uid.str(), job);
      notice = std::max(notice, n);
      c.highest_tier = std::min(c.highest_tier, config_.TierOf(v->info.priority));
      if (v->node.str() == node_name || v->info.node_name == node_name) {
        if (!on_node.contains(v->info.uid.str())) {
          on_node.insert(v->info.uid.str());
        }
      } else if (!v->info.node_name.empty()) {
        c.elsewhere.push_back(RefOf(v->info));
      }
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
    c.on_node.assign(on_node.begin(), on_node.end());
    // Rank: victims from the lowest tiers, then least work at risk, then fewest victims.
    auto rank = [](const Candidate& x) { return std::make_tuple(-x.highest_tier, x.risk, x.on_node.size() + x.elsewhere.size()); };
    if (!best || rank(c) < rank(*best)) best = std::move(c);
  }
  if (!best) {
    stats_.preempt_vetoed++;
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
  if (!best->elsewhere.empty()) {
    io_.Submit([this, refs = best->elsewhere, reason = fmt::format("PreemptionByScheduler: {}", args.pod.Key())] {
      for (const PodRef& ref : refs) {
        stats_.evictions++;
        if (!writer_.EvictPod(ref, reason).ok()) stats_.write_errors++;
      }
    });
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
  for (auto& [key, vg] : groups) {
    bool ok = true;
    for (const PodUid& uid : vg.pods) ok = ok && config_.MayPreempt(preemptor.info.priority, ledger_.FindPod(uid)->info.priority);
    if (ok) candidates.push_back(std::move(vg));
  }
  placement::PreemptionRequest req;
  req.preemptor = SpecOf(*g, members);
  req.priority = preemptor.info.priority;
  req.candidates = candidates;
  if (g->plan) req.own_plan = g->key;
  auto result = placement::ChoosePreemption(ledger_.state(), req);
  if (!result.ok() || !result->helps() || result->decision->victims.empty()) {
    if (result.ok() && result->none) g->last_no_fit = "preemption: " + result->none->Message();
    stats_.preempt_vetoed++;
    return r;
  }
  const auto& decision = *result->decision;
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
  std::vector<PodRef> evict;
  for (int v : decision.victims) {
    for (const PodUid& uid : candidates[static_cast<size_t>(v)].pods) {
      const PodRecord* rec = ledger_.FindPod(uid);
      if (!rec) continue;
      if (!reply_node.empty() && rec->node.str() == reply_node) {
        r.victims[reply_node].push_back(uid.str());
      } else {
        evict.push_back(RefOf(rec->info));
      }
    }
  }
  stats_.preempt_accepted++;
  io_.Submit([this, evict, reason = fmt::format("PreemptionByScheduler: gang {}", g->key.str())] {
    for (const PodRef& ref : evict) {
      stats_.evictions++;
      if (!writer_.EvictPod(ref, reason).ok()) stats_.write_errors++;
    }
  });
  return r;
}

// --- introspection -------------------------------------------------------------------------

std::string Extender::Explain(std::string_view ns_name) const {
  const MonotonicTime now = clock_.Now();
  std::shared_lock lock(mu_);
  const PodRecord* rec = ledger_.FindPodByName(ns_name);
  std::string summary;
  {
    std::lock_guard slock(summaries_mu_);
    if (auto it = filter_summaries_.find(std::string(ns_name)); it != filter_summaries_.end()) summary = it->second;
  }
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
      if (p.gated) out += "; the pod still carries the phalanx.io/gang scheduling gate";
      if (g->plan) {
        out += fmt::format("; admitted: planned on {} node(s) in {}", g->plan->quality.nodes_used,
                           g->plan->domain.empty() ? std::string("pool ") + (g->plan->pool.empty() ? "<unlabelled>" : g->plan->pool)
                                                   : g->plan->level_key + "=" + g->plan->domain);
        if (auto it = barriers_.find(g->key); it != barriers_.end()) {
          out += fmt::format("; bind barrier: {} held + {} bound of {} needed, times out in {}",
                             it->second.held.size(), CommittedMembers(g->key), min.value_or(0),
                             Seconds(std::max(Duration::zero(), it->second.deadline - now)));
        }
      } else {
        out += "; not admitted";
        if (const auto* q = queue_.Find(g->key)) {
          const auto ordered = queue_.Ordered(q->gang.pool);
          const auto pos = std::find(ordered.begin(), ordered.end(), q) - ordered.begin();
          out += fmt::format(" (position {} of {} in capacity pool \"{}\"", pos + 1, ordered.size(), q->gang.pool);
          if (auto head = queue_.HoldingHead(q->gang.pool, now); head && *head != g->key) {
            out += fmt::format(", behind {} which holds the head of line", head->str());
          }
          out += ")";
        }
        if (!g->last_no_fit.empty()) out += ": " + g->last_no_fit;
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
  std::shared_lock lock(mu_);
  json::Json out = ledger_.ToJson();
  json::Json barriers = json::Json::array();
  for (const auto& [key, b] : barriers_) barriers.push_back({{"gang", key.str()}, {"held", b.held.size()}});
  out["barriers"] = std::move(barriers);
  out["queue"] = queue_.size();
  return out;
}

}  // namespace phalanx::extender
