#include "core/kube/event_recorder.h"

#include <gtest/gtest.h>

#include <atomic>

#include "tests/fakes/clock/fake_clock.h"
#include "tests/unit/core/kube/test_server.h"

namespace phalanx::kube {
namespace {

using namespace std::chrono_literals;
using testing::ScriptedServer;

class EventRecorderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.Set([this](const http::Request& r) -> http::Response {
      if (r.method == "PATCH" && patch_not_found_) {
        return {404, "application/json", {}, R"({"kind":"Status","code":404,"reason":"NotFound","message":"gone"})"};
      }
      return {r.method == "POST" ? 201 : 200, "application/json", {}, r.body};
    });
    ClientOptions o;
    o.qps = 0;
    o.clock = &clock_;
    client_ = std::move(*KubeClient::Create(server_.Config(), o));
    EventRecorderOptions eo;
    eo.reporting_controller = "phalanx.io/extender";
    eo.reporting_instance = "extender-0";
    eo.max_queue = 3;
    recorder_ = std::make_unique<EventRecorder>(*client_, eo, &clock_);
  }
  ObjectReference Pod(const std::string& name) {
    return ObjectReference::FromObject(
        Json{{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", {{"namespace", "ml"}, {"name", name}, {"uid", std::string("u-").append(name)}}}});
  }

  ScriptedServer server_;
  phalanx::testing::FakeClock clock_;
  std::unique_ptr<KubeClient> client_;
  std::unique_ptr<EventRecorder> recorder_;
  std::atomic<bool> patch_not_found_{false};
};

TEST_F(EventRecorderTest, CreatesAnEventsK8sIoV1Event) {
  recorder_->Record(Pod("w-0"), "Warning", "Preempted", "Preempt", "preempted by ml/big");
  ASSERT_TRUE(recorder_->Flush().ok());
  auto reqs = server_.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].method, "POST");
  EXPECT_EQ(reqs[0].target, "/apis/events.k8s.io/v1/namespaces/ml/events");
  Json ev = Json::parse(reqs[0].body);
  EXPECT_EQ(ev["apiVersion"], "events.k8s.io/v1");
  EXPECT_EQ(ev["kind"], "Event");
  EXPECT_EQ(ev["metadata"]["name"].get<std::string>().rfind("w-0.", 0), 0u);
  EXPECT_EQ(ev["reportingController"], "phalanx.io/extender");
  EXPECT_EQ(ev["reportingInstance"], "extender-0");
  EXPECT_EQ(ev["type"], "Warning");
  EXPECT_EQ(ev["reason"], "Preempted");
  EXPECT_EQ(ev["action"], "Preempt");
  EXPECT_EQ(ev["note"], "preempted by ml/big");
  EXPECT_EQ(ev["regarding"]["kind"], "Pod");
  EXPECT_EQ(ev["regarding"]["uid"], "u-w-0");
  EXPECT_TRUE(ev["eventTime"].get<std::string>().ends_with("Z"));
  EXPECT_FALSE(ev.contains("series"));
  ASSERT_TRUE(recorder_->Flush().ok());
  EXPECT_EQ(server_.count(), 1u);  // nothing new
}

TEST_F(EventRecorderTest, RepeatsAggregateIntoASeries) {
  for (int i = 0; i < 5; ++i) recorder_->Record(Pod("w-0"), "Normal", "GangWaiting", "Schedule", "3/8 bound");
  ASSERT_TRUE(recorder_->Flush().ok());
  ASSERT_EQ(server_.count(), 1u);
  EXPECT_EQ(Json::parse(server_.requests()[0].body)["series"]["count"], 5);
  const std::string name = Json::parse(server_.requests()[0].body)["metadata"]["name"];

  for (int i = 0; i < 3; ++i) recorder_->Record(Pod("w-0"), "Normal", "GangWaiting", "Schedule", "3/8 bound");
  clock_.Advance(10s);
  ASSERT_TRUE(recorder_->Flush().ok());
  EXPECT_EQ(server_.count(), 1u);  // series patches at most every 30 s
  clock_.Advance(20s);
  ASSERT_TRUE(recorder_->Flush().ok());
  ASSERT_EQ(server_.count(), 2u);
  auto patch = server_.requests()[1];
  EXPECT_EQ(patch.method, "PATCH");
  EXPECT_EQ(patch.content_type, "application/merge-patch+json");
  EXPECT_EQ(patch.target, "/apis/events.k8s.io/v1/namespaces/ml/events/" + name);
  EXPECT_EQ(Json::parse(patch.body)["series"]["count"], 8);

  // A different note is a different event; after the window a repeat starts a new Event.
  recorder_->Record(Pod("w-0"), "Normal", "GangWaiting", "Schedule", "4/8 bound");
  ASSERT_TRUE(recorder_->Flush().ok());
  EXPECT_EQ(server_.requests()[2].method, "POST");
  clock_.Advance(7min);
  ASSERT_TRUE(recorder_->Flush().ok());  // forgets finished series
  recorder_->Record(Pod("w-0"), "Normal", "GangWaiting", "Schedule", "3/8 bound");
  ASSERT_TRUE(recorder_->Flush().ok());
  ASSERT_EQ(server_.count(), 4u);
  EXPECT_EQ(server_.requests()[3].method, "POST");
  EXPECT_NE(Json::parse(server_.requests()[3].body)["metadata"]["name"], name);
}

TEST_F(EventRecorderTest, SeriesOfAVanishedEventIsRecreated) {
  recorder_->Record(Pod("w-0"), "Normal", "R", "A", "n");
  ASSERT_TRUE(recorder_->Flush().ok());
  recorder_->Record(Pod("w-0"), "Normal", "R", "A", "n");
  patch_not_found_ = true;
  ASSERT_TRUE(recorder_->Flush(/*force_series=*/true).ok());
  auto reqs = server_.requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[1].method, "PATCH");
  EXPECT_EQ(reqs[2].method, "POST");
  EXPECT_EQ(Json::parse(reqs[2].body)["series"]["count"], 2);
}

TEST_F(EventRecorderTest, BoundedQueueDropsAndCounts) {
  for (int i = 0; i < 5; ++i) recorder_->Record(Pod(std::string("p").append(std::to_string(i))), "Normal", "R", "A", "n");
  EXPECT_EQ(recorder_->dropped(), 2u);
  ASSERT_TRUE(recorder_->Flush().ok());
  EXPECT_EQ(server_.count(), 3u);
}

TEST_F(EventRecorderTest, BackgroundThreadSendsAndStopFlushes) {
  recorder_->Start();
  recorder_->Record(Pod("w-0"), "Normal", "R", "A", "n");
  recorder_->Record(Pod("w-0"), "Normal", "R", "A", "n");
  recorder_->Stop();
  EXPECT_GE(server_.count(), 1u);
  EXPECT_LE(server_.count(), 2u);
}

}  // namespace
}  // namespace phalanx::kube
