// The scheduling engine (engine.h): its waiting, running and booked gangs, team queues,
// introspection. The pass is in engine_pass.cc, the parts it delegates to in engine/.
#include "core/scheduling/engine.h"

#include <algorithm>

#include <fmt/format.h>

namespace phalanx::scheduling {

Engine::Engine(EnginePolicy policy, QueueConfig queues)
    : state_(std::make_unique<EngineState>(std::move(policy), std::move(queues))),
      order_(*state_),
      backfill_(*state_),
      preemption_(*state_),
      reclaim_(*state_) {
  if (!state_->policy.Validate().ok()) state_->policy = EnginePolicy::Defaults();
}

Status Engine::SetQueues(QueueConfig queues) {
  PHX_RETURN_IF_ERROR(queues.Validate());
  order_.BeforeQueuesChange();
  state_->ledger = QueueLedger(std::move(queues));
  state_->by_queue.clear();
  for (auto& [seq, e] : state_->entries) e.in_queue.reset();
  reclaim_.Reset();
  for (auto& [key, w] : state_->waiting) {
    w->ledger_pool = -1;  // indexes of the old ledger
    w->team = -1;
  }
  for (auto& [key, r] : state_->running) r.team = -1;
  if (!state_->ledger.enabled()) {
    for (auto& [key, w] : state_->waiting) order_.Reindex(*w);
    return OkStatus();
  }
  for (auto& [key, w] : state_->waiting) {
    w->team = state_->ledger.ResolveIndex(w->req.queue);
    state_->entries[std::get<2>(w->order)].in_queue =
        state_->by_queue[state_->ledger.QueueName(w->team)].emplace(w->order, w.get()).first;
    order_.Reindex(*w);
  }
  for (auto& [key, r] : state_->running) {
    r.team = state_->ledger.ResolveIndex(r.req.queue);
    state_->ledger.Add(key, state_->ledger.QueueName(r.team), r.pool, AmountOf(r.req), r.req.priority, r.started);
  }
  for (const auto& [key, o] : state_->outside) LedgerAddOutside(key, o);
  return OkStatus();
}

Status Engine::BookOutside(const GangKey& key, std::string_view queue, std::string_view pool, Milli amount,
                           int priority, double started) {
  if (key.empty()) return InvalidArgumentError("booking key must not be empty");
  if (amount < 0) return InvalidArgumentError(fmt::format("booking {}: amount must be >= 0", key.str()));
  if (state_->waiting.contains(key) || state_->running.contains(key)) {
    return AlreadyExistsError(
        fmt::format("gang {} is {} in the engine", key.str(), state_->waiting.contains(key) ? "waiting" : "running"));
  }
  OutsideBooking o{std::string(queue), std::string(pool), amount, priority, started};
  auto [it, added] = state_->outside.try_emplace(key, o);
  if (!added) {
    if (it->second == o) return OkStatus();  // unchanged: the ledger (and its caches) stay as they are
    it->second = std::move(o);
  }
  LedgerAddOutside(key, it->second);
  return OkStatus();
}

void Engine::UnbookOutside(const GangKey& key) {
  if (state_->outside.erase(key) == 0) return;
  if (state_->ledger.enabled()) state_->ledger.Remove(key);
}

void Engine::LedgerAddOutside(const GangKey& key, const OutsideBooking& o) {
  if (!state_->ledger.enabled()) return;
  state_->ledger.Add(key, state_->ledger.QueueName(state_->ledger.ResolveIndex(o.queue)), o.pool, o.amount, o.priority,
                     o.started);
}

Status Engine::Enqueue(GangRequest g) {
  if (g.key.empty()) return InvalidArgumentError("gang key must not be empty");
  if (g.members < 1) return InvalidArgumentError(fmt::format("gang {}: members must be >= 1", g.key.str()));
  if (g.gpus_per_member < 1 || g.gpus_per_member > placement::kMaxGpusPerNode) {
    return InvalidArgumentError(
        fmt::format("gang {}: gpus per member must be 1..{}", g.key.str(), placement::kMaxGpusPerNode));
  }
  if (g.milli < 1 || g.milli > placement::kMilliPerGpu) {
    return InvalidArgumentError(fmt::format("gang {}: milli must be 1..{}", g.key.str(), placement::kMilliPerGpu));
  }
  if (g.IsShare() && (g.members != 1 || g.gpus_per_member != 1)) {
    return InvalidArgumentError(fmt::format("gang {}: a GPU share is one member of one GPU", g.key.str()));
  }
  if (state_->outside.contains(g.key)) {
    return AlreadyExistsError(fmt::format("gang {} is booked outside the engine", g.key.str()));
  }
  if (state_->waiting.contains(g.key) || state_->running.contains(g.key)) {
    return AlreadyExistsError(
        fmt::format("gang {} is already {}", g.key.str(), state_->waiting.contains(g.key) ? "waiting" : "running"));
  }
  if (g.job.empty()) g.job = g.key.str();
  const OrderKey order = OrderOf(g, state_->next_seq++);
  const GangKey key = g.key;
  auto w = std::make_unique<WaitingGang>();
  WaitingGang* ptr = w.get();
  EngineState::IndexEntries& entries = state_->entries[std::get<2>(order)];
  if (state_->ledger.enabled()) {
    w->team = state_->ledger.ResolveIndex(g.queue);
    entries.in_queue = state_->by_queue[state_->ledger.QueueName(w->team)].emplace(order, ptr).first;
  }
  state_->by_pool[g.pool].emplace(order, ptr);
  entries.in_order = state_->by_order.emplace(order, ptr).first;
  w->req = std::move(g);
  w->order = order;
  order_.OnQueued(*ptr);
  state_->unseen.push_back(key);
  state_->waiting.emplace(key, std::move(w));
  return OkStatus();
}

Status Engine::Remove(const GangKey& key) {
  auto it = state_->waiting.find(key);
  if (it == state_->waiting.end()) return NotFoundError(fmt::format("gang {} is not waiting", key.str()));
  Forget(key);
  return OkStatus();
}

void Engine::Forget(const GangKey& key) {
  auto it = state_->waiting.find(key);
  if (it == state_->waiting.end()) return;
  WaitingGang& w = *it->second;
  order_.OnForgotten(w);
  if (!w.awaiting.empty()) --state_->awaiting_gangs;
  state_->awaiting_orders.erase(w.order);
  // A pass may still point at it (its cursors walk the indexes): keep it, and its index
  // entries, until the pass ends.
  w.gone = true;
  if (state_->in_pass) {
    state_->gone.push_back(std::move(it->second));
  } else {
    Unindex(w);
  }
  state_->waiting.erase(it);
}

void Engine::Unindex(const WaitingGang& w) {
  auto q = state_->by_pool.find(w.req.pool);
  if (q != state_->by_pool.end()) {
    q->second.erase(w.order);
    if (q->second.empty()) state_->by_pool.erase(q);
  }
  state_->by_order.erase(w.order);
  state_->entries.erase(std::get<2>(w.order));
  if (w.team >= 0) {
    if (auto t = state_->by_queue.find(state_->ledger.QueueName(w.team)); t != state_->by_queue.end()) {
      t->second.erase(w.order);
      if (t->second.empty()) state_->by_queue.erase(t);
    }
  }
}

void Engine::OnFinished(const GangKey& key) {
  auto it = state_->running.find(key);
  if (it == state_->running.end()) return;
  state_->EraseRunning(it);
}

void Engine::OnEnded(const GangKey& key, double now) {
  auto it = state_->running.find(key);
  if (it == state_->running.end()) return;
  const RunningGang& r = it->second;
  // Adopted gangs started before they were seen (after a restart, or bound through
  // kube-scheduler): their run time is unknown, not short. Preempted ones ended early.
  if (!r.evicting && !r.adopted && !r.preempted_elsewhere) {
    const GangRequest& g = r.req;
    state_->calibration.Observe(state_->TierIndex(state_->policy.TierOf(g.priority)), EngineState::Hinted(g),
                                state_->GivenDuration(g), now - r.started);
  }
  state_->EraseRunning(it);
}

void Engine::AdoptRunning(const GangRequest& g, std::string pool, std::vector<PodUid> pods, double started) {
  Forget(g.key);
  OnFinished(g.key);
  GangRequest req = g;
  if (req.job.empty()) req.job = g.key.str();
  Track(std::move(req), std::move(pool), std::move(pods), started, false);
  if (auto it = state_->running.find(g.key); it != state_->running.end()) it->second.adopted = true;
}

void Engine::Track(GangRequest g, std::string pool, std::vector<PodUid> pods, double started, bool reclaimable) {
  UnbookOutside(g.key);  // one ledger entry per key: running here replaces a booking
  RunningGang r;
  r.pool = std::move(pool);
  r.pods = std::move(pods);
  r.started = started;
  r.expected_end = started + state_->ExpectedDuration(g);
  r.reclaimable = reclaimable;
  if (reclaimable) ++state_->reclaimable;
  state_->forecast.Add(g.key, r.pool, r.expected_end, g.IsShare() ? 1 : g.Gpus());
  if (state_->ledger.enabled()) {
    r.team = state_->ledger.ResolveIndex(g.queue);
    state_->ledger.Add(g.key, state_->ledger.QueueName(r.team), r.pool, AmountOf(g), g.priority, started);
  }
  const GangKey key = g.key;
  r.req = std::move(g);
  state_->running.insert_or_assign(key, std::move(r));
}

int Engine::PreemptionsInDay(const std::string& job, double now) const {
  return preemption_.PreemptionsInDay(job, now);
}

std::string Engine::WhyWaiting(const GangKey& key) const {
  auto it = state_->waiting.find(key);
  if (it == state_->waiting.end()) return "";
  const WaitingGang& w = *it->second;
  if (std::optional<std::string> skipped = order_.SkippedReason(w)) return *skipped;
  return w.why;
}

std::vector<HeadReservation> Engine::Heads() const { return backfill_.Heads(); }

PreemptionStanding Engine::StandingOf(const std::string& job, int priority, double started, double now) const {
  return preemption_.StandingOf(job, priority, started, now);
}

std::optional<PreemptionStanding> Engine::VictimStanding(const GangKey& key, double now) const {
  auto it = state_->running.find(key);
  if (it == state_->running.end()) return std::nullopt;
  return preemption_.StandingOf(it->second.req.job, it->second.req.priority, it->second.started, now);
}

void Engine::RecordPreemption(const std::string& job, double now, const std::optional<GangKey>& victim) {
  preemption_.Record(job, now);
  if (!victim) return;
  if (auto it = state_->running.find(*victim); it != state_->running.end()) it->second.preempted_elsewhere = true;
}

double Engine::ExpectedWait(const GangRequest& g, double now, const placement::ClusterState& state) const {
  return preemption_.ExpectedWait(order_, g, now, state);
}

Result<PricedPreemption> Engine::QuotePreemption(const GangRequest& g, double expected_wait,
                                                 std::span<const VictimCandidate> candidates, double now,
                                                 EngineDriver& driver, std::optional<std::set<std::string>> domains,
                                                 std::optional<GangKey> own_plan) const {
  return preemption_.Quote(order_, g, expected_wait, candidates, now, driver, std::move(domains), std::move(own_plan));
}

void Engine::OnEvictionRefused(const GangKey& victim) {
  auto it = state_->running.find(victim);
  if (it == state_->running.end() || !it->second.evicting) return;
  RunningGang& r = it->second;
  ++state_->stats.evictions_refused;
  // Nothing of it stopped: it ends when it was expected to before, and may be chosen again.
  r.evicting = false;
  r.expected_end = r.started + state_->ExpectedDuration(r.req);
  state_->forecast.Add(victim, r.pool, r.expected_end, r.req.IsShare() ? 1 : r.req.Gpus());
  // Nor was it preempted: the attempt counts neither against its daily cap nor its minimum run.
  preemption_.Unrecord(r.req.job, r.evicted_at);
  if (state_->awaiting_gangs == 0) return;
  // Its preemptor stops waiting for it: with no victim left to wait for it is tried afresh
  // (its preemption search included) by the next full pass.
  for (auto& [key, w] : state_->waiting) {
    auto pos = std::find(w->awaiting.begin(), w->awaiting.end(), victim);
    if (pos == w->awaiting.end()) continue;
    w->awaiting.erase(pos);
    state_->NoteAwaiting(*w, true);
    if (w->awaiting.empty()) {
      w->reserve_pool.clear();
      w->awaiting_until = 0;
      w->why = fmt::format("the eviction of {} was refused (it runs on); looking for other room", victim.str());
    }
  }
}

}  // namespace phalanx::scheduling
