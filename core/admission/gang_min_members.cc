#include "core/admission/gang_min_members.h"

namespace phalanx::admission {

void GangMinMembers::Observe(int labelled_pods, MonotonicTime now) {
  // Only growth beyond what was seen restarts the wait: a pod that is deleted and
  // recreated does not, and a shrinking count never does.
  if (labelled_pods > max_seen_ || !last_growth_) {
    if (labelled_pods > max_seen_) max_seen_ = labelled_pods;
    last_growth_ = now;
  }
  current_ = labelled_pods;
}

std::optional<int> GangMinMembers::MinMembers(std::optional<int> annotated, MonotonicTime now) const {
  if (annotated && *annotated > 0) return annotated;
  if (!last_growth_ || current_ <= 0) return std::nullopt;
  return EffectiveMinMembers(std::nullopt, current_, *last_growth_, now, settle_);
}

std::optional<int> EffectiveMinMembers(std::optional<int> annotated, int labelled_pods, MonotonicTime last_new_member,
                                       MonotonicTime now, Duration settle) {
  if (annotated && *annotated > 0) return annotated;
  if (labelled_pods <= 0 || now - last_new_member < settle) return std::nullopt;
  return labelled_pods;
}

}  // namespace phalanx::admission
