// Preemption over the API (issue 5 item 5; docs/architecture.md §3 step 7): the whole lowest-tier gang
// goes — its member on the proposed node as the preempt reply's victim, its member on the
// other node through pods/eviction — and a TrainingJob victim that needs notice gets the
// phalanx.io/preempt-request annotation instead (and the preemption is vetoed for now).
#include "tests/integration/extender/apiserver_harness.h"

namespace phalanx::extender::itest {
namespace {

struct PreemptFixture : ::testing::Test {
  Cluster cluster;
  std::unique_ptr<ExtenderProcess> ext;
  Json victim0, victim1, preemptor;

  void TearDown() override {
    if (HasFailure() && ext) std::cerr << "--- extender log ---\n" << ext->Log() << "\n";
  }
  // Gang "cheap" (spot, TrainingJob cheap-job) fills both DGX nodes; "hi" (critical, 8 GPUs)
  // waits. Critical: the preemption pays for itself by the engine's price (docs/algorithms.md
  // §8.3) although nothing else will free GPUs for the 16-GPU victim to come back to.
  void Start(double notice_seconds, double gpu_seconds_at_risk = 10) {
    cluster.Start(::testing::UnitTest::GetInstance()->current_test_info()->name());
    for (const char* n : {"dgx-1", "dgx-2"}) cluster.Seed(DgxNode(n));
    cluster.Seed(TrainingJob("ml", "cheap-job", gpu_seconds_at_risk, notice_seconds));
    for (int i = 0; i < 2; ++i) {
      const std::string node = "dgx-" + std::to_string(i + 1);
      std::string devices = R"({"main":[)";
      for (int g = 0; g < 8; ++g) devices += (g ? "," : "") + std::string("\"GPU-") + node + "-" + std::to_string(g) + "\"";
      devices += "]}";
      cluster.Seed(Pod({.name = "cheap-" + std::to_string(i), .gpus = 8, .gang = "cheap", .min_members = 2,
                        .priority = 100, .node = node, .devices = devices, .training_job = "cheap-job"}));
    }
    cluster.Seed(Pod({.name = "hi", .gpus = 8, .priority = 1000000}));
    victim0 = cluster.Get("ml", "cheap-0");
    victim1 = cluster.Get("ml", "cheap-1");
    preemptor = cluster.Get("ml", "hi");
    ext = std::make_unique<ExtenderProcess>(::testing::UnitTest::GetInstance()->current_test_info()->name(),
                                            cluster.kubeconfig);
    ASSERT_TRUE(ext->WaitReady()) << ext->Log();
    ASSERT_TRUE(WaitUntil([&] { return ext->State()["cluster"]["freeGpus"] == 0; })) << ext->State().dump();
  }
  HttpReply ProposeVictim0() {
    Json victims = {{"dgx-1", {{"Pods", Json::array({{{"UID", victim0["metadata"]["uid"]}}})}, {"NumPDBViolations", 0}}}};
    return ext->Post("preempt", Json{{"Pod", preemptor}, {"NodeNameToVictims", nullptr}, {"NodeNameToMetaVictims", victims}});
  }
};

TEST_F(PreemptFixture, TheWholeLowestTierGangGoesItsOtherMemberThroughPodsEviction) {
  Start(/*notice_seconds=*/0);
  auto reply = ProposeVictim0();
  ASSERT_EQ(reply.status, 200) << reply.body;
  auto body = json::Parse(reply.body);
  ASSERT_TRUE(body.ok()) << reply.body;
  const Json& meta = (*body)["NodeNameToMetaVictims"];
  ASSERT_TRUE(meta.is_object() && meta.contains("dgx-1")) << reply.body;
  ASSERT_EQ(meta["dgx-1"]["Pods"].size(), 1u);
  EXPECT_EQ(meta["dgx-1"]["Pods"][0]["UID"], victim0["metadata"]["uid"]);

  // cheap-1 on dgx-2 is evicted by the extender itself (the fake keeps it terminating).
  auto evicted = cluster.server->WaitFor("pods", "ml", "cheap-1", [](const Json& p) {
    return p["metadata"].contains("deletionTimestamp");
  });
  ASSERT_TRUE(evicted.ok()) << evicted.status() << ext->Log();
  bool disruption = false;
  for (const auto& c : (*evicted)["status"].value("conditions", Json::array())) {
    disruption = disruption || (c["type"] == "DisruptionTarget" && c["status"] == "True");
  }
  EXPECT_TRUE(disruption) << evicted->dump();
  // The request log is written after the response: poll it.
  int evictions = 0;
  std::string writes;
  EXPECT_TRUE(WaitUntil([&] {
    evictions = 0;
    writes.clear();
    for (const auto& r : cluster.server->Requests()) {
      if (r.method != "GET") writes += r.method + " " + r.target + "\n";
      if (r.method == "POST" && r.target.find("/pods/cheap-1/eviction") != std::string::npos) evictions++;
    }
    return evictions == 1;
  })) << writes;
  // No eviction for the reply's own victim: the scheduler deletes it.
  EXPECT_FALSE(cluster.Get("ml", "cheap-0")["metadata"].contains("deletionTimestamp"));
  EXPECT_FALSE(cluster.server->Get("trainingjobs.phalanx.io", "ml", "cheap-job")
                   .value()["metadata"].value("annotations", Json::object())
                   .contains("phalanx.io/preempt-request"));
}

TEST_F(PreemptFixture, ATrainingJobVictimWithNoticeGetsAPreemptRequestAndTheCallIsVetoed) {
  // Losing 10,000 GPU-s costs more than the preemptor waiting 30 s: graceful (with 10 GPU-s
  // at risk the engine's price would evict it at once instead).
  Start(/*notice_seconds=*/30, /*gpu_seconds_at_risk=*/1e4);
  auto reply = ProposeVictim0();
  ASSERT_EQ(reply.status, 200) << reply.body;
  auto body = json::Parse(reply.body);
  ASSERT_TRUE(body.ok());
  const Json& meta = (*body)["NodeNameToMetaVictims"];
  EXPECT_TRUE(meta.is_null() || meta.empty()) << reply.body;

  auto job = cluster.server->WaitFor("trainingjobs.phalanx.io", "ml", "cheap-job", [](const Json& j) {
    return j["metadata"].contains("annotations") && j["metadata"]["annotations"].contains("phalanx.io/preempt-request");
  });
  ASSERT_TRUE(job.ok()) << job.status() << ext->Log();
  auto request = json::Parse((*job)["metadata"]["annotations"]["phalanx.io/preempt-request"].get<std::string>());
  ASSERT_TRUE(request.ok());
  EXPECT_EQ((*request)["preemptor"], "ml/hi");
  EXPECT_TRUE(request->contains("deadline"));
  EXPECT_TRUE(request->contains("requestId"));
  // Nothing evicted.
  for (const auto& r : cluster.server->Requests()) EXPECT_EQ(r.target.find("/eviction"), std::string::npos) << r.target;
}

}  // namespace
}  // namespace phalanx::extender::itest
