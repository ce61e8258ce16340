// The phalanx-device-plugin daemon: wires config, NVML, health, kubelet servers,
// publishing and the HTTP endpoints, and runs until `shutdown` fires.
// SIGHUP reloads --config (see Reload in daemon.cc); the caller must have blocked SIGHUP
// (BlockHangupSignal) before starting any thread.
// Exit codes: 0 after a graceful shutdown, 1 runtime failure (NVML, lock, ports),
// 2 invalid configuration.
#pragma once

#include "core/base/shutdown_signal.h"
#include "device-plugin/cmd/options.h"

namespace phalanx::device_plugin {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadConfig = 2;

int RunDaemon(const Options& options, ShutdownSignal& shutdown);

}  // namespace phalanx::device_plugin
