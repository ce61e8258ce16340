#include "device-plugin/nvml/nvml_event_waiter.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <future>
#include <string>

#include <gtest/gtest.h>

#include "device-plugin/nvml/gpu_discovery.h"
#include "device-plugin/nvml/nvml_session.h"
#include "tests/unit/device-plugin/nvml/fake_nvml_fixture.h"

namespace phalanx::nvml {
namespace {

using std::chrono::milliseconds;
using testing::FakeNvmlTest;

// Generous: only there to catch hangs (events arrive in microseconds).
constexpr milliseconds kEventDeadline{10'000};

class NvmlEventWaiterTest : public FakeNvmlTest {
 protected:
  // Makes FAKE_NVML_EVENTS a fifo (or a regular file) before the event set is created.
  std::string MakeEventChannel(bool fifo) {
    const std::string path = TempDir() + (fifo ? "/events.fifo" : "/events.jsonl");
    if (fifo) {
      EXPECT_EQ(mkfifo(path.c_str(), 0600), 0);
    } else {
      std::ofstream(path).flush();
    }
    SetEnv("FAKE_NVML_EVENTS", path);
    return path;
  }

  // Loads `machine`, discovers it and creates the waiter.
  void Start(const std::string& machine, bool legacy = false) {
    UseMachine(machine);
    nvml_ = LoadFake(legacy);
    ASSERT_NE(nvml_, nullptr);
    auto session = NvmlSession::Open(*nvml_);
    ASSERT_TRUE(session.ok()) << session.status();
    session_ = std::move(session).value();
    auto inventory = DiscoverGpus(*nvml_);
    ASSERT_TRUE(inventory.ok()) << inventory.status();
    inventory_ = std::move(inventory).value();
    auto waiter = NvmlEventWaiter::Create(*nvml_, inventory_);
    ASSERT_TRUE(waiter.ok()) << waiter.status();
    waiter_ = std::move(waiter).value();
  }

  // Appends lines to the channel (opening a fifo for writing cannot block: the fake
  // holds it open for reading).
  static void Inject(const std::string& path, const std::string& lines) {
    const int fd = open(path.c_str(), O_WRONLY | O_APPEND);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, lines.data(), lines.size()), static_cast<ssize_t>(lines.size()));
    close(fd);
  }

  NvmlEvent WaitForEvent() {
    auto event = waiter_->Wait(kEventDeadline);
    EXPECT_TRUE(event.ok()) << event.status();
    EXPECT_TRUE(event.ok() && event->has_value()) << "no event within the deadline";
    return event.ok() && event->has_value() ? **event : NvmlEvent{};
  }

  void TearDown() override {
    waiter_.reset();
    session_.reset();
    nvml_.reset();
    FakeNvmlTest::TearDown();
  }

