// The price of a preemption, in weighted GPU-seconds (docs/algorithms.md, "Preemption
// that pays for itself"). A preemption happens only when its benefit exceeds its cost:
//
//   benefit = w(preemptor tier) x preemptor GPUs x wait avoided
//             (wait avoided = the preemptor's expected wait without preempting,
//              capped at the policy's horizon)
//   cost    = sum over victims of
//               min( w(lost) x un-checkpointed GPU-seconds lost         (evicted at once),
//                    w(preemptor) x preemptor GPUs x checkpoint notice) (graceful)
//             + w(victim tier) x victim GPUs x (restart overhead + expected wait to get
//                                               its footprint back in its pool)
//             where w(lost) = max(w(victim tier), w(preemptor tier)): waiting is moved
//             from one gang to another, but lost work is capacity destroyed, so it is
//             valued at the higher of the two tiers.
//
// Graceful victims' notice is counted once per preemption (the longest): the preemptor
// waits for all checkpoints at the same time.
// A victim's footprint term is what makes a 256-GPU gang an expensive answer to a
// 1-GPU pod: it must wait for 256 GPUs again. Tier weights (tier_policy.h) are ~10x
// apart, so a higher tier wins unless the victims lose ~10x more than it gains.
// Pure functions; the engine feeds them forecasts (release_forecast.h).
#pragma once

#include <string>
#include <vector>

namespace phalanx::scheduling {

struct VictimPrice {
  int gpus = 0;
  double weight = 1;
  double lost_work_weight = 1;  // max(victim's, preemptor's tier weight)
  double gpu_seconds_at_risk = 0;  // work since the last checkpoint (evicted at once)
  // Evicted gracefully instead: w(preemptor) x preemptor GPUs x the victim's notice (the
  // preemptor waits for the checkpoint); the engine picks whichever is cheaper.
  double notice_cost = 0;
  double expected_wait_s = 0;      // to get `gpus` back in its pool once re-queued
};

struct PreemptionPrice {
  double benefit = 0;
  double cost = 0;
  bool pays() const { return benefit > cost; }
  // "benefit 2.9e+06 > cost 8.6e+05 weighted GPU-s" (explain, Events, logs).
  std::string Describe() const;
};

double VictimCost(const VictimPrice& victim, double restart_overhead_s);
double PreemptionBenefit(int preemptor_gpus, double preemptor_weight, double wait_avoided_s);
PreemptionPrice PricePreemption(int preemptor_gpus, double preemptor_weight, double wait_avoided_s,
                                const std::vector<VictimPrice>& victims, double restart_overhead_s);

}  // namespace phalanx::scheduling
