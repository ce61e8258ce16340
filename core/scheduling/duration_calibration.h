// How long gangs really hold their GPUs against what the engine expected (issue 25: "the
// policy must not collapse when hints are wrong"). Users overestimate run times (Slurm
// sites see requested limits 2-5x the real runs) and a TrainingJob's only hint is its
// `activeDeadlineSeconds`, an upper bound; a gang without a hint is expected to run its
// tier's default. Every forecast the engine makes (a head's start, a preemptor's wait, a
// victim's remaining run, whether a backfill ends in time) is built from those figures,
// so an optimistic-by-2x set of hints makes waits look 2x longer than they are and the
// top tiers preempt for waits that would end by themselves.
//
// The calibration learns, per tier and separately for hinted and unhinted gangs, the ratio
// of GPU release to expectation: sum(run time) / sum(expected run time) over the last
// `kWindow` gangs that ended by themselves (completed, failed or deleted: whatever gave
// the GPUs back, which is what the forecast predicts; not the engine's own evictions),
// and scales expectations by it (Tsafrir et al., "Backfilling using system-generated
// predictions rather than user runtime estimates", IEEE TPDS 2007, learn per user; a
// tier is our coarsest such group). Sums rather than a mean of per-gang ratios: long
// gangs decide forecasts, and a one-minute job that ran ten times its hint should not.
//
// Until `kMinSamples` ends are seen, and while the ratio is within `kDeadBand` of 1, the
// expectation is used as given (exact hints stay exact). Pure and deterministic: the
// drivers pass the times.
#pragma once

#include <cstddef>
#include <deque>
#include <utility>
#include <vector>

namespace phalanx::scheduling {

class DurationCalibration {
 public:
  static constexpr size_t kWindow = 256;
  static constexpr size_t kMinSamples = 32;
  static constexpr double kDeadBand = 0.02;
  static constexpr double kMinRatio = 0.05;
  static constexpr double kMaxRatio = 20;

  // One gang of tier `tier` (EnginePolicy::tiers index) that was expected to run
  // `expected_s` (its hint, or its tier's default when `hinted` is false) gave its GPUs
  // back after `ran_s`. Ignored unless both are > 0.
  void Observe(size_t tier, bool hinted, double expected_s, double ran_s);
  // The factor expectations of that tier and kind are scaled by (1 when unknown).
  double Ratio(size_t tier, bool hinted) const;
  // Ends observed so far for that tier and kind (within the window).
  size_t Samples(size_t tier, bool hinted) const;

 private:
  struct Window {
    std::deque<std::pair<double, double>> samples;  // (expected, ran)
    double expected = 0;
    double ran = 0;
    size_t since_resum = 0;
  };
  const Window* Find(size_t tier, bool hinted) const;
  std::vector<Window> windows_;  // index 2 * tier + hinted
};

}  // namespace phalanx::scheduling
