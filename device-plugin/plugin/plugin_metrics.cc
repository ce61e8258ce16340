#include "device-plugin/plugin/plugin_metrics.h"

#include "core/metrics/buckets.h"

namespace phalanx::device_plugin {

Result<std::unique_ptr<PluginMetrics>> PluginMetrics::Register(metrics::Registry& r) {
  auto m = std::make_unique<PluginMetrics>();
  PHX_ASSIGN_OR_RETURN(m->registrations,
                       r.AddCounter("phalanx_device_plugin_registrations_total",
                                    "Registrations with kubelet, by resource and result.",
                                    {"resource", "result"}));
  PHX_ASSIGN_OR_RETURN(auto restarts, r.AddCounter("phalanx_device_plugin_kubelet_restarts_total",
                                                   "Kubelet restarts seen (socket recreated or ours deleted)."));
  PHX_ASSIGN_OR_RETURN(m->kubelet_restarts, restarts->WithLabels({}));
  PHX_ASSIGN_OR_RETURN(m->devices, r.AddGauge("phalanx_device_plugin_devices",
                                              "Devices advertised, by resource and health.",
                                              {"resource", "health"}));
  PHX_ASSIGN_OR_RETURN(m->xids, r.AddCounter("phalanx_device_plugin_xid_events_total",
                                             "NVML XID events, by GPU UUID and XID.", {"gpu", "xid"}));
  PHX_ASSIGN_OR_RETURN(auto buckets, metrics::ExponentialBuckets(1e-5, 4, 10));
  PHX_ASSIGN_OR_RETURN(m->allocate_seconds,
                       r.AddHistogram("phalanx_device_plugin_allocate_seconds",
                                      "Allocate latency.", {"resource"}, buckets));
  PHX_ASSIGN_OR_RETURN(m->preferred_seconds,
                       r.AddHistogram("phalanx_device_plugin_preferred_allocation_seconds",
                                      "GetPreferredAllocation latency, by source of the choice.",
                                      {"resource", "source"}, buckets));
  PHX_ASSIGN_OR_RETURN(m->publish_writes,
                       r.AddCounter("phalanx_device_plugin_node_writes_total",
                                    "Node label/annotation patches, by result.", {"result"}));
  PHX_ASSIGN_OR_RETURN(m->annotation_mismatches,
                       r.AddCounter("phalanx_device_plugin_annotation_mismatches_total",
                                    "Allocations that differ from the pod's phalanx.io/devices.",
                                    {"resource"}));
  PHX_ASSIGN_OR_RETURN(m->plan_misses,
                       r.AddCounter("phalanx_device_plugin_plan_misses_total",
                                    "Containers that did not get the devices phalanx.io/devices planned for "
                                    "them, by reason (unavailable, size, must_include, not_planned, "
                                    "kubelet_chose_other).",
                                    {"resource", "reason"}));
  PHX_ASSIGN_OR_RETURN(m->config_reloads,
                       r.AddCounter("phalanx_device_plugin_config_reloads_total",
                                    "SIGHUP config reloads, by result (applied, unchanged, rejected).",
                                    {"result"}));
  return m;
}

void PluginMetrics::Inc(metrics::CounterFamily* f, const std::vector<std::string>& labels) const {
  if (f == nullptr) return;
  if (auto c = f->WithLabels(labels); c.ok()) (*c)->Inc();
}

void PluginMetrics::Set(metrics::GaugeFamily* f, const std::vector<std::string>& labels, double v) const {
  if (f == nullptr) return;
  if (auto g = f->WithLabels(labels); g.ok()) (*g)->Set(v);
}

void PluginMetrics::Observe(metrics::HistogramFamily* f, const std::vector<std::string>& labels,
                            double v) const {
  if (f == nullptr) return;
  if (auto h = f->WithLabels(labels); h.ok()) (*h)->Observe(v);
}

}  // namespace phalanx::device_plugin
