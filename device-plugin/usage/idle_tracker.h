// IdleTracker: which pods hold GPUs that do nothing (issue 18 §3), as a pure state machine.
//
// A pod is *low* in a pass when every device it holds has a known SM utilisation below
// `threshold_percent`; *active* when any of them is at or above it; *unknown* otherwise (no
// reading for some device: a MIG device, a failing query). Its low period begins at the first
// low pass after an active one (or after it appeared); it is *idle* once the low period has lasted
// `window`, and stops being idle at the first active pass. Unknown passes neither extend nor
// reset anything, so a pod whose devices cannot be read is never called idle.
// A pod carrying a phalanx.io/idle-since the tracker did not decide (written before a plugin
// restart, or by hand) is idle since that time for as long as it is not active: the annotation is
// neither rewritten nor re-announced, and removed only at an active pass.
// Pods missing from a pass are forgotten. Thread-compatible.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/base/clock.h"

namespace phalanx::device_plugin {

struct IdleOptions {
  double threshold_percent = 5;
  std::chrono::milliseconds window = std::chrono::minutes(30);
};

struct PodUsage {
  std::string uid;
  std::vector<std::optional<double>> sm_util;   // one per device the pod holds
  std::optional<SystemTime> annotated_since;    // its phalanx.io/idle-since, if any
};

enum class IdleTransition { kNone, kBecameIdle, kBecameActive };

struct IdleDecision {
  std::string uid;
  bool idle = false;
  std::optional<SystemTime> idle_since;  // set when idle: when the low period began
  IdleTransition transition = IdleTransition::kNone;
};

class IdleTracker {
 public:
  explicit IdleTracker(IdleOptions options) : options_(options) {}

  // One decision per pod of `pods`, in the same order.
  std::vector<IdleDecision> Update(const std::vector<PodUsage>& pods, SystemTime now);

  const IdleOptions& options() const { return options_; }

 private:
  struct State {
    std::optional<SystemTime> low_since;
    bool idle = false;
  };
  IdleOptions options_;
  std::map<std::string, State> states_;  // by pod UID
};

}  // namespace phalanx::device_plugin
