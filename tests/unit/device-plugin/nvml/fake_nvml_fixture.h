// Test fixture for code that talks to the fake NVML driver: loads the fake by absolute
// path, points it at a machine file, and restores every FAKE_NVML_* variable afterwards.
// Paths come from compile definitions set in CMakeLists.txt.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "device-plugin/nvml/dl_nvml.h"

namespace phalanx::nvml::testing {

class FakeNvmlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name :
         {"FAKE_NVML_MACHINE", "FAKE_NVML_FAIL", "FAKE_NVML_LOST_GPUS", "FAKE_NVML_EVENTS"}) {
      SetEnv(name, std::nullopt);
    }
  }

  void TearDown() override {
    for (const auto& [name, value] : saved_env_) {
      if (value) {
        setenv(name.c_str(), value->c_str(), 1);
      } else {
        unsetenv(name.c_str());
      }
    }
    if (!temp_dir_.empty()) std::filesystem::remove_all(temp_dir_);
  }

  void SetEnv(const std::string& name, std::optional<std::string> value) {
    if (!saved_env_.count(name)) {
      const char* old = getenv(name.c_str());
      saved_env_[name] = old ? std::optional<std::string>(old) : std::nullopt;
    }
    if (value) {
      setenv(name.c_str(), value->c_str(), 1);
    } else {
      unsetenv(name.c_str());
    }
  }

  static std::string MachinePath(const std::string& file) {
    return std::string(FAKE_NVML_MACHINES) + "/" + file;
  }
  void UseMachine(const std::string& file) { SetEnv("FAKE_NVML_MACHINE", MachinePath(file)); }

  // The fake driver, or the legacy build without versioned symbols.
  static std::unique_ptr<DlNvml> LoadFake(bool legacy = false) {
    auto nvml = DlNvml::Load(legacy ? FAKE_NVML_LEGACY_LIBRARY : FAKE_NVML_LIBRARY);
    EXPECT_TRUE(nvml.ok()) << nvml.status();
    return nvml.ok() ? std::move(nvml).value() : nullptr;
  }

  // A short per-test directory under /tmp (unix socket paths stay far below 108 chars).
  const std::string& TempDir() {
    if (temp_dir_.empty()) {
      char pattern[] = "/tmp/phx-nvml-XXXXXX";
      const char* dir = mkdtemp(pattern);
      EXPECT_NE(dir, nullptr) << "mkdtemp failed";
      // Never fall back to a shared directory: TearDown deletes temp_dir_.
      temp_dir_ = dir != nullptr ? dir : "";
    }
    return temp_dir_;
  }

 private:
  std::map<std::string, std::optional<std::string>> saved_env_;
  std::string temp_dir_;
};

}  // namespace phalanx::nvml::testing