  std::unique_ptr<DlNvml> nvml_;
  std::unique_ptr<NvmlSession> session_;
  GpuInventory inventory_;
  std::unique_ptr<NvmlEventWaiter> waiter_;
};

TEST_F(NvmlEventWaiterTest, InjectedXidArrivesThroughFifo) {
  const std::string fifo = MakeEventChannel(/*fifo=*/true);
  Start("dgx-h100.json");
  EXPECT_EQ(waiter_->monitored().size(), 8u);
  EXPECT_TRUE(waiter_->unmonitored().empty());

  const std::string uuid = inventory_.gpus[5].uuid.str();
  Inject(fifo, R"({"gpu":")" + uuid + R"(","type":"xid","xid":79})" "\n");
  NvmlEvent event = WaitForEvent();
  EXPECT_EQ(event.gpu_uuid.str(), uuid);
  EXPECT_EQ(event.type, NvmlEventType::kXidCriticalError);
  EXPECT_EQ(event.event_type, nvmlEventTypeXidCriticalError);
  EXPECT_EQ(event.xid, 79u);
  EXPECT_FALSE(event.mig_uuid.has_value());
  EXPECT_FALSE(event.gpu_instance_id.has_value());
}

TEST_F(NvmlEventWaiterTest, FifoKeepsWorkingAfterWriterCloses) {
  const std::string fifo = MakeEventChannel(/*fifo=*/true);
  Start("pcie-4gpu.json");
  Inject(fifo, R"({"gpu":0,"type":"xid","xid":13})" "\n");
  EXPECT_EQ(WaitForEvent().xid, 13u);
  // The first writer is gone; no end-of-file, so the next wait just times out ...
  auto nothing = waiter_->Wait(milliseconds(50));
  ASSERT_TRUE(nothing.ok()) << nothing.status();
  EXPECT_FALSE(nothing->has_value());
  // ... and a second writer is heard.
  Inject(fifo, R"({"gpu":3,"type":"dbe"})" "\n");
  NvmlEvent event = WaitForEvent();
  EXPECT_EQ(event.gpu_uuid, inventory_.gpus[3].uuid);
  EXPECT_EQ(event.type, NvmlEventType::kDoubleBitEccError);
  EXPECT_EQ(event.xid, 0u);
}

TEST_F(NvmlEventWaiterTest, RegularFileIsFollowedAsItGrows) {
  const std::string file = MakeEventChannel(/*fifo=*/false);
  Start("pcie-4gpu.json");
  // Wait first, append while (or before) the wait blocks: either way the event arrives.
  auto pending = std::async(std::launch::async, [&] { return waiter_->Wait(kEventDeadline); });
  Inject(file, R"({"gpu":1,"type":"sbe"})" "\n");
  auto event = pending.get();
  ASSERT_TRUE(event.ok()) << event.status();
  ASSERT_TRUE(event->has_value());
  EXPECT_EQ((*event)->gpu_uuid, inventory_.gpus[1].uuid);
  EXPECT_EQ((*event)->type, NvmlEventType::kSingleBitEccError);
}

TEST_F(NvmlEventWaiterTest, WaitTimesOutCleanlyWithoutEvents) {
  MakeEventChannel(/*fifo=*/true);
  Start("pcie-4gpu.json");
  const auto start = std::chrono::steady_clock::now();
  auto event = waiter_->Wait(milliseconds(100));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(event.ok()) << event.status();
  EXPECT_FALSE(event->has_value());
  EXPECT_GE(elapsed, milliseconds(100));
  EXPECT_LT(elapsed, kEventDeadline);
}

TEST_F(NvmlEventWaiterTest, WaitTimesOutWhenNoEventChannelIsConfigured) {
  Start("pcie-4gpu.json");
  auto event = waiter_->Wait(milliseconds(20));
  ASSERT_TRUE(event.ok()) << event.status();
  EXPECT_FALSE(event->has_value());
}

TEST_F(NvmlEventWaiterTest, MigEventIsAttributedToTheMigDevice) {
  const std::string fifo = MakeEventChannel(/*fifo=*/true);
  Start("a100-mig.json");
  const MigDeviceInfo& mig = inventory_.gpus[1].mig_devices[1];  // 2g.20gb, GPU instance 3
  Inject(fifo, R"({"gpu":")" + mig.uuid.str() + R"(","type":"xid","xid":31})" "\n");
  NvmlEvent event = WaitForEvent();
  EXPECT_EQ(event.gpu_uuid, inventory_.gpus[1].uuid);
  ASSERT_TRUE(event.mig_uuid.has_value());
  EXPECT_EQ(*event.mig_uuid, mig.uuid);
  EXPECT_EQ(event.gpu_instance_id, 3u);
  EXPECT_EQ(event.compute_instance_id, 0u);
  EXPECT_EQ(event.xid, 31u);
}

TEST_F(NvmlEventWaiterTest, LegacyWaitCarriesNoInstanceIds) {
  const std::string fifo = MakeEventChannel(/*fifo=*/true);
  Start("a100-mig.json", /*legacy=*/true);
  ASSERT_EQ(nvml_->ResolvedSymbol("EventSetWait"), "nvmlEventSetWait");
  const MigDeviceInfo& mig = inventory_.gpus[0].mig_devices[6];
  Inject(fifo, R"({"gpu":")" + mig.uuid.str() + R"(","type":"xid","xid":43})" "\n");
  NvmlEvent event = WaitForEvent();
  EXPECT_EQ(event.gpu_uuid, inventory_.gpus[0].uuid);
  EXPECT_FALSE(event.mig_uuid.has_value());
  EXPECT_FALSE(event.gpu_instance_id.has_value());
  EXPECT_EQ(event.xid, 43u);
}

TEST_F(NvmlEventWaiterTest, LostGpuIsUnmonitoredAndItsEventsAreDropped) {
  const std::string fifo = MakeEventChannel(/*fifo=*/true);
  UseMachine("pcie-4gpu.json");
  nvml_ = LoadFake();
  ASSERT_NE(nvml_, nullptr);
  auto session = NvmlSession::Open(*nvml_);
  ASSERT_TRUE(session.ok());
  session_ = std::move(session).value();
  auto inventory = DiscoverGpus(*nvml_);
  ASSERT_TRUE(inventory.ok());
  inventory_ = *inventory;
  // GPU 2 falls off the bus after discovery.
  SetEnv("FAKE_NVML_LOST_GPUS", inventory_.gpus[2].uuid.str());
  auto waiter = NvmlEventWaiter::Create(*nvml_, inventory_);
  ASSERT_TRUE(waiter.ok()) << waiter.status();
  waiter_ = std::move(waiter).value();
  ASSERT_EQ(waiter_->unmonitored().size(), 1u);
  EXPECT_EQ(waiter_->unmonitored()[0].first, inventory_.gpus[2].uuid);
  EXPECT_EQ(waiter_->unmonitored()[0].second.message(),
            "GPU 2: nvmlDeviceGetHandleByIndex: GPU is lost (NVML_ERROR_GPU_IS_LOST)");
  EXPECT_EQ(waiter_->monitored().size(), 3u);

  // Events for the unregistered GPU and malformed lines are skipped, not delivered.
  ::testing::internal::CaptureStderr();
  Inject(fifo, "not json\n"
               R"({"gpu":2,"type":"xid","xid":79})" "\n"
               R"({"gpu":0,"type":"xid","xid":48})" "\n");
  NvmlEvent event = WaitForEvent();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(event.gpu_uuid, inventory_.gpus[0].uuid);
  EXPECT_EQ(event.xid, 48u);
  EXPECT_NE(err.find("fake NVML: ignoring event line \"not json\""), std::string::npos) << err;
}

}  // namespace
}  // namespace phalanx::nvml
