// The write latency (FakeApiServerOptions::write_latency, /fake/write-latency): every mutating
// request waits, reads and watches do not, and parallel writes wait in parallel, as on a real
// server whose etcd commits take that long. Lower bounds are exact (a timer); upper bounds are
// generous (at least 10x what they measure) yet below what a serialised server would take.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/fakes/apiserver/fake_apiserver.h"
#include "tests/fakes/apiserver/raw_client.h"

namespace phalanx::fakes::apiserver {
namespace {

using json::Json;
using testing::RawClient;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr const char* kPods = "/api/v1/namespaces/ml/pods";
constexpr milliseconds kLatency{1500};

Json Pod(const std::string& name) {
  return {{"metadata", {{"name", name}}},
          {"spec", {{"containers", Json::array({{{"name", "c"}, {"image", "busybox"}}})}}}};
}

template <typename F>
milliseconds Timed(F&& f) {
  const auto start = Clock::now();
  f();
  return std::chrono::duration_cast<milliseconds>(Clock::now() - start);
}

class WriteLatencyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FakeApiServerOptions options;
    options.write_latency = kLatency;
    auto started = FakeApiServer::Start(options);
    ASSERT_TRUE(started.ok()) << started.status();
    server_ = std::move(started).value();
    client_ = std::make_unique<RawClient>(server_->url());
  }
  std::unique_ptr<FakeApiServer> server_;
  std::unique_ptr<RawClient> client_;
};

TEST_F(WriteLatencyTest, EveryKindOfWriteWaitsAndReadsAndWatchesDoNot) {
  EXPECT_GE(Timed([&] { ASSERT_EQ(client_->Post(kPods, Pod("w")).status, 201); }), kLatency);
  EXPECT_GE(Timed([&] {
              ASSERT_EQ(client_->Patch(std::string(kPods) + "/w", R"({"metadata":{"labels":{"a":"b"}}})",
                                       "application/merge-patch+json")
                            .status,
                        200);
            }),
            kLatency);
  EXPECT_GE(Timed([&] {
              ASSERT_EQ(client_->Post(std::string(kPods) + "/w/binding",
                                      Json{{"metadata", {{"name", "w"}}}, {"target", {{"kind", "Node"}, {"name", "n1"}}}})
                            .status,
                        201);
            }),
            kLatency);

  // Reads: expected a few ms; a quarter of the latency is a margin of 50x and more.
  EXPECT_LT(Timed([&] { ASSERT_EQ(client_->Get(std::string(kPods) + "/w").status, 200); }), kLatency / 4);
  EXPECT_LT(Timed([&] { ASSERT_EQ(client_->Get(kPods).status, 200); }), kLatency / 4);
  // A watch starts, and replays the pod, at once.
  EXPECT_LT(Timed([&] {
              auto stream = client_->Watch(std::string(kPods) + "?watch=1");
              ASSERT_TRUE(stream);
              EXPECT_EQ(testing::NextEvent(*stream)["type"], "ADDED");
            }),
            kLatency / 4);
  // The in-process API is not HTTP: no latency.
  EXPECT_LT(Timed([&] { ASSERT_TRUE(server_->Create("pods", [] {
                                                   Json p = Pod("direct");
                                                   p["metadata"]["namespace"] = "ml";
                                                   return p;
                                                 }())
                                        .ok()); }),
            kLatency / 4);

  EXPECT_GE(Timed([&] {
              ASSERT_EQ(client_->Post(std::string(kPods) + "/w/eviction", Json{{"metadata", {{"name", "w"}}}}).status,
                        201);
            }),
            kLatency);
  EXPECT_GE(Timed([&] { ASSERT_EQ(client_->Delete(std::string(kPods) + "/direct").status, 200); }), kLatency);
}

TEST_F(WriteLatencyTest, ParallelWritesWaitConcurrently) {
  // 24 writers: a serialised server would need 36 s; concurrent waits take about 1.5 s.
  constexpr int kWriters = 24;
  std::atomic<int> created{0};
  const milliseconds elapsed = Timed([&] {
    std::vector<std::thread> writers;
    for (int i = 0; i < kWriters; ++i) {
      writers.emplace_back([&, i] {
        RawClient client(server_->url());
        if (client.Post(kPods, Pod("p" + std::to_string(i))).status == 201) ++created;
      });
    }
    for (auto& t : writers) t.join();
  });
  EXPECT_EQ(created.load(), kWriters);
  EXPECT_GE(elapsed, kLatency);
  EXPECT_LT(elapsed, kLatency * 15) << "writes were serialised";
}

TEST_F(WriteLatencyTest, ControlEndpointChangesItAndRejectsBadValuesWithoutChangingIt) {
  for (const char* bad : {"", "abc", "-5", "10x"}) {
    auto r = client_->Send("POST", std::string("/fake/write-latency?ms=") + bad);
    EXPECT_EQ(r.status, 400) << bad << ": " << r.body;
    EXPECT_NE(r.body.find("ms must be"), std::string::npos) << r.body;
  }
  EXPECT_GE(Timed([&] { ASSERT_EQ(client_->Post(kPods, Pod("still-slow")).status, 201); }), kLatency);
  // Clearing faults keeps it: it is a property of the server, not a fault.
  ASSERT_EQ(client_->Send("DELETE", "/fake/faults").status, 200);
  EXPECT_GE(Timed([&] { ASSERT_EQ(client_->Post(kPods, Pod("after-clear")).status, 201); }), kLatency);

  ASSERT_EQ(client_->Send("POST", "/fake/write-latency?ms=0").status, 200);
  EXPECT_LT(Timed([&] { ASSERT_EQ(client_->Post(kPods, Pod("fast")).status, 201); }), kLatency / 4);
}

}  // namespace
}  // namespace phalanx::fakes::apiserver
