// The bind verb: single pods bound at once (write lane kBind); gang members held at the permit
// barrier until min-members are there, then committed (devices annotated) and bound, each
// write of the gang in parallel on the write pool (lane kBulk).
#include "extender/extender.h"

#include <algorithm>
#include <mutex>

#include <fmt/format.h>

#include "core/placement/node_score.h"
#include "extender/mig/mig_filter.h"
#include "extender/extender_internal.h"

namespace phalanx::extender {

using namespace internal;  // NOLINT: this component's own helpers
using placement::GpuMask;

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
  // kube-scheduler stops waiting for this bind then: no write on its behalf starts later.
  const WriteClock::time_point deadline = WriteClock::now() + config_.http_timeout;
  if (!rec) {
    // Not a pod with a managed resource we have seen: bind it as asked.
    lock.unlock();
    io_.Submit([this, ref, node = args.node, deadline, done = std::move(done)] {
      ScopedWriteDeadline bounded(deadline);
      Status st = writer_.BindPod(ref, node);
      if (!st.ok()) stats_.write_errors++;
      done(st.ok() ? "" : std::string(st.message()));
    }, WriteLane::kBind);
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
      // Its team queue's quota, re-checked at the commit point (filter's answer may be stale).
      if (std::string why = MigQuotaRefusalAt(pod, node); !why.empty()) {
        done(fmt::format("pod {}: {}", pod.Key(), why));
        return;
      }
      auto chosen = AssumeMigForBind(ledger_, pod, node);
      if (!chosen.ok()) {
        done(fmt::format("pod {} no longer fits on node {}: {}", pod.Key(), args.node, chosen.status().message()));
        return;
      }
      RecordUncountedMig(pod, node);
      mig_ids = std::move(*chosen);
    }
    DeviceAssignment devices = AssignGpusToContainers(pod, ledger_.DeviceIds(node, mask));
    if (!mig_ids.empty()) {
      auto& list = devices[pod.mig_container.empty() ? "main" : pod.mig_container];
      list.insert(list.end(), mig_ids.begin(), mig_ids.end());
    }
    lock.unlock();
    io_.Submit([this, ref, pod, node, devices, deadline, done = std::move(done)] {
      ScopedWriteDeadline bounded(deadline);
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
    }, WriteLane::kBind);
    return;
  }
  if (IsCommittedUnbound(*rec) && rec->node == node) {
    // Past the commit point already (an earlier Binding failed): just bind it.
    lock.unlock();
    io_.Submit([this, ref, node = args.node, deadline, done = std::move(done)] {
      ScopedWriteDeadline bounded(deadline);
      Status st = writer_.BindPod(ref, node);
      if (!st.ok()) stats_.write_errors++;
      done(st.ok() ? "" : fmt::format("binding {} to {}: {}", ref.Key(), node, st.message()));
    }, WriteLane::kBind);
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
  b.held.push_back({pod.uid, *ordinal, std::move(done), deadline});
  const int min = EffectiveMin(*g, now).value_or(static_cast<int>(g->plan->members.size()));
  if (static_cast<int>(b.held.size()) + CommittedMembers(key) >= min) ReleaseBarrier(key);
}

