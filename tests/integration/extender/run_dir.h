// The extender integration tests' scratch directory (apiserver_harness.h, extender_process.h).
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include <gtest/gtest.h>

namespace phalanx::extender::itest {

// Where this test process's daemon logs and kubeconfigs go: one directory per process
// (<TempDir>/phalanx-itest-<pid>; CTest runs each test in its own), removed at exit when
// every test passed, kept and named on stderr otherwise — not loose files in /tmp.
inline const std::string& RunDir() {
  static const std::string dir = [] {
    const std::filesystem::path d =
        std::filesystem::path(::testing::TempDir()) / ("phalanx-itest-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d.string();
  }();
  static const bool cleanup = [] {
    // gtest's UnitTest outlives this handler: it was constructed before the first test ran.
    std::atexit([] {
      if (::testing::UnitTest::GetInstance()->Passed()) {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
      } else {
        std::fprintf(stderr, "extender itest: daemon logs kept in %s\n", dir.c_str());
      }
    });
    return true;
  }();
  (void)cleanup;
  return dir;
}

}  // namespace phalanx::extender::itest
