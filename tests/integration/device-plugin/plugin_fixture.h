// Fixture for integration tests: a temporary kubelet directory, the fake kubelet on it,
// and the real phalanx-device-plugin binary on the fake NVML driver.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/fakes/kubelet/fake_kubelet.h"
#include "tests/integration/device-plugin/daemon_process.h"

namespace phalanx::device_plugin::testing {

using fake_kubelet::FakeKubelet;
using Devices = fake_kubelet::DevicePluginClient::Devices;

class PluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/phx-dp-XXXXXX";
    const char* d = mkdtemp(pattern);
    ASSERT_NE(d, nullptr);
    dir_ = d;
  }
  void TearDown() override {
    daemon_.reset();
    kubelet_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  void StartKubelet() {
    auto k = FakeKubelet::Start(dir_);
    ASSERT_TRUE(k.ok()) << k.status();
    kubelet_ = std::move(k).value();
  }

  static std::string Machine(const std::string& name) {
    return std::string(FAKE_NVML_MACHINES) + "/" + name + ".json";
  }
  std::string KubeletDir() const { return dir_; }
  std::string PluginDir() const { return dir_ + "/device-plugins"; }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  std::string WriteFile(const std::string& name, const std::string& text) {
    std::ofstream(Path(name)) << text;
    return Path(name);
  }

  // Starts the daemon on `machine` with the standard test flags plus `extra`.
  DaemonProcess& StartDaemon(const std::string& machine, std::vector<std::string> extra = {},
                             std::map<std::string, std::string> env = {}) {
    std::filesystem::create_directories(PluginDir());
    // The pod-resources socket is left to its default, <kubelet-dir>/pod-resources/kubelet.sock.
    std::vector<std::string> args = {"--kubelet-dir", KubeletDir(),
                                     "--nvml-library", FAKE_NVML_LIBRARY,
                                     "--metrics-addr", "127.0.0.1:0",
                                     "--kubelet-poll-ms", "50"};
    if (!publish_) args.push_back("--publish=false");
    args.insert(args.end(), extra.begin(), extra.end());
    if (!machine.empty()) env.emplace("FAKE_NVML_MACHINE", Machine(machine));
    env.emplace("NODE_NAME", "node-1");
    daemon_ = std::make_unique<DaemonProcess>(args, env, Path("daemon-" + std::to_string(++daemons_) + ".log"));
    return *daemon_;
  }

  // The kubelet's connection to the plugin for `resource` once registered.
  fake_kubelet::DevicePluginClient* Plugin(const std::string& resource) {
    fake_kubelet::DevicePluginClient* p = nullptr;
    WaitUntil([&] { return (p = kubelet_->Plugin(resource)) != nullptr; });
    return p;
  }

  static int CountHealth(const Devices& ds, const std::string& health) {
    int n = 0;
    for (const auto& d : ds) n += d.health() == health;
    return n;
  }

  std::string dir_;
  std::unique_ptr<FakeKubelet> kubelet_;
  std::unique_ptr<DaemonProcess> daemon_;
  int daemons_ = 0;
  bool publish_ = false;  // most tests have no API server
};

}  // namespace phalanx::device_plugin::testing
