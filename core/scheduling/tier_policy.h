// What the scheduling engine may do for and to each tier (docs/algorithms.md,
// "Preemption that pays for itself"). A tier is a priority band: a gang belongs to the
// highest tier whose `priority` is <= its own (the chart's PriorityClasses: critical
// 1,000,000, high 10,000, standard 1,000, spot 100; anything lower is spot).
#pragma once

#include <string>
#include <vector>

#include "core/base/status.h"

namespace phalanx::scheduling {

struct TierPolicy {
  std::string name;
  int priority = 0;  // lower bound of the band
  // Value of one GPU-second of this tier relative to the others: a preemption's benefit
  // is weighted by the preemptor's tier, its cost by each victim's. Separated by ~10x
  // so a higher tier wins against a lower one unless the victim's loss is ~10x larger.
  double weight = 1;
  // A gang of this tier preempts only when its expected wait exceeds this (0 = at once,
  // negative = never preempts).
  double target_wait_s = 7200;
  // A gang of this tier is not preempted again before it ran this long (anti-thrash).
  double min_run_s = 900;
  // ... nor more often than this in any 24 hours (0 = never preempted by cost rules).
  int max_preemptions_per_day = 2;
  // A waiting gang of this tier becomes its pool's head (reserves GPUs, holds back later
  // gangs that would delay it) only after it waited this long (negative = never); until
  // then later gangs that fit simply run. A head bounds its own starvation but leaves
  // GPUs idle while its pool drains for it: see docs/algorithms.md for the trade-off.
  double reserve_after_s = 0;
  // Expected run time of a gang of this tier that gives no duration hint.
  double default_duration_s = 4 * 3600;
  // Checkpointing gangs of this tier may backfill onto GPUs a waiting head has
  // reserved; the head reclaims them (whole gangs) the moment it could start.
  bool preemptible_backfill = false;
  // Idle gangs of this tier are the first preemption victims (issue 18; off by default):
  // a running gang whose every member pod the device plugin marked idle
  // (phalanx.io/idle-since; EngineDriver::IsIdle) costs nothing to preempt and is taken
  // before any busy victim. docs/algorithms.md §8.3 "Idle victims first".
  bool idle_victims_first = false;
};

struct EnginePolicy {
  std::vector<TierPolicy> tiers;  // any order; sorted by priority on Validate()
  // Seconds between an eviction and the victim's gang waiting again (delete + re-create).
  double restart_overhead_s = 30;
  // Waits are estimated up to this far ahead; longer ones count as this.
  double wait_horizon_s = 7 * 86400;
  // Cost-rule preemption searches per pool per pass (each scores every candidate).
  int preemption_searches_per_pass = 2;
  // Off: the head of each pool blocks everything behind it (no backfill at all).
  bool backfill = true;
  // Scale hints and tier defaults by how long each tier's gangs really held their GPUs
  // (DurationCalibration): overestimated hints then forecast waits as they turn out.
  bool calibrate_durations = true;

  // critical / high / standard / spot as documented in docs/algorithms.md.
  static EnginePolicy Defaults();
  // InvalidArgument naming the field (e.g. "tiers[2].weight: must be > 0").
  Status Validate();
  // The tier of a priority (the lowest tier for priorities below every band).
  const TierPolicy& TierOf(int priority) const;
};

}  // namespace phalanx::scheduling
