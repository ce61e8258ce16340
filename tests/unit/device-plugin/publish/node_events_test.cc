// NodeEvents against the in-process fake API server: health transitions and registration
// outcomes become events.k8s.io Events on the Node, failures once per streak.
#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "core/kube/client.h"
#include "core/kube/config.h"
#include "device-plugin/publish/node_events.h"
#include "tests/fakes/apiserver/fake_apiserver.h"

namespace phalanx::device_plugin {
namespace {

using namespace std::chrono_literals;

class NodeEventsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto started = fakes::apiserver::FakeApiServer::Start();
    ASSERT_TRUE(started.ok()) << started.status();
    api_ = std::move(started).value();
    kube::KubeConfig config;
    config.server = api_->url();
    config.token = "fake-token";
    auto c = kube::KubeClient::Create(config, {.user_agent = "phalanx-device-plugin"});
    ASSERT_TRUE(c.ok()) << c.status();
    client_ = std::move(c).value();
  }
  // Events with `reason` on node-1, summed over their series.
  int Count(const std::string& reason, const std::string& note_part = "") {
    auto events = api_->List("events.events.k8s.io", "default");
    if (!events.ok()) return -1;
    int n = 0;
    for (const auto& e : *events) {
      if (e.value("reason", "") != reason || e["regarding"].value("name", "") != "node-1") continue;
      if (e.value("note", "").find(note_part) == std::string::npos) continue;
      n += e.contains("series") ? e["series"].value("count", 1) : 1;
    }
    return n;
  }
  bool WaitFor(const std::function<bool()>& cond) {
    const auto end = std::chrono::steady_clock::now() + 20s;
    while (!cond()) {
      if (std::chrono::steady_clock::now() > end) return false;
      std::this_thread::sleep_for(5ms);
    }
    return true;
  }

  std::unique_ptr<fakes::apiserver::FakeApiServer> api_;
  std::unique_ptr<kube::KubeClient> client_;
  HealthTable health_;
};

TEST_F(NodeEventsTest, HealthChangesAndRegistrationsBecomeNodeEvents) {
  health_.SetUnhealthy("GPU-lost-at-start", "GPU is lost", 0, MonotonicTime{});
  NodeEvents events(*client_, "node-1", health_, {.flush_period = 10ms, .tick = 10ms});
  events.Start();
  // Already unhealthy at start: reported.
  ASSERT_TRUE(WaitFor([&] { return Count("GpuUnhealthy", "GPU-lost-at-start: GPU is lost") == 1; }));

  health_.SetUnhealthy("GPU-a", "XID 79", 79, MonotonicTime{});
  ASSERT_TRUE(WaitFor([&] { return Count("GpuUnhealthy", "GPU-a: XID 79") == 1; }));
  health_.SetHealthy("GPU-a");
  ASSERT_TRUE(WaitFor([&] { return Count("GpuRecovered", "GPU-a") == 1; }));

  // Three failures in a row: one Warning; then a success, then a new failure streak: one more.
  events.Registration("nvidia.com/gpu", 8, UnavailableError("kubelet.sock: connection refused"));
  events.Registration("nvidia.com/gpu", 8, UnavailableError("kubelet.sock: connection refused"));
  events.Registration("nvidia.com/gpu", 8, UnavailableError("kubelet.sock: no such file"));
  events.Registration("nvidia.com/gpu", 8, OkStatus());
  ASSERT_TRUE(WaitFor([&] { return Count("Registered", "Registered nvidia.com/gpu (8 devices) with kubelet") == 1; }));
  events.Registration("nvidia.com/gpu", 8, UnavailableError("kubelet.sock: refused again"));
  ASSERT_TRUE(WaitFor([&] { return Count("RegistrationFailed", "refused again") == 1; }));
  events.Stop();
  EXPECT_EQ(Count("RegistrationFailed"), 2);
  EXPECT_EQ(Count("GpuUnhealthy"), 2);
  auto all = api_->List("events.events.k8s.io", "default");
  ASSERT_TRUE(all.ok());
  for (const auto& e : *all) {
    EXPECT_EQ(e["regarding"].value("kind", ""), "Node") << e.dump();
    EXPECT_EQ(e.value("reportingController", ""), "phalanx.io/device-plugin") << e.dump();
    EXPECT_EQ(e.value("type", ""), e.value("reason", "") == "GpuUnhealthy" || e.value("reason", "") == "RegistrationFailed"
                                       ? "Warning"
                                       : "Normal");
  }
}

}  // namespace
}  // namespace phalanx::device_plugin
