// Config: the device plugin's `version: v1` configuration file (the NVIDIA device
// plugin's format, so existing ConfigMaps keep working) plus a `phalanx:` section.
//
//   version: v1
//   flags:
//     migStrategy: none | single | mixed        (default none)
//     failOnInitError: true
//     plugin:
//       passDeviceSpecs: false
//       deviceListStrategy: envvar | [envvar, volume-mounts, cdi-annotations, cdi-cri]
//       deviceIDStrategy: uuid                   (only uuid: docs/architecture.md §2.2 device IDs)
//   sharing:
//     timeSlicing:
//       renameByDefault: false
//       failRequestsGreaterThanOne: false
//       resources: [{name: nvidia.com/gpu, replicas: 4, rename: nvidia.com/gpu.shared}]
//   phalanx:
//     health:
//       disabled: false
//       ignoredXids: [13, 31, 43, 45, 68, 109]   (replaces the default list)
//       recoveryQuietSeconds: 300                (0 = never recover, NVIDIA's behaviour)
//     ignoredXids: [...]                         (shorthand for health.ignoredXids, as the
//                                                 Helm chart writes it; not both)
//     publishIntervalSeconds: 1
//
// Validation is strict: unknown keys and bad values fail with the YAML path of the
// problem ("sharing.timeSlicing.resources[0].replicas: must be >= 1, got 0"), so a typo
// is caught at start instead of silently ignored. NVIDIA keys Phalanx does not act on
// (gfd, nvidiaDriverRoot, ...) are accepted. Pure; thread-compatible value types.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"

namespace phalanx::device_plugin {

enum class MigStrategy { kNone, kSingle, kMixed };
std::string_view MigStrategyName(MigStrategy s);
Result<MigStrategy> ParseMigStrategy(std::string_view name);

enum class DeviceListStrategy { kEnvvar, kVolumeMounts, kCdiAnnotations, kCdiCri };
std::string_view DeviceListStrategyName(DeviceListStrategy s);

struct TimeSlicedResource {
  std::string name;    // nvidia.com/gpu or nvidia.com/mig-<profile>
  int replicas = 1;
  std::string rename;  // advertised name; empty = name (or name + ".shared" if renameByDefault)
  bool operator==(const TimeSlicedResource&) const = default;
};

struct HealthConfig {
  bool disabled = false;
  std::set<unsigned long long> ignored_xids{13, 31, 43, 45, 68, 109};
  int recovery_quiet_seconds = 300;  // 0 = never recover
  bool operator==(const HealthConfig&) const = default;
};

struct Config {
  MigStrategy mig_strategy = MigStrategy::kNone;
  bool fail_on_init_error = true;
  bool pass_device_specs = false;
  std::vector<DeviceListStrategy> device_list_strategies{DeviceListStrategy::kEnvvar};
  bool rename_by_default = false;
  bool fail_requests_greater_than_one = false;
  std::vector<TimeSlicedResource> time_slicing;
  HealthConfig health;
  double publish_interval_seconds = 1.0;

  bool HasStrategy(DeviceListStrategy s) const;
  // SIGHUP reload compares the new config with the running one.
  bool operator==(const Config&) const = default;
};

// Parses and validates a config document. InvalidArgument with the path of the problem.
Result<Config> ParseConfig(std::string_view yaml_text);
// Reads and parses `path`. NotFound / InvalidArgument naming the file.
Result<Config> LoadConfigFile(const std::string& path);

}  // namespace phalanx::device_plugin
