// Minimum members of a hand-made gang (docs/architecture.md §2.1 `phalanx.io/gang-min-members`).
//
// The operator always sets the annotation. For pods a user labels by hand, min-members
// defaults to the number of labelled pods, but only once the count has been stable:
// no new member appeared for `settle` (2 s). Until then the gang is not admitted, so a
// gang whose pods are still being created is not planned for a prefix of its members.
// A member that disappears does not restart the wait (only new members do).
//
// Pure: `now` is passed in. Not thread-safe; one tracker per gang, owned by its caller.
#pragma once

#include <chrono>
#include <optional>

#include "core/base/clock.h"

namespace phalanx::admission {

inline constexpr Duration kDefaultMemberSettle = std::chrono::seconds(2);

class GangMinMembers {
 public:
  explicit GangMinMembers(Duration settle = kDefaultMemberSettle) : settle_(settle) {}

  // The gang's current labelled, non-deleting member count, observed at `now`.
  void Observe(int labelled_pods, MonotonicTime now);

  // The annotation if present (> 0); else the labelled count once no new member was
  // seen for `settle`; else nullopt (keep waiting).
  std::optional<int> MinMembers(std::optional<int> annotated, MonotonicTime now) const;

  int max_seen() const { return max_seen_; }

 private:
  Duration settle_;
  int current_ = 0;
  int max_seen_ = 0;
  std::optional<MonotonicTime> last_growth_;
};

// Stateless form: the same rule when the caller keeps the times itself.
std::optional<int> EffectiveMinMembers(std::optional<int> annotated, int labelled_pods,
                                       MonotonicTime last_new_member, MonotonicTime now,
                                       Duration settle = kDefaultMemberSettle);

}  // namespace phalanx::admission
