#include "device-plugin/usage/idle_tracker.h"

#include <algorithm>

namespace phalanx::device_plugin {
namespace {

enum class Level { kLow, kActive, kUnknown };

Level Classify(const std::vector<std::optional<double>>& sm, double threshold) {
  if (sm.empty()) return Level::kUnknown;
  bool all_known = true;
  for (const auto& v : sm) {
    if (!v) {
      all_known = false;
    } else if (*v >= threshold) {
      return Level::kActive;
    }
  }
  return all_known ? Level::kLow : Level::kUnknown;
}

}  // namespace

std::vector<IdleDecision> IdleTracker::Update(const std::vector<PodUsage>& pods, SystemTime now) {
  std::map<std::string, State> next;
  std::vector<IdleDecision> out;
  out.reserve(pods.size());
  for (const PodUsage& p : pods) {
    auto it = states_.find(p.uid);
    State s = it != states_.end() ? it->second : State{};
    IdleDecision d{.uid = p.uid};
    const Level level = Classify(p.sm_util, options_.threshold_percent);
    // The annotation is ours to remove only when the pod is busy: until then one found on the pod
    // (written before a restart, or by hand) stands, with its time.
    if (p.annotated_since && !s.idle && level != Level::kActive) s = State{p.annotated_since, true};
    switch (level) {
      case Level::kActive:
        s.low_since.reset();
        if (s.idle) d.transition = IdleTransition::kBecameActive;
        s.idle = false;
        break;
      case Level::kLow:
        if (!s.low_since) s.low_since = now;
        if (!s.idle && now - *s.low_since >= options_.window) {
          s.idle = true;
          d.transition = IdleTransition::kBecameIdle;
        }
        break;
      case Level::kUnknown:
        break;
    }
    d.idle = s.idle;
    if (s.idle) d.idle_since = s.low_since;
    next[p.uid] = s;
    out.push_back(std::move(d));
  }
  states_ = std::move(next);
  return out;
}

}  // namespace phalanx::device_plugin
