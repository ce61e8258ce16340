// Heads and backfill (docs/algorithms.md §8.2): the gang a pool's waiting line is held for
// (its *head*), when it is expected to start (a node-level replay of the running gangs'
// expected ends), and which later gangs may start before it without delaying it:
//   (a) they end before its expected start, (b) they fit in the GPUs it will not need
//   then, (c) they checkpoint and their tier allows preemptible backfill (the head takes
//   them back when it is ready: TierPreemption::ChooseBackfillReclaim).
// Also re-forecasts running gangs that outlived their expected end. Internal to
// core/scheduling; the Engine calls it during a pass (engine_pass.cc).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/scheduling/engine/state.h"

namespace phalanx::scheduling {

struct PassContext;

// A head's reservation plus what backfill (b) checks against: the pool's free GPUs per
// node at the expected start, and how many of the head's members they hold.
struct HeadPlan {
  HeadReservation reservation;
  int per_member = 1;
  std::vector<int> free_at_start;  // by NodeIndex; -1 = not in the head's pool
  int capacity_at_start = 0;
  bool awaiting = false;  // a preemptor waiting for its victims' checkpoints
  // True (and the GPUs counted as taken) if the head still fits at its start with
  // `admission`'s GPUs held.
  bool TakeIfStillFits(const Admission& admission, const placement::ClusterState& state);
};

class Backfill {
 public:
  explicit Backfill(EngineState& state) : s_(&state) {}

  // The head `w` would be, if its tier reserves for it and it waited long enough: in its
  // own pool, or (any pool) the one where it is expected to start first; nullopt if those
  // have a head already or its start cannot be predicted (the GPUs it needs are held by
  // work without an expected end: the shape is remembered for the pass in ctx.unreachable).
  std::optional<HeadPlan> HeadFor(const WaitingGang& w, PassContext& ctx) const;
  // `w`'s expected start in `pool`: replay the pool's running gangs ending in expected-end
  // order onto the nodes' free GPUs until its members fit (whole members per node).
  HeadPlan PlanHead(const WaitingGang& w, const std::string& pool, PassContext& ctx) const;
  // A preemptor waiting for its victims' checkpoints holds their pool's head; nothing
  // preemptible may backfill there (it would only be evicted again when the victims stop).
  HeadPlan AwaitingHead(const WaitingGang& w, PassContext& ctx) const;
  // Before the walk: each preemptor still waiting for its victims (or whose victims are
  // gone, so it starts when walked) holds their pool from the pass's start, the first in
  // order per pool. Held only from its own step of the walk, the GPUs its victims freed went
  // to any gang walked before it (an older gang of its tier that did not preempt).
  void HoldAwaitedPools(PassContext& ctx) const;
  // How `admission` of `g` may start against the head of the pool it landed in (kFits
  // when that pool has no head or `g` is it); nullopt: it would delay the head.
  std::optional<AdmitKind> KindOf(const GangRequest& g, const Admission& admission,
                                  PassContext& ctx) const;
  // Running gangs past their expected end get a new one: a hint that proved short is not
  // trusted to end "now" pass after pass.
  void ReforecastOverdue(double now);

  // The heads of the last pass (debug state, explain).
  void Remember(PassContext& ctx);
  std::vector<HeadReservation> Heads() const;

 private:
  EngineState* s_;  // the Engine's
  std::map<std::string, HeadReservation> heads_;  // by pool
};

}  // namespace phalanx::scheduling
