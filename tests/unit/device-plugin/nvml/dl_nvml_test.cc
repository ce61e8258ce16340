#include "device-plugin/nvml/dl_nvml.h"

#include <gtest/gtest.h>

#include "device-plugin/nvml/nvml_session.h"
#include "tests/unit/device-plugin/nvml/fake_nvml_fixture.h"

namespace phalanx::nvml {
namespace {

using testing::FakeNvmlTest;
using DlNvmlTest = FakeNvmlTest;

TEST_F(DlNvmlTest, PrefersVersionedSymbols) {
  auto nvml = LoadFake();
  ASSERT_NE(nvml, nullptr);
  EXPECT_EQ(nvml->ResolvedSymbol("Init"), "nvmlInit_v2");
  EXPECT_EQ(nvml->ResolvedSymbol("DeviceGetCount"), "nvmlDeviceGetCount_v2");
  EXPECT_EQ(nvml->ResolvedSymbol("DeviceGetHandleByIndex"), "nvmlDeviceGetHandleByIndex_v2");
  EXPECT_EQ(nvml->ResolvedSymbol("DeviceGetPciInfo"), "nvmlDeviceGetPciInfo_v3");
  EXPECT_EQ(nvml->ResolvedSymbol("DeviceGetNvLinkRemotePciInfo"),
            "nvmlDeviceGetNvLinkRemotePciInfo_v2");
  EXPECT_EQ(nvml->ResolvedSymbol("EventSetWait"), "nvmlEventSetWait_v2");
  EXPECT_EQ(nvml->ResolvedSymbol("DeviceGetNumaNodeId"), "nvmlDeviceGetNumaNodeId");
  EXPECT_EQ(nvml->ResolvedSymbol("NoSuchMethod"), "");
}

TEST_F(DlNvmlTest, FallsBackToUnversionedSymbolsOnLegacyDriver) {
  auto nvml = LoadFake(/*legacy=*/true);
  ASSERT_NE(nvml, nullptr);
  EXPECT_EQ(nvml->ResolvedSymbol("Init"), "nvmlInit");
  EXPECT_EQ(nvml->ResolvedSymbol("DeviceGetCount"), "nvmlDeviceGetCount");
  EXPECT_EQ(nvml->ResolvedSymbol("DeviceGetHandleByIndex"), "nvmlDeviceGetHandleByIndex");
  EXPECT_EQ(nvml->ResolvedSymbol("DeviceGetPciInfo"), "nvmlDeviceGetPciInfo");
  EXPECT_EQ(nvml->ResolvedSymbol("EventSetWait"), "nvmlEventSetWait");
  EXPECT_EQ(nvml->ResolvedSymbol("SystemGetCudaDriverVersion"), "nvmlSystemGetCudaDriverVersion");
}

TEST_F(DlNvmlTest, MissingOptionalSymbolReturnsFunctionNotFound) {
  UseMachine("dgx-h100.json");
  auto nvml = LoadFake(/*legacy=*/true);
  ASSERT_NE(nvml, nullptr);
  EXPECT_EQ(nvml->ResolvedSymbol("DeviceGetNumaNodeId"), "");
  auto session = NvmlSession::Open(*nvml);
  ASSERT_TRUE(session.ok()) << session.status();
  nvmlDevice_t device = nullptr;
  ASSERT_EQ(nvml->DeviceGetHandleByIndex(0, &device), NVML_SUCCESS);
  unsigned int node = 0;
  EXPECT_EQ(nvml->DeviceGetNumaNodeId(device, &node), NVML_ERROR_FUNCTION_NOT_FOUND);
  nvmlIntNvLinkDeviceType_t type{};
  EXPECT_EQ(nvml->DeviceGetNvLinkRemoteDeviceType(device, 0, &type),
            NVML_ERROR_FUNCTION_NOT_FOUND);
}

TEST_F(DlNvmlTest, MissingLibraryIsFailedPreconditionWithDlerror) {
  auto nvml = DlNvml::Load("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(nvml.ok());
  EXPECT_EQ(nvml.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(nvml.status().message().find(
                "cannot load NVML library /nonexistent/libnvidia-ml.so.1 (is the NVIDIA driver "
                "installed?)"),
            std::string::npos)
      << nvml.status();
  EXPECT_NE(nvml.status().message().find("No such file or directory"), std::string::npos)
      << nvml.status();
}

TEST_F(DlNvmlTest, LibraryWithoutRequiredSymbolsIsRejected) {
  // Any shared library that is not NVML: libm is always present with glibc.
  auto nvml = DlNvml::Load("libm.so.6");
  ASSERT_FALSE(nvml.ok());
  EXPECT_EQ(nvml.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(nvml.status().message(),
            "libm.so.6 is not a usable NVML library: missing required symbols "
            "nvmlInit_v2|nvmlInit, nvmlShutdown, nvmlDeviceGetCount_v2|nvmlDeviceGetCount, "
            "nvmlDeviceGetHandleByIndex_v2|nvmlDeviceGetHandleByIndex, nvmlErrorString");
}

TEST_F(DlNvmlTest, InitFailsWhenDriverNotLoaded) {
  UseMachine("dgx-h100.json");
  SetEnv("FAKE_NVML_FAIL", "driver-not-loaded");
  auto nvml = LoadFake();
  ASSERT_NE(nvml, nullptr);
  auto session = NvmlSession::Open(*nvml);
  ASSERT_FALSE(session.ok());
  EXPECT_EQ(session.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(session.status().message(),
            "nvmlInit: Driver Not Loaded (NVML_ERROR_DRIVER_NOT_LOADED)");
}

TEST_F(DlNvmlTest, InitFailsWhenMachineFileFlagsDriverNotLoaded) {
  const std::string machine = TempDir() + "/no-driver.json";
  FILE* f = fopen(machine.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fputs(R"({"driverVersion": "535.129.03", "cudaDriverVersion": 12020,
            "failures": {"driverNotLoaded": true}, "gpus": []})",
        f);
  fclose(f);
  SetEnv("FAKE_NVML_MACHINE", machine);
  auto nvml = LoadFake();
  ASSERT_NE(nvml, nullptr);
  auto session = NvmlSession::Open(*nvml);
  ASSERT_FALSE(session.ok());
  EXPECT_EQ(session.status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(DlNvmlTest, MalformedMachineFailsInitAndExplainsOnStderr) {
  const std::string machine = TempDir() + "/bad.json";
  FILE* f = fopen(machine.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fputs(R"({"driverVersion": "535", "cudaDriverVersion": 12020,
            "gpus": [{"uuid": "GPU-1", "name": "x", "memoryMiB": "lots", "pciBusId": "0:1:0.0"}]})",
        f);
  fclose(f);
  SetEnv("FAKE_NVML_MACHINE", machine);
  auto nvml = LoadFake();
  ASSERT_NE(nvml, nullptr);
  ::testing::internal::CaptureStderr();
  auto session = NvmlSession::Open(*nvml);
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_FALSE(session.ok());
  EXPECT_EQ(session.status().code(), StatusCode::kUnknown);
  EXPECT_EQ(session.status().message(), "nvmlInit: Unknown Error (NVML_ERROR_UNKNOWN)");
  EXPECT_NE(err.find("fake NVML: INVALID_ARGUMENT: " + machine +
                     ": gpus[0].memoryMiB: expected unsigned integer, got string"),
            std::string::npos)
      << err;
}

TEST_F(DlNvmlTest, CallsBeforeInitAreUninitialized) {
  UseMachine("dgx-h100.json");
  auto nvml = LoadFake();
  ASSERT_NE(nvml, nullptr);
  unsigned int count = 0;
  EXPECT_EQ(nvml->DeviceGetCount(&count), NVML_ERROR_UNINITIALIZED);
  {
    auto session = NvmlSession::Open(*nvml);
    ASSERT_TRUE(session.ok());
    EXPECT_EQ(nvml->DeviceGetCount(&count), NVML_SUCCESS);
    EXPECT_EQ(count, 8u);
  }
  // The session's destructor shut NVML down again.
  EXPECT_EQ(nvml->DeviceGetCount(&count), NVML_ERROR_UNINITIALIZED);
}

}  // namespace
}  // namespace phalanx::nvml
