// Starting jobs (simulator.h, "for policies"): whole gangs, members one by one, GPU
// shares and MIG devices; the bookkeeping of a job that starts running (topology
// quality, partial gangs) and the release of an attempt's pods.
#include <algorithm>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "core/placement/device_set_cache.h"
#include "sim/cluster/cluster_spec.h"
#include "sim/engine/job_gpus.h"
#include "sim/engine/simulator.h"

namespace phalanx::sim {

Status Simulator::StartJob(JobId id, std::span<const placement::MemberPlacement> members) {
  const Job& j = job(id);
  JobRun& r = runs_[static_cast<size_t>(id)];
  if (r.phase != JobPhase::kQueued || r.bound != 0)
    return FailedPreconditionError(fmt::format("job {} is not queued with nothing bound", j.name));
  if (static_cast<int>(members.size()) != j.replicas)
    return InvalidArgumentError(fmt::format("job {} has {} members, got {} placements", j.name, j.replicas, members.size()));
  for (size_t m = 0; m < members.size(); ++m) {
    PodUid pod = MemberPod(id, static_cast<int>(m));
    Status s = state_.Allocate(pod, members[m].node, members[m].gpus, j.priority);
    if (!s.ok()) {
      for (size_t k = 0; k < m; ++k) (void)state_.Release(r.pods[k]);
      std::fill(r.pods.begin(), r.pods.end(), PodUid());
      return s;
    }
    r.pods[m] = std::move(pod);
    r.bound_at[m] = now_;
  }
  r.bound = j.replicas;
  alloc_gpus_ += JobGpus(j);
  BecomeRunning(id);
  return OkStatus();
}

Status Simulator::StartShare(JobId id, const NodeName& node, int gpu) {
  const Job& j = job(id);
  JobRun& r = runs_[static_cast<size_t>(id)];
  if (r.phase != JobPhase::kQueued || !j.IsShare())
    return FailedPreconditionError(fmt::format("job {} is not a queued GPU share", j.name));
  PodUid pod = MemberPod(id, 0);
  PHX_RETURN_IF_ERROR(state_.AllocateShare(pod, node, gpu, j.milli, j.priority));
  r.pods[0] = std::move(pod);
  r.bound_at[0] = now_;
  r.bound = 1;
  alloc_gpus_ += JobGpus(j);
  BecomeRunning(id);
  return OkStatus();
}

Status Simulator::BindMember(JobId id, int member, const placement::MemberPlacement& p) {
  const Job& j = job(id);
  JobRun& r = runs_[static_cast<size_t>(id)];
  if (r.phase != JobPhase::kQueued) return FailedPreconditionError(fmt::format("job {} is not queued", j.name));
  if (member < 0 || member >= j.replicas || !r.pods[static_cast<size_t>(member)].empty())
    return FailedPreconditionError(fmt::format("job {} member {} is already bound or out of range", j.name, member));
  PodUid pod = MemberPod(id, member);
  PHX_RETURN_IF_ERROR(state_.Allocate(pod, p.node, p.gpus, j.priority));
  ++counted_events_;  // a bind
  r.pods[static_cast<size_t>(member)] = std::move(pod);
  r.bound_at[static_cast<size_t>(member)] = now_;
  ++r.bound;
  alloc_gpus_ += j.gpus_per_replica;
  if (r.bound < j.replicas) return OkStatus();
  BecomeRunning(id);
  return OkStatus();
}

Status Simulator::StartMig(JobId id, const MigPlacement& p) {
  const Job& j = job(id);
  JobRun& r = runs_[static_cast<size_t>(id)];
  if (r.phase != JobPhase::kQueued || !j.IsMig())
    return FailedPreconditionError(fmt::format("job {} is not a queued MIG job", j.name));
  const placement::MigNode* node = mig_.Find(p.node);
  if (!node) return NotFoundError(fmt::format("node {} has no MIG devices", p.node.str()));
  if (static_cast<int>(p.devices.size()) != j.gpus_per_replica)
    return InvalidArgumentError(fmt::format("job {} wants {} MIG devices, got {}", j.name, j.gpus_per_replica, p.devices.size()));
  for (int d : p.devices) {
    if (d < 0 || static_cast<size_t>(d) >= node->slices().size() || node->slices()[static_cast<size_t>(d)].profile != j.mig_profile)
      return InvalidArgumentError(fmt::format("job {}: device {} on {} is not a {} device", j.name, d, p.node.str(), j.mig_profile));
  }
  PodUid pod = MemberPod(id, 0);
  PHX_RETURN_IF_ERROR(mig_.Allocate(pod, p.node, p.devices));
  for (int d : p.devices) mig_used_ += node->slices()[static_cast<size_t>(d)].compute_slices;
  mig_peak_ = std::max(mig_peak_, mig_used_);
  r.pods[0] = std::move(pod);
  r.bound_at[0] = now_;
  r.bound = 1;
  BecomeRunning(id);
  return OkStatus();
}

void Simulator::BecomeRunning(JobId id) {
  JobRun& r = runs_[static_cast<size_t>(id)];
  const Job& j = job(id);
  ++counted_events_;
  --queued_;
  if (!j.IsMig()) {
    auto w = waiting_by_pool_.find(j.pool.value_or(""));
    if (w != waiting_by_pool_.end() && --w->second == 0) waiting_by_pool_.erase(w);
  }
  r.phase = JobPhase::kRunning;
  r.queue_time += now_ - r.queued_since;
  r.attempt_start = now_;
  if (r.first_start < 0) r.first_start = now_;
  // Members bound earlier than now held their GPUs idle while siblings waited.
  bool waited = false;
  for (size_t m = 0; m < r.pods.size(); ++m)
    if (r.bound_at[m] < now_) {
      idle_held_gpu_seconds_ += (now_ - r.bound_at[m]) * j.gpus_per_replica;
      waited = true;
    }
  if (waited && !r.ever_partial) {
    r.ever_partial = true;
    ++partial_gangs_;
  }
  running_.insert(id);
  r.nodes.clear();
  for (const PodUid& pod : r.pods) {
    if (const placement::MigHolding* h = mig_.FindPod(pod)) {
      r.nodes.push_back(h->node);
    } else {
      const placement::PodAllocation* a = state_.FindPod(pod);
      r.nodes.push_back(a ? state_.node(a->node).spec.name : NodeName());
    }
  }
  busy_gpus_ += JobGpus(j);
  queues_.AddRunning(QueueOf(id), QueueGpus(j));
  RecordTopology(id);
  events_.Push(now_ + r.remaining, EventType::kFinish, id, r.token);
  ++real_pending_;
}

void Simulator::RecordTopology(JobId id) {
  const Job& j = job(id);
  const JobRun& r = runs_[static_cast<size_t>(id)];
  std::vector<placement::NodeIndex> nodes;
  for (const PodUid& pod : r.pods) {
    const placement::PodAllocation* a = state_.FindPod(pod);
    if (!a) continue;
    nodes.push_back(a->node);
    if (j.gpus_per_replica < 2 || j.IsShare()) continue;
    const placement::NodeState& ns = state_.node(a->node);
    if (!ns.spec.bandwidth) continue;
    const uint64_t key = (reinterpret_cast<uintptr_t>(ns.spec.bandwidth.get()) * 1315423911ULL) ^ a->gpus;
    auto it = ratio_cache_.find(key);
    if (it == ratio_cache_.end()) {
      const std::vector<int> gpus = placement::GpuList(a->gpus);
      const double ring = placement::RingBottleneck(*ns.spec.bandwidth, gpus);
      const double ratio = placement::TopologyRatio(ns.spec.bandwidth, ns.spec.healthy, static_cast<int>(gpus.size()), ring);
      it = ratio_cache_.emplace(key, ratio).first;
    }
    topo_ratio_sum_ += it->second;
    ++topo_members_;
  }
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  if (nodes.size() > 1) {
    ++multi_node_started_;
    const std::string& rack = state_.node(nodes.front()).spec.domains[kLevelRack];
    bool one_rack = !rack.empty();
    for (placement::NodeIndex n : nodes) one_rack = one_rack && state_.node(n).spec.domains[kLevelRack] == rack;
    if (one_rack) ++multi_node_one_rack_;
  }
}

void Simulator::ReleasePods(JobId id) {
  AccountHeld(id, now_, runs_[static_cast<size_t>(id)].held_by_model);
  for (const PodUid& pod : runs_[static_cast<size_t>(id)].pods) {
    if (pod.empty()) continue;
    if (const placement::MigHolding* h = mig_.FindPod(pod)) {
      const placement::MigNode* node = mig_.Find(h->node);
      for (int d : h->devices) mig_used_ -= node->slices()[static_cast<size_t>(d)].compute_slices;
      (void)mig_.Release(pod);
      continue;
    }
    (void)state_.Release(pod);
  }
}

void Simulator::ScheduleMig() {
  // A (profile, count, pool, queue) that found no room stays without room for the rest of
  // the pass: MIG capacity, and a team queue's room, only shrink while a pass places work.
  std::set<std::tuple<std::string, int, std::string, int>> failed;
  for (auto it = mig_queue_.begin(); it != mig_queue_.end();) {
    const JobId id = std::get<2>(*it);
    const Job& j = job(id);
    auto shape = std::make_tuple(j.mig_profile, j.gpus_per_replica, j.pool.value_or("*"), QueueOf(id));  // -1: no queues
    if (failed.contains(shape)) {
      ++it;
      continue;
    }
    std::optional<MigPlacement> p = policy_.PlaceMig(*this, id);
    if (p && StartMig(id, *p).ok()) {
      it = mig_queue_.erase(it);
      continue;
    }
    failed.insert(std::move(shape));
    ++it;
  }
}

void Simulator::NoteBackfill(JobId id) {
  JobRun& r = runs_[static_cast<size_t>(id)];
  if (r.phase == JobPhase::kRunning) r.backfilled = true;
}

}  // namespace phalanx::sim
