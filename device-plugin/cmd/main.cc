// phalanx-device-plugin: GPUs and MIG devices for kubelet, with health and topology.
#include <cstdio>

#include <CLI/CLI.hpp>

#include "core/base/shutdown_signal.h"
#include "device-plugin/cmd/daemon.h"
#include "device-plugin/cmd/hangup_signal.h"
#include "device-plugin/cmd/options.h"

int main(int argc, char** argv) {
  // Before any thread exists, so SIGHUP (reload) and SIGTERM reach only their waiters.
  phalanx::device_plugin::BlockHangupSignal();
  phalanx::ShutdownSignal shutdown;
  CLI::App app{"phalanx-device-plugin: advertises GPUs and MIG devices to kubelet, keeps their "
               "health, chooses NVLink-connected sets and publishes node GPU topology"};
  phalanx::device_plugin::Options options;
  phalanx::device_plugin::AddFlags(app, options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return phalanx::device_plugin::kExitBadConfig;
  }
  return phalanx::device_plugin::RunDaemon(options, shutdown);
}
