#include "operator/controller/slow_start.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace phalanx::op {
namespace {

// The batch of index i with batches of 1, 2, 4, ... capped at `max_batch`: [begin, end).
std::pair<int, int> BatchOf(int i, int count, int max_batch) {
  int begin = 0;
  for (int size = 1;; size = std::min(size * 2, max_batch)) {
    const int end = std::min(begin + size, count);
    if (i < end) return {begin, end};
    begin = end;
  }
}

// Records calls; each call waits (up to a hang deadline) until every member of its batch has
// started, which only happens when the batch runs in parallel, and checks that every earlier
// batch had finished before it started.
class BatchProbe {
 public:
  BatchProbe(int count, int max_batch) : count_(count), max_batch_(max_batch) {}

  Status Call(int i) {
    const auto [begin, end] = BatchOf(i, count_, max_batch_);
    std::unique_lock lock(mu_);
    for (int j = 0; j < begin; ++j) {
      if (!finished_.count(j)) errors_.push_back("index " + std::to_string(i) + " started before " + std::to_string(j) + " finished");
    }
    started_.insert(i);
    cv_.notify_all();
    const bool together = cv_.wait_for(lock, std::chrono::seconds(30), [&] {
      for (int j = begin; j < end; ++j) {
        if (!started_.count(j)) return false;
      }
      return true;
    });
    if (!together) errors_.push_back("batch [" + std::to_string(begin) + "," + std::to_string(end) + ") did not run in parallel");
    finished_.insert(i);
    return i == fail_at_ ? InternalError("refused " + std::to_string(i)) : OkStatus();
  }

  int fail_at_ = -1;
  std::vector<std::string> errors() {
    std::lock_guard lock(mu_);
    return errors_;
  }
  std::set<int> started() {
    std::lock_guard lock(mu_);
    return started_;
  }

 private:
  const int count_, max_batch_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<int> started_, finished_;
  std::vector<std::string> errors_;
};

TEST(SlowStartBatchTest, SixtyFourCallsRunInBatchesOfOneTwoFourUpToTheCap) {
  BatchProbe probe(64, 32);
  int attempted = 0;
  EXPECT_TRUE(SlowStartBatch(64, 32, [&](int i) { return probe.Call(i); }, &attempted).ok());
  EXPECT_EQ(attempted, 64);
  EXPECT_EQ(probe.started().size(), 64u);
  for (const auto& e : probe.errors()) ADD_FAILURE() << e;
}

TEST(SlowStartBatchTest, AFailureStopsAfterItsBatchAndIsReturned) {
  {  // the first call fails: one request, not 64
    BatchProbe probe(64, 32);
    probe.fail_at_ = 0;
    int attempted = 0;
    const Status s = SlowStartBatch(64, 32, [&](int i) { return probe.Call(i); }, &attempted);
    EXPECT_EQ(s.message(), "refused 0");
    EXPECT_EQ(attempted, 1);
    EXPECT_EQ(probe.started(), std::set<int>{0});
  }
  {  // index 4 fails in batch [3, 7): that batch completes, nothing after it starts
    BatchProbe probe(64, 32);
    probe.fail_at_ = 4;
    int attempted = 0;
    const Status s = SlowStartBatch(64, 32, [&](int i) { return probe.Call(i); }, &attempted);
    EXPECT_EQ(s.message(), "refused 4");
    EXPECT_EQ(attempted, 7);
    EXPECT_EQ(probe.started(), (std::set<int>{0, 1, 2, 3, 4, 5, 6}));
    for (const auto& e : probe.errors()) ADD_FAILURE() << e;
  }
}

TEST(SlowStartBatchTest, NothingToDoAndACapOfOneIsSerial) {
  int attempted = -1;
  EXPECT_TRUE(SlowStartBatch(0, 32, [](int) { return InternalError("never called"); }, &attempted).ok());
  EXPECT_EQ(attempted, 0);
  BatchProbe probe(5, 1);
  EXPECT_TRUE(SlowStartBatch(5, 1, [&](int i) { return probe.Call(i); }, &attempted).ok());
  EXPECT_EQ(attempted, 5);
  for (const auto& e : probe.errors()) ADD_FAILURE() << e;
}

}  // namespace
}  // namespace phalanx::op
