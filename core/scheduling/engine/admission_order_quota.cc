// Gangs without quota room (admission_order.h, "gangs without quota room"): a run of a team queue's
// waiting gangs none of which has quota room is skipped in one step instead of gang by gang,
// and the reasons its gangs would have been given are kept per (pool, amount). An
// overloaded queue (thousands waiting behind a full quota) otherwise costs every pass a
// walk over all of them, though only a few can run.
#include <algorithm>

#include "core/scheduling/engine/admission_order.h"
#include "core/scheduling/engine/pass_context.h"

namespace phalanx::scheduling {

void AdmissionOrder::IndexShape(const WaitingGang& w, bool add) {
  const auto team = static_cast<size_t>(w.team);
  if (team >= team_shapes_.size()) team_shapes_.resize(team + 1);
  Shapes& shapes = team_shapes_[team];
  // Emptied shapes stay until the next pass starts (QueueWalk): a pass's room caches
  // point at them.
  if (add) {
    shapes[{w.req.pool, AmountOf(w.req)}].insert(w.order);
  } else if (auto it = shapes.find({w.req.pool, AmountOf(w.req)}); it != shapes.end()) {
    it->second.erase(w.order);
  }
}

void AdmissionOrder::RefreshRoom(int team, RoomCache& cache, PassContext& ctx) const {
  const Shapes& shapes = team_shapes_[static_cast<size_t>(team)];
  if (cache.version != s_->ledger.version()) {
    // Which shapes have room now: QuotaFor's verdict (any pool: room in some pool with nodes).
    cache.version = s_->ledger.version();
    cache.with_room.clear();
    cache.without_room.clear();
    cache.texts.reset();
    const placement::ClusterState& state = ctx.driver.state();
    const std::string* any_pool = s_->MostNominalPool(state, team).first;
    cache.any_pool = any_pool ? *any_pool : std::string();
    for (const auto& entry : shapes) {
      if (entry.second.empty()) continue;
      const auto& [required, amount] = entry.first;
      bool room = false;
      if (!required.empty()) {
        room = s_->ledger.Check(team, s_->ledger.PoolIndex(required), amount) != QueueLedger::Fit::kNoRoom;
      } else {
        for (placement::PoolId p = 0; p < state.PoolCount() && !room; ++p) {
          if (state.pool(p).nodes.empty()) continue;
          room = s_->ledger.Check(team, s_->ledger.PoolIndex(state.pool(p).name), amount) != QueueLedger::Fit::kNoRoom;
        }
      }
      if (room) {
        cache.with_room.push_back(&entry);
      } else {
        cache.without_room.insert(&entry);
      }
    }
  }
}

void AdmissionOrder::RoomTexts(int team, RoomCache& cache) const {
  if (!cache.texts) {
    // The reasons QuotaFor gives the shapes without room, with the ledger as it is.
    auto texts = std::make_shared<RefusedTexts>();
    const std::string& queue = s_->ledger.QueueName(team);
    std::map<std::string, std::shared_ptr<const QueueLedger::Explanation>> by_pool;
    for (const Shapes::value_type* entry : cache.without_room) {
      const std::string& pool = entry->first.first.empty() ? cache.any_pool : entry->first.first;
      auto& facts = by_pool[pool];
      if (!facts) facts = std::make_shared<const QueueLedger::Explanation>(s_->ledger.Explaining(queue, pool));
      texts->try_emplace(entry->first, facts);
    }
    cache.texts = std::move(texts);
  }
}

std::optional<OrderKey> AdmissionOrder::SkipNoRoomRun(int team, const WaitingGang& at, RoomCache& cache,
                                                      PassContext& ctx) {
  const auto t = static_cast<size_t>(team);
  if (t >= team_shapes_.size()) return at.order;
  const Shapes& shapes = team_shapes_[t];
  RefreshRoom(team, cache, ctx);
  // The gang at the cursor: walked as usual unless its shape has no room.
  if (!at.gone) {
    auto shape = shapes.find({at.req.pool, AmountOf(at.req)});
    if (shape == shapes.end() || !cache.without_room.contains(&*shape)) return at.order;
  }
  // The run ends at the first gang (walked in this pass) of a shape that has room.
  std::optional<OrderKey> next;
  for (const Shapes::value_type* entry : cache.with_room) {
    auto it = entry->second.upper_bound(at.order);
    while (it != entry->second.end() && std::get<2>(*it) >= s_->pass_seq_limit) ++it;
    if (it != entry->second.end() && (!next || *it < *next)) next = *it;
  }
  RoomTexts(team, cache);
  SkippedRuns& runs = skipped_[t];
  runs.pass = s_->stats.passes;
  runs.runs.push_back(SkippedRun{.from = at.order, .to = next.value_or(OrderKey{}), .to_end = !next,
                                 .seq_limit = s_->pass_seq_limit, .texts = cache.texts});
  return next;
}

void AdmissionOrder::RollSkippedRuns() {
  if (!s_->ledger.enabled()) return;
  const size_t teams = s_->ledger.config().queues.size();
  skipped_.resize(teams);
  skipped_before_.resize(teams);
  for (size_t t = 0; t < teams; ++t) {
    // The runs of the last pass are read by this one's walk (TryGang); older ones by nobody.
    if (skipped_[t].pass + 1 == s_->stats.passes) {
      std::swap(skipped_before_[t], skipped_[t]);
    } else {
      skipped_before_[t].runs.clear();
    }
    skipped_[t].runs.clear();
  }
}

std::optional<std::string> AdmissionOrder::SkippedWhy(const WaitingGang& w, uint64_t pass) const {
  if (w.team < 0 || pass == 0) return std::nullopt;
  const auto t = static_cast<size_t>(w.team);
  const SkippedRuns* runs = nullptr;
  if (t < skipped_.size() && skipped_[t].pass == pass && !skipped_[t].runs.empty()) runs = &skipped_[t];
  if (!runs && t < skipped_before_.size() && skipped_before_[t].pass == pass) runs = &skipped_before_[t];
  if (!runs || runs->runs.empty()) return std::nullopt;
  // The last run starting at or before it.
  auto run = std::upper_bound(runs->runs.begin(), runs->runs.end(), w.order,
                              [](const OrderKey& o, const SkippedRun& r) { return o < r.from; });
  if (run == runs->runs.begin()) return std::nullopt;
  --run;
  if ((!run->to_end && !(w.order < run->to)) || std::get<2>(w.order) >= run->seq_limit) return std::nullopt;
  auto it = run->texts->find({w.req.pool, AmountOf(w.req)});
  if (it == run->texts->end()) return std::nullopt;
  return it->second->Text(it->first.second);
}

void AdmissionOrder::MaterializeSkippedWhys() {
  if (skipped_.empty()) return;
  for (auto& [key, w] : s_->waiting) {
    if (w->why_pass == s_->stats.passes) continue;
    if (std::optional<std::string> skipped = SkippedWhy(*w, s_->stats.passes)) {
      w->why = std::move(*skipped);
      w->why_pass = s_->stats.passes;
    }
  }
}

}  // namespace phalanx::scheduling
