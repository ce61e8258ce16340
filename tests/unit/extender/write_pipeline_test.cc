// The write pipeline: WritePool lanes and fan-out, the WriteBudget's lanes and deadlines,
// BudgetedTransport's per-request deadline, and the gang commit over a pool (parallel writes,
// all-or-nothing when a devices patch fails, a single-pod bind while a gang's writes are stuck).
#include <atomic>
#include <condition_variable>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "extender/writes/budgeted_transport.h"
#include "extender/writes/write_budget.h"
#include "extender/writes/write_pool.h"
#include "tests/unit/extender/test_cluster.h"

namespace phalanx::extender::testing {
namespace {

using namespace std::chrono_literals;

constexpr auto kHang = 30s;  // only catches hangs

bool WaitUntil(const std::function<bool()>& cond, std::chrono::seconds deadline) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (!cond()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(5ms);  // polling interval
  }
  return true;
}

// A gate that tasks wait on until the test opens it (bounded by kHang).
class Gate {
 public:
  void Wait() {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, kHang, [&] { return open_; });
  }
  void Open() {
    {
      std::lock_guard lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

TEST(WritePoolTest, BindTaskRunsWhileEveryBulkThreadIsBusy) {
  WritePool pool(4);
  Gate gate;
  std::atomic<int> started{0};
  for (int i = 0; i < 10; ++i) {
    pool.Submit([&] {
      started++;
      gate.Wait();
    });
  }
  std::promise<WriteLane> ran;
  pool.Submit([&] { ran.set_value(CurrentWriteLane()); }, WriteLane::kBind);
  auto f = ran.get_future();
  ASSERT_EQ(f.wait_for(kHang), std::future_status::ready) << "the bind task queued behind the bulk tasks";
  EXPECT_EQ(f.get(), WriteLane::kBind);
  EXPECT_LE(started.load(), 3) << "the kBind thread took a bulk task";
  gate.Open();
  pool.Drain();
  EXPECT_EQ(started.load(), 10);
}

// One task wakes one thread: waking all 32 writers for each single-pod bind cost ~0.4 ms of CPU
// per bind on 2 cores. Each task here is waited for before the next, so every thread but the
// one that took it sleeps throughout.
TEST(WritePoolTest, ATaskWakesOneThreadNotThePool) {
  WritePool pool(32);
  pool.Drain();  // every thread started and waiting
  ASSERT_TRUE(WaitUntil([&] { return pool.wakeups() == 0; }, kHang));
  constexpr int kTasks = 50;
  for (int i = 0; i < kTasks; ++i) {
    std::promise<void> ran;
    pool.Submit([&] { ran.set_value(); }, i % 2 == 0 ? WriteLane::kBind : WriteLane::kBulk);
    ASSERT_EQ(ran.get_future().wait_for(kHang), std::future_status::ready);
    pool.Drain();
  }
  EXPECT_LE(pool.wakeups(), 2u * kTasks) << "a push woke threads that had nothing to take";
  // Not one per task: a thread still on its way back to waiting takes the next task without a
  // wake-up (49 of 50 under load). The wake-all pool this guards against made ~32 per task.
  EXPECT_GT(pool.wakeups(), 0u);
}

TEST(WritePoolTest, FanOutRunsTasksInParallelThenOnceAfterTheLast) {
  WritePool pool(5);  // 4 threads take bulk tasks
  std::mutex mu;
  std::condition_variable cv;
  int in_flight = 0, most = 0, done = 0, then_runs = 0;
  std::vector<WritePool::Task> tasks;
  for (int i = 0; i < 12; ++i) {
    tasks.push_back([&] {
      std::unique_lock lock(mu);
      most = std::max(most, ++in_flight);
      cv.notify_all();
      cv.wait_for(lock, kHang, [&] { return most >= 4; });  // parallel: four meet here
      --in_flight;
      ++done;
    });
  }
  pool.FanOut(std::move(tasks), [&] {
    std::lock_guard lock(mu);
    EXPECT_EQ(done, 12) << "`then` ran before the last task";
    then_runs++;
  });
  pool.Drain();  // includes `then`, which the last task ran
  EXPECT_EQ(most, 4);
  EXPECT_EQ(then_runs, 1);
  bool ran_empty = false;
  pool.FanOut({}, [&] { ran_empty = true; });
  pool.Drain();
  EXPECT_TRUE(ran_empty);
}

TEST(WriteBudgetTest, RefillsAtQpsAfterTheBurst) {
  WriteBudget budget(50, 5);
  const auto t0 = WriteClock::now();
  for (int i = 0; i < 15; ++i) ASSERT_TRUE(budget.Acquire(WriteLane::kBulk));
  // 5 at once, then 10 at 50/s: >= 200 ms (upper bound only catches hangs).
  const auto took = WriteClock::now() - t0;
  EXPECT_GE(took, 180ms);
  EXPECT_LT(took, kHang);
  EXPECT_TRUE(WriteBudget(0, 1).Acquire(WriteLane::kBulk)) << "qps 0 = unlimited";
}

TEST(WriteBudgetTest, PastTheDeadlineNothingIsTaken) {
  WriteBudget budget(1, 1);
  ASSERT_TRUE(budget.Acquire(WriteLane::kBulk));                       // the burst
  EXPECT_FALSE(budget.Acquire(WriteLane::kBind, WriteClock::now() + 50ms));  // next token in 1 s
}

TEST(WriteBudgetTest, BindWaiterTakesTheNextTokenBeforeWaitingBulk) {
  WriteBudget budget(10, 1);
  ASSERT_TRUE(budget.Acquire(WriteLane::kBulk));  // empty now; a token every 100 ms
  std::mutex mu;
  std::vector<std::string> order;
  std::vector<std::thread> bulk;
  for (int i = 0; i < 4; ++i) {
    bulk.emplace_back([&] {
      ASSERT_TRUE(budget.Acquire(WriteLane::kBulk));
      std::lock_guard lock(mu);
      order.push_back("bulk");
    });
  }
  std::thread bind([&] {
    ASSERT_TRUE(budget.Acquire(WriteLane::kBind));
    std::lock_guard lock(mu);
    order.push_back("bind");
  });
  bind.join();
  for (auto& t : bulk) t.join();
  ASSERT_EQ(order.size(), 5u);
  // The bulk threads started first, yet at most one (the token that may have refilled before
  // the bind waiter arrived) goes ahead of it.
  const auto pos = std::find(order.begin(), order.end(), "bind") - order.begin();
  EXPECT_LE(pos, 1) << "bind was served " << pos + 1 << "th";
}

class RecordingTransport final : public kube::Transport {
 public:
  Result<kube::HttpResponse> Send(const kube::HttpRequest& request) override {
    timeouts.push_back(request.timeout);
    return kube::HttpResponse{.status = 200, .headers = {}, .body = "{}"};
  }
  Result<std::unique_ptr<kube::ResponseStream>> OpenStream(const kube::HttpRequest&) override {
    return UnimplementedError("no streams");
  }
  std::vector<std::chrono::milliseconds> timeouts;
};

TEST(BudgetedTransportTest, BoundsEachRequestByTheTaskDeadline) {
  auto inner = std::make_shared<RecordingTransport>();
  WriteBudget budget(0, 1);
  BudgetedTransport transport(inner, budget, 10s);
  kube::HttpRequest req;
  ASSERT_TRUE(transport.Send(req).ok());
  {
    ScopedWriteDeadline bounded(WriteClock::now() + 2500ms);
    ASSERT_TRUE(transport.Send(req).ok());
  }
  {
    ScopedWriteDeadline bounded(WriteClock::now() - 1ms);
    auto r = transport.Send(req);
    EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded);
  }
  ASSERT_EQ(inner->timeouts.size(), 2u) << "a request past its deadline was sent";
  EXPECT_EQ(inner->timeouts[0], 10s);
  EXPECT_EQ(inner->timeouts[1], 2s);  // whole seconds left
}

// A ClusterWriter whose gang writes (devices, bind of a gang member) can be held, and that
// counts the writes in flight at once.
class SlowWriter final : public ClusterWriter {
 public:
  explicit SlowWriter(std::string gang_prefix) : prefix_(std::move(gang_prefix)) {}
  Status PatchPodDevices(const PodRef& pod, const std::string& devices) override {
    return Slow(pod, [&] { return inner.PatchPodDevices(pod, devices); });
  }
  Status BindPod(const PodRef& pod, const std::string& node) override {
    return Slow(pod, [&] { return inner.BindPod(pod, node); });
  }
  Status LiftGangGate(const PodRef& pod) override { return inner.LiftGangGate(pod); }
  Status EvictPod(const PodRef& pod, const std::string& reason) override { return inner.EvictPod(pod, reason); }
  Status DeletePod(const PodRef& pod, const std::string& reason) override { return inner.DeletePod(pod, reason); }
  Status RequestGracefulPreemption(const std::string& ns, const std::string& job, const std::string& body) override {
    return inner.RequestGracefulPreemption(ns, job, body);
  }

  RecordingWriter inner;
  Gate gang_gate;
  std::atomic<int> most_in_flight{0};
  std::atomic<int> gang_waiting{0};

 private:
  template <typename F>
  Status Slow(const PodRef& pod, F write) {
    const int now = ++in_flight_;
    for (int m = most_in_flight.load(); now > m && !most_in_flight.compare_exchange_weak(m, now);) {
    }
    if (pod.name.rfind(prefix_, 0) == 0) {
      gang_waiting++;
      gang_gate.Wait();
    }
    Status st = write();
    --in_flight_;
    return st;
  }
  std::string prefix_;
  std::atomic<int> in_flight_{0};
};

struct PoolCluster {
  explicit PoolCluster(int writers) : ext(DefaultConfig(), clock, writer, leadership, writers) {}
  phalanx::testing::FakeClock clock;
  SlowWriter writer{"train-"};
  StaticLeadership leadership{true};
  Extender ext;
};

// Admits an 8 x 2-GPU gang on two DGX nodes; returns the members and their pinned nodes.
void AdmitGang(Extender& ext, std::vector<PodInfo>& members, std::vector<std::string>& pinned) {
  for (const auto* n : {"dgx-0", "dgx-1", "dgx-2"}) ASSERT_TRUE(ext.OnNode(DgxNode(n)).ok());
  for (int i = 0; i < 8; ++i) {
    members.push_back(GangPod("train", i, 2, 8));
    ext.OnPod(members.back());
  }
  ext.Tick();
  for (PodInfo p : members) {
    p.gated = false;
    ext.OnPod(p);
    FilterResult r = ext.Filter(Args(p, {"dgx-0", "dgx-1"}));
    ASSERT_EQ(r.passed.size(), 1u) << p.name;
    pinned.push_back(std::string(r.passed[0]));
  }
}

TEST(GangCommitTest, SinglePodBindIsAnsweredWhileTheGangsWritesAreStuck) {
  PoolCluster c(4);
  std::vector<PodInfo> members;
  std::vector<std::string> pinned;
  AdmitGang(c.ext, members, pinned);
  std::vector<BindProbe> probes(8);
  for (int i = 0; i < 8; ++i) c.ext.Bind(BindOf(members[i], pinned[i]), probes[i].Callback());
  // Every bulk thread is now inside a gang devices patch, held.
  ASSERT_TRUE(WaitUntil([&] { return c.writer.gang_waiting.load() >= 3; }, kHang));
  const PodInfo single = GpuPod("solo", 1);
  c.ext.OnPod(single);
  BindProbe solo;
  c.ext.Bind(BindOf(single, "dgx-2"), solo.Callback());
  EXPECT_EQ(solo.Wait(), "") << "the single-pod bind waited behind the gang";
  for (auto& p : probes) EXPECT_FALSE(p.Done());
  c.writer.gang_gate.Open();
  for (auto& p : probes) EXPECT_EQ(p.Wait(), "");
  c.ext.DrainForTest();
  EXPECT_EQ(c.writer.inner.CallsOf("bind").size(), 9u);
  EXPECT_GE(c.writer.most_in_flight.load(), 3) << "the gang's writes were not made in parallel";
}

TEST(GangCommitTest, ADevicesPatchFailureBindsNobodyAndUndoesTheRest) {
  PoolCluster c(6);
  c.writer.gang_gate.Open();
  std::vector<PodInfo> members;
  std::vector<std::string> pinned;
  AdmitGang(c.ext, members, pinned);
  c.writer.inner.FailOn("devices", members[5].ns + "/" + members[5].name);
  std::vector<BindProbe> probes(8);
  for (int i = 0; i < 8; ++i) c.ext.Bind(BindOf(members[i], pinned[i]), probes[i].Callback());
  for (auto& p : probes) EXPECT_NE(p.Wait().find("commit point was not reached"), std::string::npos);
  c.ext.DrainForTest();
  EXPECT_TRUE(c.writer.inner.CallsOf("bind").empty()) << "a member was bound without the commit point";
  // Every annotation that landed was removed again.
  std::map<std::string, int> net;
  for (const auto& call : c.writer.inner.CallsOf("devices")) net[call.target] += call.value.empty() ? -1 : 1;
  for (const auto& [pod, n] : net) EXPECT_EQ(n, 0) << pod;
  EXPECT_EQ(c.ext.StateJson()["cluster"]["freeGpus"], 24);
  EXPECT_EQ(c.ext.HeldBinds(), 0u);
}

}  // namespace
}  // namespace phalanx::extender::testing
