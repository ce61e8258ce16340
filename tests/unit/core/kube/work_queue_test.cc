#include "core/kube/work_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <map>
#include <thread>

#include "tests/fakes/clock/fake_clock.h"
#include "tests/unit/core/kube/test_server.h"

namespace phalanx::kube {
namespace {

using namespace std::chrono_literals;
using testing::WaitUntil;

TEST(WorkQueueTest, DeduplicatesQueuedAndInFlightKeys) {
  WorkQueue q;
  q.Add("a");
  q.Add("a");
  q.Add("b");
  q.Add("a");
  EXPECT_EQ(q.Len(), 2u);
  auto k = q.Get();
  ASSERT_EQ(k, "a");
  q.Add("a");  // while processing: not handed to another worker
  q.Add("a");
  EXPECT_EQ(q.Len(), 1u);
  EXPECT_EQ(q.Get(), "b");
  EXPECT_EQ(q.Len(), 0u);
  q.Done("a");  // re-queued once
  EXPECT_EQ(q.Len(), 1u);
  EXPECT_EQ(q.Get(), "a");
  q.Done("a");
  q.Done("b");
  EXPECT_EQ(q.Len(), 0u);
}

TEST(WorkQueueTest, PerItemExponentialBackoffAndForget) {
  WorkQueueOptions o;
  o.base_delay = 5ms;
  o.max_delay = 30ms;
  o.qps = 0;  // no overall limit
  WorkQueue q(o);
  EXPECT_EQ(q.NextDelay("a"), 5ms);
  EXPECT_EQ(q.NextDelay("a"), 10ms);
  EXPECT_EQ(q.NextDelay("a"), 20ms);
  EXPECT_EQ(q.NextDelay("a"), 30ms);  // capped
  EXPECT_EQ(q.NextDelay("b"), 5ms);   // per item
  EXPECT_EQ(q.NumRequeues("a"), 4);
  q.Forget("a");
  EXPECT_EQ(q.NumRequeues("a"), 0);
  EXPECT_EQ(q.NextDelay("a"), 5ms);
}

TEST(WorkQueueTest, OverallRateLimitAppliesAcrossKeys) {
  phalanx::testing::FakeClock clock;
  WorkQueueOptions o;
  o.base_delay = 1ms;
  o.qps = 2;
  o.burst = 1;
  WorkQueue q(o, &clock);
  EXPECT_EQ(q.NextDelay("a"), 1ms);
  EXPECT_EQ(q.NextDelay("b"), 500ms);  // the bucket, not b's own backoff
  EXPECT_EQ(q.NextDelay("c"), 1000ms);
}

TEST(WorkQueueTest, DelayedAddsBecomeReadyWhenTheClockSaysSo) {
  phalanx::testing::FakeClock clock;
  WorkQueue q({}, &clock);
  q.AddAfter("later", 10s);
  q.AddAfter("later", 20s);
  EXPECT_EQ(q.Len(), 0u);
  auto got = std::async(std::launch::async, [&] { return q.Get(); });
  EXPECT_EQ(got.wait_for(100ms), std::future_status::timeout);
  clock.Advance(10s);
  ASSERT_EQ(got.wait_for(20s), std::future_status::ready);
  EXPECT_EQ(got.get(), "later");
  q.Done("later");
  clock.Advance(10s);  // the second delayed add: the key is queued again (not lost, not doubled)
  EXPECT_EQ(q.Get(), "later");
  q.Done("later");
  EXPECT_EQ(q.Len(), 0u);
}

TEST(WorkQueueTest, WorkersRetryFailuresAndNeverShareAKey) {
  WorkQueueOptions o;
  o.base_delay = 1ms;
  o.qps = 0;
  WorkQueue q(o);
  std::mutex mu;
  std::map<std::string, int> calls, active;
  std::atomic<bool> overlap{false};
  std::thread runner([&] {
    q.Run(4, [&](const std::string& key) -> Status {
      int n;
      {
        std::lock_guard lock(mu);
        if (active[key]++ > 0) overlap = true;
        n = ++calls[key];
      }
      std::this_thread::sleep_for(1ms);  // widen the window for an overlap (not for sync)
      {
        std::lock_guard lock(mu);
        --active[key];
      }
      if (key == "flaky" && n < 3) return UnavailableError("not yet");
      return OkStatus();
    });
  });
  q.Add("flaky");
  for (int i = 0; i < 200; ++i) {
    std::string key = "k";
    key += std::to_string(i % 10);
    q.Add(key);
  }
  ASSERT_TRUE(WaitUntil([&] {
    std::lock_guard lock(mu);
    return calls["flaky"] == 3 && calls.size() == 11;
  }));
  ASSERT_TRUE(WaitUntil([&] { return q.NumRequeues("flaky") == 0; }));  // forgotten after success
  q.ShutDown();
  runner.join();
  EXPECT_FALSE(overlap.load());
  EXPECT_EQ(calls["flaky"], 3);
}

TEST(WorkQueueTest, ShutDownWakesIdleWorkers) {
  WorkQueue q;
  std::thread runner([&] { q.Run(3, [](const std::string&) { return OkStatus(); }); });
  std::this_thread::sleep_for(20ms);  // let workers block in Get() (not needed for correctness)
  q.ShutDown();
  runner.join();
  EXPECT_TRUE(q.ShuttingDown());
  q.Add("x");
  EXPECT_EQ(q.Get(), std::nullopt);
}

}  // namespace
}  // namespace phalanx::kube