void Extender::ReleaseBarrier(const GangKey& key) {
  auto bit = barriers_.find(key);
  if (bit == barriers_.end()) return;
  std::vector<HeldBind> held = std::move(bit->second.held);
  barriers_.erase(bit);
  auto commit = std::make_shared<GangCommit>();
  commit->key = key;
  // The commit point must be reached while the first held bind is still awaited.
  std::optional<WriteClock::time_point> deadline;
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
    GangCommit::Member m{RefOf(rec->info), rec->info, rec->node.str(), {}, std::move(h.done)};
    m.devices = AssignGpusToContainers(rec->info, ledger_.DeviceIds(rec->node, rec->gpus));
    commit->members.push_back(std::move(m));
    deadline = deadline ? std::min(*deadline, h.deadline) : h.deadline;
  }
  commit->patched.assign(commit->members.size(), false);
  if (!ledger_.state().FindReservation(key)) {  // every member committed: the plan is done
    ledger_.DropPlan(key);
    stats_.gangs_bound++;
  }
  // Commit point first: every member's devices, written in parallel; only when all landed is
  // any Binding sent. Without every member's devices nobody is bound (FailCommit).
  std::vector<WritePool::Task> patches;
  for (size_t i = 0; i < commit->members.size(); ++i) {
    patches.push_back([this, commit, i, deadline] {
      const GangCommit::Member& m = commit->members[i];
      if (m.devices.empty() || commit->failing.load()) return;  // nothing to write, or lost already
      ScopedWriteDeadline bounded(deadline);
      Status st = writer_.PatchPodDevices(m.ref, EncodeDeviceAssignment(m.devices));
      if (st.ok()) {
        commit->patched[i] = true;  // element i is this task's alone
        return;
      }
      std::lock_guard l(commit->mu);
      if (!commit->failing.exchange(true)) commit->failure = std::move(st);
    });
  }
  io_.FanOut(std::move(patches), [this, commit] {
    if (commit->failing.load()) {
      FailCommit(commit);
    } else {
      BindCommitted(commit);
    }
  });
}

void Extender::FailCommit(const std::shared_ptr<GangCommit>& commit) {
  // The annotations that did land are removed, the ledger forgets the members' GPUs and the
  // plan is dropped (the scheduler retries); every held bind fails after the undo.
  stats_.write_errors++;
  std::vector<WritePool::Task> undo;
  for (size_t i = 0; i < commit->members.size(); ++i) {
    if (!commit->patched[i]) continue;
    undo.push_back([this, commit, i] {
      if (!writer_.PatchPodDevices(commit->members[i].ref, "").ok()) stats_.write_errors++;
    });
  }
  io_.FanOut(std::move(undo), [this, commit] {
    const std::string why = fmt::format("gang {}: the commit point was not reached ({}); no member was bound and "
                                        "the plan was dropped",
                                        commit->key.str(), commit->failure.message());
    {
      std::unique_lock l(mu_);
      for (const GangCommit::Member& m : commit->members) {
        PodInfo undone = m.pod;
        undone.node_name.clear();
        undone.devices.reset();
        undone.gated = false;
        ledger_.UpsertPod(undone, clock_.Now());
      }
      ledger_.DropPlan(commit->key);
      if (GangRecord* g = ledger_.MutableGang(commit->key)) g->last_no_fit = why;
    }
    for (GangCommit::Member& m : commit->members) m.done(why);
  });
}

void Extender::BindCommitted(const std::shared_ptr<GangCommit>& commit) {
  // Past the commit point: every Binding in parallel, each held bind answered as its own lands.
  // No deadline: a committed member must be bound; one whose Binding fails keeps its GPUs and
  // is bound on the scheduler's retry (filter pins it, bind completes it).
  std::vector<WritePool::Task> binds;
  for (size_t i = 0; i < commit->members.size(); ++i) {
    binds.push_back([this, commit, i] {
      GangCommit::Member& m = commit->members[i];
      Status st = writer_.BindPod(m.ref, m.node);
      {
        std::unique_lock l(mu_);
        PodInfo updated = m.pod;
        updated.node_name = m.node;
        if (!m.devices.empty()) updated.devices = m.devices;
        updated.gated = false;
        ledger_.UpsertPod(updated, clock_.Now());
      }
      if (!st.ok()) stats_.write_errors++;
      m.done(st.ok() ? "" : fmt::format("binding {}: {}", m.ref.Key(), st.message()));
    });
  }
  io_.FanOut(std::move(binds), [] {});
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
  // Reply outside the ledger lock's critical work, on the write pool.
  auto callbacks = std::make_shared<std::vector<HeldBind>>(std::move(held));
  io_.Submit([callbacks, why] {
    for (HeldBind& h : *callbacks) h.done(why);
  }, WriteLane::kBind);
}

size_t Extender::HeldBinds() const {
  std::shared_lock lock(mu_);
  size_t n = 0;
  for (const auto& [key, b] : barriers_) n += b.held.size();
  return n;
}

}  // namespace phalanx::extender
