// SIGHUP = reload the config file, without a signal handler: main() blocks SIGHUP before
// any thread exists (threads inherit the mask, so no thread is killed by the default
// action), and the daemon's main thread collects it with sigtimedwait between its other
// duties. Call BlockHangupSignal() before constructing ShutdownSignal.
#pragma once

#include <chrono>

namespace phalanx::device_plugin {

// Blocks SIGHUP in the calling thread (and so in every thread started afterwards).
void BlockHangupSignal();

// Waits up to `timeout` for a pending SIGHUP; true if one was taken.
bool WaitForHangup(std::chrono::milliseconds timeout);

}  // namespace phalanx::device_plugin
