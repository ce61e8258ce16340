// The scheduling engine's learned run times, computed on scrape (docs/algorithms.md §8.2
// "Calibrated run times"; the operator's view of why forecasts differ from the hints):
//
//   phalanx_extender_duration_ratio{tier,hinted}    sum(run)/sum(expected) applied to that
//                                                   tier's expectations (1 until learned)
//   phalanx_extender_duration_samples{tier,hinted}  gang ends it was learned from (window)
//   phalanx_extender_engine_total{event}            the engine's counts since start (EngineStats):
//                                                   passes, admitted, backfilled, preemptions,
//                                                   reclaims, queue_reclaims, preemptions_declined,
//                                                   overruns, evictions_refused
//
// `hinted` is "true" for gangs with a duration hint (a TrainingJob's
// activeDeadlineSeconds), "false" for those expected to run their tier's default.
// Thread-safe.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "core/metrics/registry.h"
#include "core/scheduling/engine_types.h"

namespace phalanx::extender {

class Extender;

struct DurationRatioInfo {
  std::string tier;
  bool hinted = false;
  double ratio = 1;
  size_t samples = 0;
};

// What Extender::ReadEngine reads under the admission lock.
struct EngineReadout {
  scheduling::EngineStats stats;
  std::vector<DurationRatioInfo> ratios;  // per tier, hinted then not
};

class EngineMetrics {
 public:
  explicit EngineMetrics(metrics::Registry& registry);
  void Update(const EngineReadout& engine);
  void Refresh(const Extender& extender);

 private:
  std::mutex mu_;
  metrics::GaugeFamily *ratio_ = nullptr, *samples_ = nullptr, *events_ = nullptr;
};

}  // namespace phalanx::extender
