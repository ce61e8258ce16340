// The device plugin's Prometheus metrics (issue 4 §8), registered once by main.cc; the
// components keep a pointer (null in unit tests = no metrics). Thread-safe.
#pragma once

#include <memory>
#include <string>

#include "core/base/result.h"
#include "core/metrics/registry.h"

namespace phalanx::device_plugin {

struct PluginMetrics {
  metrics::CounterFamily* registrations = nullptr;     // {resource, result}
  metrics::Counter* kubelet_restarts = nullptr;
  metrics::GaugeFamily* devices = nullptr;             // {resource, health}
  metrics::CounterFamily* xids = nullptr;              // {gpu, xid}
  metrics::HistogramFamily* allocate_seconds = nullptr;   // {resource}
  metrics::HistogramFamily* preferred_seconds = nullptr;  // {resource, source}
  metrics::CounterFamily* publish_writes = nullptr;    // {result}
  metrics::CounterFamily* annotation_mismatches = nullptr;  // {resource}
  metrics::CounterFamily* plan_misses = nullptr;        // {resource, reason}
  metrics::CounterFamily* config_reloads = nullptr;    // {result: applied|unchanged|rejected}

  static Result<std::unique_ptr<PluginMetrics>> Register(metrics::Registry& registry);

  void Inc(metrics::CounterFamily* f, const std::vector<std::string>& labels) const;
  void Set(metrics::GaugeFamily* f, const std::vector<std::string>& labels, double v) const;
  void Observe(metrics::HistogramFamily* f, const std::vector<std::string>& labels, double v) const;
};

}  // namespace phalanx::device_plugin
