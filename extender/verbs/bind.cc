// The bind verb (bind_verb.h): single pods bound at once (write lane kBind); gang members held at
// the permit barrier until min-members are there, then committed (devices annotated) and bound,
// each write of the gang in parallel on the write pool (lane kBulk).
#include "extender/verbs/bind_verb.h"

#include <algorithm>
#include <mutex>

#include <fmt/format.h>

#include "core/placement/node_score.h"
#include "extender/extender_internal.h"
#include "extender/mig/mig_filter.h"

namespace phalanx::extender {

using namespace internal;  // NOLINT: this component's own helpers
using placement::GpuMask;

// --- bind ----------------------------------------------------------------------------------

int BindVerb::CommittedMembers(const GangKey& key) const {
  const GangRecord* g = h_.ledger.FindGang(key);
  if (!g || !g->plan) return 0;
  const auto* res = h_.ledger.state().FindReservation(key);
  if (!res) return static_cast<int>(g->plan->members.size());
  return static_cast<int>(std::count(res->committed.begin(), res->committed.end(), true));
}

void BindVerb::Bind(const BindArgs& args, BindCallback done) {
  if (!h_.leadership.IsLeader()) {
    done("this extender is not the active one (Lease phalanx-extender is held by another replica); retry");
    return;
  }
  const MonotonicTime now = h_.clock.Now();
  std::unique_lock lock(h_.mu);
  const PodRecord* rec = args.pod_uid.empty() ? nullptr : h_.ledger.FindPod(PodUid(args.pod_uid));
  if (!rec) rec = h_.ledger.FindPodByName(args.pod_namespace + "/" + args.pod_name);
  if (!rec) {
    std::optional<PodInfo> seen = h_.memory.SeenPod(PodUid(args.pod_uid));
    // A bind to a node the ledger does not know fails before the pod is recorded, so bad
    // input leaves the ledger unchanged.
    if (seen && seen->gpus > 0 && !h_.ledger.state().FindNode(NodeName(args.node))) {
      done(fmt::format("node {} is not in the extender's ledger", args.node));
      return;
    }
    if (seen) {
      h_.ledger.UpsertPod(*seen, now);
      rec = h_.ledger.FindPod(seen->uid);
    }
  }
  const PodRef ref{args.pod_namespace, args.pod_name, args.pod_uid};
  // kube-scheduler stops waiting for this bind then: no write on its behalf starts later.
  const WriteClock::time_point deadline = WriteClock::now() + h_.config.http_timeout;
  if (!rec) {
    // Not a pod with a managed resource we have seen: bind it as asked.
    lock.unlock();
    w_.io.Submit([this, ref, node = args.node, deadline, done = std::move(done)] {
      ScopedWriteDeadline bounded(deadline);
      Status st = w_.writer.BindPod(ref, node);
      if (!st.ok()) h_.stats.write_errors++;
      done(st.ok() ? "" : std::string(st.message()));
    }, WriteLane::kBind);
    return;
  }
  const PodInfo pod = rec->info;
  const NodeName node(args.node);
  if (!pod.IsGangMember() || pod.gpus <= 0) {
    GpuMask mask = 0;
    if (pod.gpus > 0) {
      auto idx = h_.ledger.state().FindNode(node);
      if (!idx) {
        done(fmt::format("node {} is not in the extender's ledger", args.node));
        return;
      }
      if (rec->holding != Holding::kNone && rec->node == node) {
        mask = rec->gpus;  // already charged there (bind retried)
      } else {
        auto score = placement::ScoreNode(h_.ledger.state(), *idx, RequestOf(pod), h_.config.weights);
        if (!score.ok()) {
          done(fmt::format("pod {} no longer fits on node {}: {}", pod.Key(), args.node, score.status().message()));
          return;
        }
        mask = score->gpus;
        if (Status st = h_.ledger.AssumePod(pod.uid, node, mask); !st.ok()) {
          done(fmt::format("pod {}: {}", pod.Key(), st.message()));
          return;
        }
      }
    }
    std::vector<std::string> mig_ids;
    if (RequestsMig(pod)) {
      // Its team queue's quota, re-checked at the commit point (filter's answer may be stale).
      if (std::string why = admission_.MigQuotaRefusalAt(pod, node); !why.empty()) {
        done(fmt::format("pod {}: {}", pod.Key(), why));
        return;
      }
      auto chosen = AssumeMigForBind(h_.ledger, pod, node);
      if (!chosen.ok()) {
        done(fmt::format("pod {} no longer fits on node {}: {}", pod.Key(), args.node, chosen.status().message()));
        return;
      }
      admission_.RecordUncountedMig(pod, node);
      mig_ids = std::move(*chosen);
    }
    DeviceAssignment devices = AssignGpusToContainers(pod, h_.ledger.DeviceIds(node, mask));
    if (!mig_ids.empty()) {
      auto& list = devices[pod.mig_container.empty() ? "main" : pod.mig_container];
      list.insert(list.end(), mig_ids.begin(), mig_ids.end());
    }
    lock.unlock();
    w_.io.Submit([this, ref, pod, node, devices, deadline, done = std::move(done)] {
      ScopedWriteDeadline bounded(deadline);
      Status st = OkStatus();
      if (!devices.empty()) st = w_.writer.PatchPodDevices(ref, EncodeDeviceAssignment(devices));
      if (st.ok()) st = w_.writer.BindPod(ref, node.str());
      {
        std::unique_lock l(h_.mu);
        PodInfo updated = pod;
        if (st.ok()) {
          updated.node_name = node.str();
          if (!devices.empty()) updated.devices = devices;
        } else {
          updated.node_name.clear();  // forget the assumption
        }
        h_.ledger.UpsertPod(updated, h_.clock.Now());
      }
      if (!st.ok()) h_.stats.write_errors++;
      done(st.ok() ? "" : fmt::format("binding {} to {}: {}", ref.Key(), node.str(), st.message()));
    }, WriteLane::kBind);
    return;
  }
  if (IsCommittedUnbound(*rec) && rec->node == node) {
    // Past the commit point already (an earlier Binding failed): just bind it.
    lock.unlock();
    w_.io.Submit([this, ref, node = args.node, deadline, done = std::move(done)] {
      ScopedWriteDeadline bounded(deadline);
      Status st = w_.writer.BindPod(ref, node);
      if (!st.ok()) h_.stats.write_errors++;
      done(st.ok() ? "" : fmt::format("binding {} to {}: {}", ref.Key(), node, st.message()));
    }, WriteLane::kBind);
    return;
  }
  // Gang member: the permit barrier.
  const GangKey key = pod.Gang();
  GangRecord* g = h_.ledger.MutableGang(key);
  if (!g || !g->plan) {
    done(fmt::format("gang {} has no admitted plan (it timed out or was dropped); the scheduler will retry",
                     key.str()));
    return;
  }
  auto ordinal = h_.ledger.AssignMember(key, pod.uid, [&](const NodeName& n) { return n == node; });
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
    const auto gang_timeout =
        g->timeout_seconds > 0 ? std::chrono::seconds(g->timeout_seconds) : h_.config.gang_timeout;
    b.deadline = now + h_.config.BarrierTimeout(gang_timeout);
  }
  b.held.push_back({pod.uid, *ordinal, std::move(done), deadline});
  const int min = g->MinMembers(now).value_or(static_cast<int>(g->plan->members.size()));
  if (static_cast<int>(b.held.size()) + CommittedMembers(key) >= min) ReleaseBarrier(key);
}

