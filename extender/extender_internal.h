// Helpers shared by the extender's verbs, admission and introspection. Internal.
#pragma once

#include <algorithm>
#include <chrono>
#include <string>

#include <fmt/format.h>

#include "core/placement/node_score.h"
#include "core/scheduling/tier_policy.h"
#include "extender/state/ledger.h"
#include "extender/verbs/wire.h"
#include "extender/writes/cluster_writer.h"

namespace phalanx::extender::internal {

inline constexpr size_t kMaxRememberedPods = 50000;

inline PodRef RefOf(const PodInfo& p) { return {p.ns, p.name, p.uid.str()}; }

// A gang member past the commit point (devices annotated, charged on its node) whose
// Binding has not happened: the extender owes it a Binding, never a new plan.
inline bool IsCommittedUnbound(const PodRecord& rec) {
  return rec.info.IsGangMember() && rec.info.devices && !rec.info.devices->empty() && rec.holding != Holding::kNone &&
         !rec.node.empty();
}

inline placement::PodRequest RequestOf(const PodInfo& p) {
  placement::PodRequest r;
  r.gpus = std::max(1, p.gpus);
  r.priority = p.priority;
  if (!p.pool_selector.empty()) r.pool = p.pool_selector;
  return r;
}

inline std::string Seconds(Duration d) {
  return fmt::format("{:.0f}s", std::chrono::duration<double>(d).count());
}

}  // namespace phalanx::extender::internal
