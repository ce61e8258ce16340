#include "extender/admission/gang_events.h"

#include <set>

#include <fmt/format.h>

namespace phalanx::extender {
namespace {

constexpr std::string_view kTimedOut = "timed out at the bind barrier";

}  // namespace

void GangEvents::Observe(const Ledger& ledger, MonotonicTime now) {
  std::set<GangKey> live;
  for (const auto& [key, g] : ledger.gangs()) {
    const PodRecord* first = nullptr;
    for (const PodUid& uid : g.members) {
      const PodRecord* rec = ledger.FindPod(uid);
      if (rec && (!first || rec->info.name < first->info.name)) first = rec;
    }
    if (!first) continue;
    live.insert(key);
    auto [it, fresh] = seen_.try_emplace(key);
    Seen& s = it->second;
    const EventObject pod{.ns = first->info.ns, .name = first->info.name, .uid = first->info.uid.str()};
    const bool planned = g.plan.has_value();
    if (planned && !s.planned) {
      sink_.Record(pod, "Normal", "GangAdmitted", "Scheduling",
                   fmt::format("gang {} admitted: {} member(s) planned, GPUs reserved, gates lifted", key.str(),
                               g.plan->members.size()));
    }
    s.planned = planned;
    if (g.last_no_fit == s.last_no_fit) {
      if (planned || g.last_no_fit.empty() || g.last_no_fit.find(kTimedOut) != std::string::npos) continue;
      if (!s.waiting_sent || now - s.last_waiting < waiting_interval_) continue;  // same reason: rate-limited
    }
    const bool changed = g.last_no_fit != s.last_no_fit;
    s.last_no_fit = g.last_no_fit;
    if (g.last_no_fit.empty()) continue;
    if (g.last_no_fit.find(kTimedOut) != std::string::npos) {
      if (changed) sink_.Record(pod, "Warning", "GangTimedOut", "Binding", g.last_no_fit);
      continue;
    }
    if (planned) continue;
    if (s.waiting_sent && now - s.last_waiting < waiting_interval_) continue;
    sink_.Record(pod, "Normal", "GangWaiting", "Scheduling", fmt::format("gang {} waiting: {}", key.str(), g.last_no_fit));
    s.waiting_sent = true;
    s.last_waiting = now;
  }
  std::erase_if(seen_, [&](const auto& kv) { return !live.contains(kv.first); });
}

}  // namespace phalanx::extender
