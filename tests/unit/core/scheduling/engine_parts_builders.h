// Builders for the engine's parts (core/scheduling/engine/): an EngineState filled the way
// the Engine fills it (Enqueue, Track), so a part can be tested without the Engine, and a
// PassContext over a FakeDriver.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/scheduling/engine/admission_order.h"
#include "core/scheduling/engine/pass_context.h"
#include "core/scheduling/engine/state.h"
#include "tests/unit/core/scheduling/fake_driver.h"

namespace phalanx::scheduling::testing {

// A waiting gang as Engine::Enqueue records it; `order` (if any) indexes it.
inline WaitingGang& AddWaiting(EngineState& s, GangRequest g, AdmissionOrder* order = nullptr) {
  if (g.job.empty()) g.job = g.key.str();
  auto w = std::make_unique<WaitingGang>();
  WaitingGang& ref = *w;
  w->order = OrderOf(g, s.next_seq++);
  if (s.ledger.enabled()) {
    w->team = s.ledger.ResolveIndex(g.queue);
    s.by_queue[s.ledger.QueueName(w->team)].emplace(w->order, &ref);
  }
  s.by_pool[g.pool].emplace(w->order, &ref);
  s.by_order.emplace(w->order, &ref);
  w->req = std::move(g);
  if (order != nullptr) order->OnQueued(ref);
  const GangKey key = ref.req.key;
  s.waiting.emplace(key, std::move(w));
  return ref;
}

// A running gang as Engine::Track records it. Its pods are allocated whole nodes first in
// `driver`'s cluster ("<key>-<member>"), on the nodes named.
inline RunningGang& AddRunning(EngineState& s, FakeDriver& driver, GangRequest g, const std::vector<std::string>& nodes,
                               double started, bool reclaimable = false) {
  if (g.job.empty()) g.job = g.key.str();
  RunningGang r;
  r.pool = g.pool;
  for (size_t m = 0; m < nodes.size(); ++m) {
    PodUid pod(fmt::format("{}-{}", g.key.str(), m));
    const Status st = driver.mutable_state().Allocate(pod, NodeName(nodes[m]), placement::AllGpus(g.gpus_per_member),
                                                      g.priority);
    EXPECT_TRUE(st.ok()) << st;
    r.pods.push_back(pod);
  }
  r.started = started;
  r.expected_end = started + s.ExpectedDuration(g);
  r.reclaimable = reclaimable;
  if (reclaimable) ++s.reclaimable;
  s.forecast.Add(g.key, r.pool, r.expected_end, g.IsShare() ? 1 : g.Gpus());
  if (s.ledger.enabled()) {
    r.team = s.ledger.ResolveIndex(g.queue);
    s.ledger.Add(g.key, s.ledger.QueueName(r.team), r.pool, AmountOf(g), g.priority, started);
  }
  const GangKey key = g.key;
  r.req = std::move(g);
  return s.running.insert_or_assign(key, std::move(r)).first->second;
}

inline PassContext ContextAt(double now, FakeDriver& driver, const AdmissionOrder& order,
                             PassScope scope = PassScope::kFull) {
  return PassContext{.now = now, .driver = driver, .order = order, .scope = scope};
}

}  // namespace phalanx::scheduling::testing