void BindVerb::ReleaseBarrier(const GangKey& key) {
  auto bit = barriers_.find(key);
  if (bit == barriers_.end()) return;
  std::vector<HeldBind> held = std::move(bit->second.held);
  barriers_.erase(bit);
  auto commit = std::make_shared<GangCommit>();
  commit->key = key;
  // The commit point must be reached while the first held bind is still awaited.
  std::optional<WriteClock::time_point> deadline;
  for (HeldBind& h : held) {
    const PodRecord* rec = h_.ledger.FindPod(h.uid);
    if (!rec) {
      h.done(fmt::format("pod {} was deleted while its gang waited", h.uid.str()));
      continue;
    }
    Status st = h_.ledger.CommitMember(key, h.ordinal, h.uid);
    if (!st.ok()) {
      h.done(fmt::format("gang {}: {}", key.str(), st.message()));
      continue;
    }
    rec = h_.ledger.FindPod(h.uid);
    GangCommit::Member m{RefOf(rec->info), rec->info, rec->node.str(), {}, std::move(h.done)};
    m.devices = AssignGpusToContainers(rec->info, h_.ledger.DeviceIds(rec->node, rec->gpus));
    commit->members.push_back(std::move(m));
    deadline = deadline ? std::min(*deadline, h.deadline) : h.deadline;
  }
  commit->patched.assign(commit->members.size(), false);
  if (!h_.ledger.state().FindReservation(key)) {  // every member committed: the plan is done
    h_.ledger.DropPlan(key);
    h_.stats.gangs_bound++;
  }
  // Commit point first: every member's devices, written in parallel; only when all landed is
  // any Binding sent. Without every member's devices nobody is bound (FailCommit).
  std::vector<WritePool::Task> patches;
  for (size_t i = 0; i < commit->members.size(); ++i) {
    patches.push_back([this, commit, i, deadline] {
      const GangCommit::Member& m = commit->members[i];
      if (m.devices.empty() || commit->failing.load()) return;  // nothing to write, or lost already
      ScopedWriteDeadline bounded(deadline);
      Status st = w_.writer.PatchPodDevices(m.ref, EncodeDeviceAssignment(m.devices));
      if (st.ok()) {
        commit->patched[i] = true;  // element i is this task's alone
        return;
      }
      std::lock_guard l(commit->mu);
      if (!commit->failing.exchange(true)) commit->failure = std::move(st);
    });
  }
  w_.io.FanOut(std::move(patches), [this, commit] {
    if (commit->failing.load()) {
      FailCommit(commit);
    } else {
      BindCommitted(commit);
    }
  });
}

