// The run time a simulated job tells the scheduler (docs/simulator.md, "Duration hints").
// The trace's duration is the best case a user could give; real users overestimate, or
// give nothing. Three modes:
//   exact   the work left (the trace's duration, less what a preemption kept);
//   noisy   the work left x a factor drawn once per job from U(lo, hi) (seeded: the same
//           job gets the same factor in every attempt and every run);
//   none    no hint: the job's activeDeadlineSeconds (trace column active_deadline) less
//           what it already ran, as the extender reads runPolicy.activeDeadlineSeconds;
//           without one, the engine assumes its tier's default.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/base/result.h"
#include "sim/model/job.h"

namespace phalanx::sim {

struct HintModel {
  enum class Mode { kExact, kNoisy, kNone };
  Mode mode = Mode::kExact;
  double lo = 1, hi = 1;  // kNoisy: the factor's range
  uint64_t seed = 1;

  // The hint for `job` with `remaining` seconds of work left (nullopt: no hint).
  std::optional<double> HintFor(const Job& job, double remaining) const;
  // kNoisy: the job's factor in [lo, hi) (1 otherwise).
  double FactorOf(JobId id) const;
};

// Parses --hint-noise "LO,HI" (1 <= LO <= HI <= 100, users overestimate: a factor below 1
// would be an underestimate, which `none` and the tier defaults already cover).
// InvalidArgument saying what is wrong.
Result<HintModel> ParseHintNoise(const std::string& text, uint64_t seed);

}  // namespace phalanx::sim
