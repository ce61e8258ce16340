// phalanx-gpu-smoke-kubelet: the fake kubelet (tests/fakes/kubelet) as a standalone process for
// scripts/gpu-smoke.sh, which runs the real device plugin on a machine with a real GPU. Not a test.
//
//   phalanx-gpu-smoke-kubelet <kubelet-dir>
// Serves Registration and pod-resources under <kubelet-dir>; once the plugin registered
// nvidia.com/gpu, makes pod smoke/gpu-smoke (container "load") hold the first advertised device
// in pod-resources, prints "holding <device ID>" on stdout, and runs until SIGTERM/SIGINT.
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "tests/fakes/kubelet/fake_kubelet.h"

namespace {
volatile sig_atomic_t stop = 0;
void OnSignal(int) { stop = 1; }
}  // namespace

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <kubelet-dir>\n", argv[0]);
    return 2;
  }
  signal(SIGTERM, OnSignal);
  signal(SIGINT, OnSignal);
  auto kubelet = phalanx::fake_kubelet::FakeKubelet::Start(argv[1]);
  if (!kubelet.ok()) {
    std::fprintf(stderr, "fake kubelet: %s\n", kubelet.status().ToString().c_str());
    return 1;
  }
  bool holding = false;
  while (!stop) {
    if (!holding) {
      if (auto* plugin = (*kubelet)->Plugin("nvidia.com/gpu"); plugin != nullptr && !plugin->devices().empty()) {
        const std::string id = plugin->devices()[0].id();
        (*kubelet)->pod_resources().SetPods(
            {phalanx::fake_kubelet::FakePodResources::MakePod("smoke", "gpu-smoke", "load", "nvidia.com/gpu", {id})});
        std::printf("holding %s\n", id.c_str());
        std::fflush(stdout);
        holding = true;
      }
    }
    std::this_thread::sleep_for(100ms);
  }
  return 0;
}