void BindVerb::FailCommit(const std::shared_ptr<GangCommit>& commit) {
  // The annotations that did land are removed, the ledger forgets the members' GPUs and the
  // plan is dropped (the scheduler retries); every held bind fails after the undo.
  h_.stats.write_errors++;
  std::vector<WritePool::Task> undo;
  for (size_t i = 0; i < commit->members.size(); ++i) {
    if (!commit->patched[i]) continue;
    undo.push_back([this, commit, i] {
      if (!w_.writer.PatchPodDevices(commit->members[i].ref, "").ok()) h_.stats.write_errors++;
    });
  }
  w_.io.FanOut(std::move(undo), [this, commit] {
    const std::string why = fmt::format("gang {}: the commit point was not reached ({}); no member was bound and "
                                        "the plan was dropped",
                                        commit->key.str(), commit->failure.message());
    {
      std::unique_lock l(h_.mu);
      for (const GangCommit::Member& m : commit->members) {
        PodInfo undone = m.pod;
        undone.node_name.clear();
        undone.devices.reset();
        undone.gated = false;
        h_.ledger.UpsertPod(undone, h_.clock.Now());
      }
      h_.ledger.DropPlan(commit->key);
      if (GangRecord* g = h_.ledger.MutableGang(commit->key)) g->last_no_fit = why;
    }
    for (GangCommit::Member& m : commit->members) m.done(why);
  });
}

void BindVerb::BindCommitted(const std::shared_ptr<GangCommit>& commit) {
  // Past the commit point: every Binding in parallel, each held bind answered as its own lands.
  // No deadline: a committed member must be bound; one whose Binding fails keeps its GPUs and
  // is bound on the scheduler's retry (filter pins it, bind completes it).
  std::vector<WritePool::Task> binds;
  for (size_t i = 0; i < commit->members.size(); ++i) {
    binds.push_back([this, commit, i] {
      GangCommit::Member& m = commit->members[i];
      Status st = w_.writer.BindPod(m.ref, m.node);
      {
        std::unique_lock l(h_.mu);
        PodInfo updated = m.pod;
        updated.node_name = m.node;
        if (!m.devices.empty()) updated.devices = m.devices;
        updated.gated = false;
        h_.ledger.UpsertPod(updated, h_.clock.Now());
      }
      if (!st.ok()) h_.stats.write_errors++;
      m.done(st.ok() ? "" : fmt::format("binding {}: {}", m.ref.Key(), st.message()));
    });
  }
  w_.io.FanOut(std::move(binds), [] {});
}

void BindVerb::FailBarrier(const GangKey& key, const std::string& why) {
  auto bit = barriers_.find(key);
  std::vector<HeldBind> held;
  if (bit != barriers_.end()) {
    held = std::move(bit->second.held);
    barriers_.erase(bit);
  }
  h_.ledger.DropPlan(key);
  if (GangRecord* g = h_.ledger.MutableGang(key)) g->last_no_fit = why;
  // Reply outside the ledger lock's critical work, on the write pool.
  auto callbacks = std::make_shared<std::vector<HeldBind>>(std::move(held));
  w_.io.Submit([callbacks, why] {
    for (HeldBind& h : *callbacks) h.done(why);
  }, WriteLane::kBind);
}

bool BindVerb::AnyBarrierExpired(MonotonicTime now) const {
  for (const auto& [key, b] : barriers_) {
    if (now >= b.deadline) return true;
  }
  return false;
}

void BindVerb::ExpireBarriers(MonotonicTime now) {
  std::vector<GangKey> expired;
  for (const auto& [key, b] : barriers_) {
    if (now >= b.deadline) expired.push_back(key);
  }
  for (const GangKey& key : expired) {
    const GangRecord* g = h_.ledger.FindGang(key);
    const size_t held = barriers_[key].held.size();
    const int min = g ? g->MinMembers(now).value_or(0) : 0;
    h_.stats.barrier_timeouts++;
    FailBarrier(key, fmt::format("gang {} timed out at the bind barrier with {} of {} members held; every held "
                                 "bind failed and the plan was dropped",
                                 key.str(), held, min));
  }
}

std::optional<std::pair<size_t, MonotonicTime>> BindVerb::BarrierOf(const GangKey& key) const {
  auto it = barriers_.find(key);
  if (it == barriers_.end()) return std::nullopt;
  return std::make_pair(it->second.held.size(), it->second.deadline);
}

json::Json BindVerb::BarriersJson() const {
  json::Json barriers = json::Json::array();
  for (const auto& [key, b] : barriers_) barriers.push_back({{"gang", key.str()}, {"held", b.held.size()}});
  return barriers;
}

size_t BindVerb::HeldBinds() const {
  std::shared_lock lock(h_.mu);
  size_t n = 0;
  for (const auto& [key, b] : barriers_) n += b.held.size();
  return n;
}

}  // namespace phalanx::extender
