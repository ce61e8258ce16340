#include "device-plugin/health/health_monitor.h"

#include <cstring>

#include <fmt/format.h>

#include "core/log/log.h"
#include "device-plugin/health/health_policy.h"
#include "device-plugin/nvml/nvml_status.h"

namespace phalanx::device_plugin {
namespace {

// OK when GPU `index` answers with `uuid`; the NVML error (or a UUID mismatch) otherwise.
Status Probe(nvml::NvmlApi& api, const nvml::GpuInfo& gpu) {
  nvmlDevice_t handle{};
  nvmlReturn_t r = api.DeviceGetHandleByIndex(gpu.index, &handle);
  if (r != NVML_SUCCESS) return nvml::NvmlStatus(api, r, "nvmlDeviceGetHandleByIndex");
  char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
  r = api.DeviceGetUUID(handle, buf, sizeof(buf));
  if (r != NVML_SUCCESS) return nvml::NvmlStatus(api, r, "nvmlDeviceGetUUID");
  buf[sizeof(buf) - 1] = '\0';
  if (gpu.uuid.str() != buf) {
    return UnavailableError(fmt::format("GPU index {} now has UUID {}", gpu.index, buf));
  }
  return OkStatus();
}

}  // namespace

HealthMonitor::HealthMonitor(nvml::NvmlApi& api, nvml::GpuInventory inventory, HealthConfig config,
                             HealthTable& table, const PluginMetrics* metrics,
                             std::shared_ptr<spdlog::logger> logger, HealthMonitorOptions options,
                             const Clock& clock)
    : api_(api),
      inventory_(std::move(inventory)),
      config_(std::move(config)),
      table_(table),
      metrics_(metrics),
      logger_(std::move(logger)),
      options_(options),
      clock_(clock) {}

HealthMonitor::~HealthMonitor() { Stop(); }

void HealthMonitor::Start() {
  for (const auto& gpu : inventory_.gpus) {
    if (!gpu.status.ok() && !gpu.uuid.empty()) {
      table_.SetUnhealthy(gpu.uuid.str(), gpu.status.message(), 0, clock_.Now());
    }
  }
  if (config_.disabled) {
    PHX_LOG_WARN(logger_, "Health checks disabled by config (phalanx.health.disabled)");
    return;
  }
  auto waiter = nvml::NvmlEventWaiter::Create(api_, inventory_);
  if (waiter.ok()) {
    waiter_ = std::move(waiter).value();
    for (const auto& [uuid, status] : waiter_->unmonitored()) {
      PHX_LOG_WARN(logger_, "GPU not watched for XID events", kv("gpu", uuid.str()), kv("err", status));
      if (status.code() == StatusCode::kUnavailable) {
        table_.SetUnhealthy(uuid.str(), status.message(), 0, clock_.Now());
      }
    }
  } else {
    PHX_LOG_WARN(logger_, "Failed to create NVML event set; only probing GPUs", kv("err", waiter.status()));
  }
  thread_ = std::thread([this] { Loop(); });
}

void HealthMonitor::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  waiter_.reset();
}

void HealthMonitor::Handle(const nvml::NvmlEvent& event) {
  ++events_;
  if (event.type == nvml::NvmlEventType::kXidCriticalError && metrics_) {
    metrics_->Inc(metrics_->xids, {event.gpu_uuid.str(), std::to_string(event.xid)});
  }
  auto verdict = ClassifyEvent(event, config_);
  if (!verdict) {
    PHX_LOG_DEBUG(logger_, "Ignored NVML event", kv("gpu", event.gpu_uuid.str()), kv("xid", event.xid));
    return;
  }
  if (table_.SetUnhealthy(verdict->device_uuid, verdict->reason, verdict->xid, clock_.Now())) {
    PHX_LOG_WARN(logger_, "Marked device unhealthy", kv("device", verdict->device_uuid),
                 kv("reason", verdict->reason));
  }
}

void HealthMonitor::ProbeOnce() {
  const auto now = clock_.Now();
  const auto unhealthy = table_.Unhealthy();
  for (const auto& gpu : inventory_.gpus) {
    if (gpu.uuid.empty()) continue;
    Status s = Probe(api_, gpu);
    if (!s.ok()) {
      if (s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kNotFound) {
        const std::string reason = "GPU is lost: " + s.message();
        if (table_.SetUnhealthy(gpu.uuid.str(), reason, 0, now)) {
          PHX_LOG_WARN(logger_, "Marked device unhealthy", kv("device", gpu.uuid.str()), kv("reason", reason));
        }
      }
      continue;
    }
    if (config_.recovery_quiet_seconds <= 0) continue;
    // Recover the GPU and its MIG devices once quiet long enough.
    auto recover = [&](const std::string& uuid) {
      auto it = unhealthy.find(uuid);
      if (it == unhealthy.end()) return;
      if (now - it->second.since < std::chrono::seconds(config_.recovery_quiet_seconds)) return;
      if (table_.SetHealthy(uuid)) {
        PHX_LOG_INFO(logger_, "Recovered device to healthy", kv("device", uuid),
                     kv("was", it->second.reason));
      }
    };
    recover(gpu.uuid.str());
    for (const auto& m : gpu.mig_devices) recover(m.uuid.str());
  }
}

void HealthMonitor::Loop() {
  auto next_probe = std::chrono::steady_clock::now() + options_.probe_interval;
  int consecutive_errors = 0;
  while (!stop_) {
    if (waiter_) {
      auto r = waiter_->Wait(options_.wait_slice);
      if (!r.ok()) {
        ++wait_errors_;
        if (++consecutive_errors == 1 || consecutive_errors % 100 == 0) {
          PHX_LOG_WARN(logger_, "NVML event wait failed; probing GPUs instead", kv("err", r.status()),
                       kv("consecutive", consecutive_errors));
        }
        next_probe = std::chrono::steady_clock::now();  // let the probe find the culprit
        std::this_thread::sleep_for(options_.wait_slice);  // the wait returned at once
      } else {
        consecutive_errors = 0;
        if (r->has_value()) Handle(**r);
      }
    } else {
      std::this_thread::sleep_for(options_.wait_slice);
    }
    if (std::chrono::steady_clock::now() >= next_probe) {
      ProbeOnce();
      next_probe = std::chrono::steady_clock::now() + options_.probe_interval;
    }
  }
}

}  // namespace phalanx::device_plugin
