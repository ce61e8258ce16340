#include "extender/admission/engine_metrics.h"

#include <cstdint>
#include <utility>

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
  // Counts since start, exposed as gauges like the extender's other since-start counts.
  auto events = registry.AddGauge("phalanx_extender_engine_total",
                                  "The scheduling engine's counts since start, by event (passes, gangs admitted and "
                                  "backfilled, gangs preempted, reclaims, queue reclaims, preemptions declined as not "
                                  "worth their price, run-time overruns, evictions refused).",
                                  {"event"});
  if (events.ok()) events_ = *events;
}

void EngineMetrics::Update(const EngineReadout& engine) {
  const scheduling::EngineStats& stats = engine.stats;
  std::lock_guard lock(mu_);
  if (events_ != nullptr) {
    const std::pair<const char*, uint64_t> counts[] = {
        {"passes", stats.passes},
        {"admitted", stats.admitted},
        {"backfilled", stats.backfilled},
        {"preemptions", stats.preemptions},
        {"reclaims", stats.reclaims},
        {"queue_reclaims", stats.queue_reclaims},
        {"preemptions_declined", stats.preemptions_declined},
        {"overruns", stats.overruns},
        {"evictions_refused", stats.evictions_refused},
    };
    for (const auto& [event, n] : counts) {
      if (auto g = events_->WithLabels({event}); g.ok()) (*g)->Set(static_cast<double>(n));
    }
  }
  for (const DurationRatioInfo& r : engine.ratios) {
    const std::vector<std::string> labels = {r.tier, r.hinted ? "true" : "false"};
    if (ratio_ != nullptr) {
      if (auto g = ratio_->WithLabels(labels); g.ok()) (*g)->Set(r.ratio);
    }
    if (samples_ != nullptr) {
      if (auto g = samples_->WithLabels(labels); g.ok()) (*g)->Set(static_cast<double>(r.samples));
    }
  }
}

void EngineMetrics::Refresh(const Extender& extender) { Update(extender.ReadEngine()); }

}  // namespace phalanx::extender
