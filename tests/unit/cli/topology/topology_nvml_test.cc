// `phalanx topology --nvml-library PATH` reads the machine through the device plugin's
// NVML binding (here the fake driver) and prints the same tables as --file.
#include <stdlib.h>

#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <dlfcn.h>

#include <gtest/gtest.h>

#include "cli/commands.h"

namespace phalanx::cli {
namespace {

struct CliRun {
  int code = 0;
  std::string out;
  std::string err;
};

CliRun RunCli(std::vector<std::string> args) {
  CommandRegistry registry;
  RegisterTopologyCommand(registry);
  args.insert(args.begin(), "phalanx");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  std::ostringstream out, err;
  auto* old_out = std::cout.rdbuf(out.rdbuf());
  auto* old_err = std::cerr.rdbuf(err.rdbuf());
  CliRun r;
  r.code = registry.Run(static_cast<int>(argv.size()), argv.data());
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

TEST(TopologyNvmlTest, PcieMachineShowsNvlinkPairAsBestPair) {
  setenv("FAKE_NVML_MACHINE", FAKE_NVML_MACHINES "/pcie-4gpu.json", 1);
  CliRun r = RunCli({"topology", "--nvml-library", FAKE_NVML_LIBRARY});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("NV"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 GPUs: [0,1]"), std::string::npos) << r.out;
}

TEST(TopologyNvmlTest, JsonOfDgxListsEightGpus) {
  setenv("FAKE_NVML_MACHINE", FAKE_NVML_MACHINES "/dgx-h100.json", 1);
  CliRun r = RunCli({"topology", "--json", "--nvml-library", FAKE_NVML_LIBRARY});
  ASSERT_EQ(r.code, 0) << r.err;
  size_t n = 0;
  for (size_t p = r.out.find("\"uuid\""); p != std::string::npos; p = r.out.find("\"uuid\"", p + 1)) ++n;
  EXPECT_EQ(n, 8u) << r.out;
}

TEST(TopologyNvmlTest, DriverNotLoadedIsAClearError) {
  unsetenv("FAKE_NVML_MACHINE");  // the fake answers NVML_ERROR_DRIVER_NOT_LOADED
  CliRun r = RunCli({"topology", "--nvml-library", FAKE_NVML_LIBRARY});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--nvml-library"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("DRIVER_NOT_LOADED"), std::string::npos) << r.err;
}

TEST(TopologyNvmlTest, MissingLibraryAndNoSourceAreErrors) {
  CliRun r = RunCli({"topology", "--nvml-library", "/nonexistent/libnvidia-ml.so.1"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("/nonexistent/libnvidia-ml.so.1"), std::string::npos) << r.err;
  r = RunCli({"topology", "--file", "x.json", "--nvml-library", FAKE_NVML_LIBRARY});
  EXPECT_EQ(r.code, 2);  // mutually exclusive
}

// Without --file or --nvml-library the command reads the system's libnvidia-ml.so.1: on a
// machine without the driver that is a clear error naming the library and the way out; on a
// GPU node it prints the topology.
TEST(TopologyNvmlTest, DefaultsToTheSystemNvmlLibrary) {
  void* system_nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  CliRun r = RunCli({"topology"});
  if (system_nvml == nullptr) {
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.err.find("libnvidia-ml.so.1"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--file"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("cannot load NVML library"), std::string::npos) << r.err;
  } else {
    dlclose(system_nvml);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("GPUs"), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace phalanx::cli
