// ShutdownSignal (core/base/shutdown_signal.h). Each ctest case runs in its own process, so real
// signals sent here reach only this test's ShutdownSignal.
#include "core/base/shutdown_signal.h"

#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace phalanx {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class LogCapture {
 public:
  ShutdownSignal::LogSink Sink() {
    return [this](std::string_view line) {
      std::lock_guard<std::mutex> lock(mu_);
      lines_.emplace_back(line);
    };
  }
  std::vector<std::string> lines() {
    std::lock_guard<std::mutex> lock(mu_);
    return lines_;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> lines_;
};

TEST(ShutdownSignalTest, RequestShutdownRunsCallbacksOnceInOrder) {
  LogCapture log;
  ShutdownSignal shutdown(log.Sink());
  std::vector<int> order;
  std::mutex mu;
  shutdown.OnShutdown([&] { std::lock_guard<std::mutex> l(mu); order.push_back(1); });
  shutdown.OnShutdown([&] { std::lock_guard<std::mutex> l(mu); order.push_back(2); });
  EXPECT_FALSE(shutdown.shutdown_started());
  EXPECT_FALSE(shutdown.WaitFor(milliseconds(0)));
  shutdown.RequestShutdown();
  shutdown.RequestShutdown();  // ignored: never the "second signal" exit
  ASSERT_TRUE(shutdown.WaitFor(seconds(20)));
  shutdown.Wait();  // returns at once now
  EXPECT_TRUE(shutdown.shutdown_started());
  EXPECT_EQ(shutdown.signal_number(), 0);
  std::lock_guard<std::mutex> l(mu);
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_EQ(log.lines(), (std::vector<std::string>{"Shutdown requested, shutting down"}));
}

TEST(ShutdownSignalTest, SigtermFromOutsideStartsShutdown) {
  LogCapture log;
  ShutdownSignal shutdown(log.Sink());
  std::atomic<int> calls{0};
  shutdown.OnShutdown([&] { ++calls; });
  // A thread started after the ShutdownSignal inherits the blocked mask, so the process-directed
  // signal can only be taken by the waiter.
  std::thread worker([] {});
  worker.join();
  ASSERT_EQ(kill(getpid(), SIGTERM), 0);
  ASSERT_TRUE(shutdown.WaitFor(seconds(20)));
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(shutdown.signal_number(), SIGTERM);
  ASSERT_EQ(log.lines().size(), 1u);
  EXPECT_EQ(log.lines()[0],
            "Received signal signal=SIGTERM, shutting down (send it again to exit immediately)");
}

TEST(ShutdownSignalTest, SigintAlsoStartsShutdown) {
  ShutdownSignal shutdown([](std::string_view) {});
  ASSERT_EQ(kill(getpid(), SIGINT), 0);
  ASSERT_TRUE(shutdown.WaitFor(seconds(20)));
  EXPECT_EQ(shutdown.signal_number(), SIGINT);
}

TEST(ShutdownSignalTest, CallbackRegisteredAfterShutdownRunsImmediately) {
  ShutdownSignal shutdown([](std::string_view) {});
  shutdown.RequestShutdown();
  ASSERT_TRUE(shutdown.WaitFor(seconds(20)));
  bool ran = false;
  shutdown.OnShutdown([&] { ran = true; });
  EXPECT_TRUE(ran);
}

TEST(ShutdownSignalTest, DestructorWithoutShutdownReturns) {
  std::atomic<int> calls{0};
  {
    ShutdownSignal shutdown([](std::string_view) {});
    shutdown.OnShutdown([&] { ++calls; });
  }
  EXPECT_EQ(calls.load(), 0);
  ShutdownSignal again([](std::string_view) {});  // one at a time, so a new one is fine now
}

TEST(ShutdownSignalDeathTest, SecondSignalExitsImmediatelyWithStatusOne) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        ShutdownSignal shutdown;  // logs to stderr
        // The graceful path hangs: only the second signal can end the process.
        shutdown.OnShutdown([] {
          for (;;) pause();
        });
        kill(getpid(), SIGTERM);
        while (!shutdown.shutdown_started()) std::this_thread::yield();
        kill(getpid(), SIGTERM);
        for (;;) pause();
      },
      ::testing::ExitedWithCode(1), "Received second signal signal=SIGTERM, exiting immediately");
}

}  // namespace
}  // namespace phalanx
