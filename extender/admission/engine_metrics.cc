#include "extender/admission/engine_metrics.h"

#include "core/metrics/gauge.h"
#include "extender/extender.h"

namespace phalanx::extender {

EngineMetrics::EngineMetrics(metrics::Registry& registry) {
  auto ratio = registry.AddGauge("phalanx_extender_duration_ratio",
                                 "How long each tier's gangs really held their GPUs against what was expected "
                                 "(hint or tier default), as the engine now scales expectations; 1 until learned.",
                                 {"tier", "hinted"});
  if (ratio.ok()) ratio_ = *ratio;
  auto samples = registry.AddGauge("phalanx_extender_duration_samples",
                                   "Gang ends the duration ratio was learned from (the last 256 at most).",
                                   {"tier", "hinted"});
  if (samples.ok()) samples_ = *samples;
}

void EngineMetrics::Update(const std::vector<DurationRatioInfo>& ratios) {
  std::lock_guard lock(mu_);
  for (const DurationRatioInfo& r : ratios) {
    const std::vector<std::string> labels = {r.tier, r.hinted ? "true" : "false"};
    if (ratio_ != nullptr) {
      if (auto g = ratio_->WithLabels(labels); g.ok()) (*g)->Set(r.ratio);
    }
    if (samples_ != nullptr) {
      if (auto g = samples_->WithLabels(labels); g.ok()) (*g)->Set(static_cast<double>(r.samples));
    }
  }
}

void EngineMetrics::Refresh(const Extender& extender) { Update(extender.DurationRatios()); }

}  // namespace phalanx::extender
