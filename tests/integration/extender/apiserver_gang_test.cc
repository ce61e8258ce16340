// Gangs against the API server (issue 5 items 2 and 4; docs/architecture.md §2.5, §3): the real
// phalanx-extender binary watches the fake API server, lifts the phalanx.io/gang gates of a
// complete gang together, holds binds at the barrier and commits (devices annotation, then
// Binding) all members at once — or none when the barrier times out.
#include <future>

#include "tests/integration/extender/apiserver_harness.h"

namespace phalanx::extender::itest {
namespace {

const std::vector<std::string> kNodes = {"dgx-1", "dgx-2"};

struct GangFixture : ::testing::Test {
  Cluster cluster;
  std::unique_ptr<ExtenderProcess> ext;

  void SetUp() override {
    cluster.Start(::testing::UnitTest::GetInstance()->current_test_info()->name());
    for (const auto& n : kNodes) cluster.Seed(DgxNode(n));
  }
  void TearDown() override {
    if (HasFailure() && ext) std::cerr << "--- extender log ---\n" << ext->Log() << "\n";
  }
  void StartExtender(std::vector<std::string> extra = {}) {
    ext = std::make_unique<ExtenderProcess>(::testing::UnitTest::GetInstance()->current_test_info()->name(),
                                            cluster.kubeconfig, std::move(extra));
    ASSERT_TRUE(ext->WaitReady()) << ext->Log();
  }
  // 8 gated members of 2 GPUs: 16 GPUs, both DGX nodes.
  void CreateGang(const std::string& gang, int timeout_seconds = 0) {
    for (int i = 0; i < 8; ++i) {
      cluster.Seed(Pod({.name = gang + "-" + std::to_string(i), .gpus = 2, .gang = gang, .min_members = 8,
                        .timeout_seconds = timeout_seconds, .gated = true, .priority = 1000}));
    }
  }
  bool AllUngated(const std::string& gang, int n) {
    for (int i = 0; i < n; ++i) {
      if (HasGate(cluster.Get("ml", gang + "-" + std::to_string(i)))) return false;
    }
    return true;
  }
  // Filter as kube-scheduler would: the extender must pin the member to one planned node.
  std::string FilterOne(const Json& pod) {
    auto reply = ext->Post("filter", FilterBody(pod, kNodes));
    EXPECT_EQ(reply.status, 200) << reply.body;
    auto passed = Passed(reply);
    EXPECT_EQ(passed.size(), 1u) << reply.body;
    return passed.empty() ? "" : passed[0];
  }
};

TEST_F(GangFixture, GatesLiftTogetherSevenHeldBindsWaitAndTheEighthReleasesAll) {
  StartExtender();
  CreateGang("g");
  ASSERT_TRUE(WaitUntil([&] { return AllUngated("g", 8); })) << ext->Log();

  std::vector<Json> pods;
  std::vector<std::string> planned;
  for (int i = 0; i < 8; ++i) {
    pods.push_back(cluster.Get("ml", "g-" + std::to_string(i)));
    planned.push_back(FilterOne(pods.back()));
  }
  std::map<std::string, int> per_node;
  for (const auto& n : planned) per_node[n]++;
  EXPECT_EQ(per_node["dgx-1"], 4);
  EXPECT_EQ(per_node["dgx-2"], 4);

  std::vector<std::future<HttpReply>> held;
  for (int i = 0; i < 7; ++i) {
    held.push_back(std::async(std::launch::async, [&, i] { return ext->Post("bind", BindBody(pods[i], planned[i])); }));
  }
  ASSERT_TRUE(WaitUntil([&] { return ext->Metric("phalanx_extender_held_binds") == 7; })) << ext->Log();
  for (auto& f : held) EXPECT_NE(f.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  for (int i = 0; i < 8; ++i) {
    const Json p = cluster.Get("ml", "g-" + std::to_string(i));
    EXPECT_FALSE(IsBound(p)) << "member " << i << " bound before the barrier released";
    EXPECT_FALSE(HasDevices(p)) << "member " << i << " committed before the barrier released";
  }

  auto last = ext->Post("bind", BindBody(pods[7], planned[7]));
  EXPECT_EQ(BindError(last), "");
  for (auto& f : held) EXPECT_EQ(BindError(f.get()), "");
  std::set<std::string> devices;
  for (int i = 0; i < 8; ++i) {
    const Json p = cluster.Get("ml", "g-" + std::to_string(i));
    EXPECT_EQ(p["spec"].value("nodeName", ""), planned[static_cast<size_t>(i)]);
    ASSERT_TRUE(HasDevices(p));
    auto d = json::Parse(p["metadata"]["annotations"]["phalanx.io/devices"].get<std::string>());
    ASSERT_TRUE(d.ok());
    ASSERT_EQ((*d)["main"].size(), 2u);
    for (const auto& id : (*d)["main"]) {
      const std::string uuid = id.get<std::string>();
      EXPECT_EQ(uuid.rfind("GPU-" + planned[static_cast<size_t>(i)] + "-", 0), 0u) << uuid;
      devices.insert(uuid);
    }
  }
  EXPECT_EQ(devices.size(), 16u);  // no GPU given twice
  // The ledger, fed back by the informers, charges all 16 GPUs.
  EXPECT_TRUE(WaitUntil([&] { return ext->State()["cluster"]["freeGpus"] == 0; })) << ext->State().dump();
}

TEST_F(GangFixture, AMissingEighthMemberTimesAllSevenOutAndLeavesNothingBound) {
  StartExtender();
  CreateGang("t", /*timeout_seconds=*/3);
  ASSERT_TRUE(WaitUntil([&] { return AllUngated("t", 8); })) << ext->Log();
  std::vector<std::future<HttpReply>> held;
  for (int i = 0; i < 7; ++i) {
    const Json pod = cluster.Get("ml", "t-" + std::to_string(i));
    const std::string node = FilterOne(pod);
    held.push_back(std::async(std::launch::async, [this, pod, node] { return ext->Post("bind", BindBody(pod, node)); }));
  }
  for (auto& f : held) {
    const std::string err = BindError(f.get());
    EXPECT_NE(err.find("timed out at the bind barrier"), std::string::npos) << err;
  }
  for (int i = 0; i < 8; ++i) {
    const Json p = cluster.Get("ml", "t-" + std::to_string(i));
    EXPECT_FALSE(IsBound(p));
    EXPECT_FALSE(HasDevices(p));
  }
  EXPECT_EQ(ext->Metric("phalanx_extender_held_binds"), 0);
  // The plan was dropped: nothing stays reserved or charged.
  const Json state = ext->State();
  EXPECT_EQ(state["cluster"]["freeGpus"], 16) << state.dump();
}

TEST_F(GangFixture, ARestartRebuildsTheSameLedger) {
  StartExtender();
  CreateGang("r");
  ASSERT_TRUE(WaitUntil([&] { return AllUngated("r", 8); })) << ext->Log();
  std::vector<std::future<HttpReply>> binds;
  for (int i = 0; i < 8; ++i) {
    const Json pod = cluster.Get("ml", "r-" + std::to_string(i));
    const std::string node = FilterOne(pod);
    binds.push_back(std::async(std::launch::async, [this, pod, node] { return ext->Post("bind", BindBody(pod, node)); }));
  }
  for (auto& f : binds) EXPECT_EQ(BindError(f.get()), "");
  ASSERT_TRUE(WaitUntil([&] {
    const Json s = ext->State();
    int committed = 0;
    for (const auto& p : s["pods"]) committed += p["holding"] == "committed";
    return s["cluster"]["freeGpus"] == 0 && committed == 8;
  })) << ext->State().dump();
  const Json before = ext->State();

  ext->Signal(SIGTERM);
  EXPECT_EQ(ext->Wait(), 0);
  ext.reset();
  StartExtender();
  Json after;
  EXPECT_TRUE(WaitUntil([&] { return (after = ext->State()) == before; }))
      << "before: " << before.dump() << "\nafter: " << after.dump();
}

TEST_F(GangFixture, ANewActiveExtenderBindsACommittedButUnboundMember) {
  // The previous extender died between the devices patch (commit point) and the Binding.
  cluster.Seed(Pod({.name = "c-0", .gpus = 2, .gang = "c", .min_members = 1, .priority = 1000,
                    .devices = R"({"main":["GPU-dgx-2-6","GPU-dgx-2-7"]})"}));
  StartExtender();
  ASSERT_TRUE(WaitUntil([&] { return IsBound(cluster.Get("ml", "c-0")); })) << ext->Log();
  EXPECT_EQ(cluster.Get("ml", "c-0")["spec"]["nodeName"], "dgx-2");
  EXPECT_TRUE(WaitUntil([&] { return ext->State()["cluster"]["freeGpus"] == 14; })) << ext->State().dump();
}

TEST_F(GangFixture, APartialCommitPointFromADeadExtenderIsUndoneNotBound) {
  // Died while writing devices: one of two members carries them, the other does not.
  cluster.Seed(Pod({.name = "h-0", .gpus = 2, .gang = "h", .min_members = 2, .priority = 1000,
                    .devices = R"({"main":["GPU-dgx-2-6","GPU-dgx-2-7"]})"}));
  cluster.Seed(Pod({.name = "h-1", .gpus = 2, .gang = "h", .min_members = 2, .priority = 1000}));
  StartExtender();
  ASSERT_TRUE(WaitUntil([&] { return !HasDevices(cluster.Get("ml", "h-0")); })) << ext->Log();
  EXPECT_FALSE(IsBound(cluster.Get("ml", "h-0")));
  EXPECT_FALSE(IsBound(cluster.Get("ml", "h-1")));
  EXPECT_TRUE(WaitUntil([&] { return ext->State()["cluster"]["freeGpus"] == 16; })) << ext->State().dump();
}

// Binds all 8 members concurrently (after filtering each); returns each bind's error.
std::vector<std::string> BindAll(GangFixture& f, const std::string& gang) {
  std::vector<std::future<HttpReply>> binds;
  for (int i = 0; i < 8; ++i) {
    const Json pod = f.cluster.Get("ml", gang + "-" + std::to_string(i));
    const std::string node = f.FilterOne(pod);
    binds.push_back(std::async(std::launch::async, [&f, pod, node] { return f.ext->Post("bind", BindBody(pod, node)); }));
  }
  std::vector<std::string> errors;
  for (auto& b : binds) errors.push_back(BindError(b.get()));
  return errors;
}

TEST_F(GangFixture, AFailedDevicesPatchBindsNobodyAndTheGangIsPlannedAgain) {
  StartExtender();
  CreateGang("f");
  ASSERT_TRUE(WaitUntil([&] { return AllUngated("f", 8); })) << ext->Log();
  cluster.server->FailNext({.verb = "patch", .path_contains = "/pods/f-3", .code = 500, .count = 1});
  for (const std::string& err : BindAll(*this, "f")) {
    EXPECT_NE(err.find("commit point was not reached"), std::string::npos) << err;
  }
  for (int i = 0; i < 8; ++i) {
    const Json p = cluster.Get("ml", "f-" + std::to_string(i));
    EXPECT_FALSE(IsBound(p)) << i;
    EXPECT_FALSE(HasDevices(p)) << i << ": a partial commit point was left behind";
  }
  EXPECT_TRUE(WaitUntil([&] { return ext->State()["cluster"]["freeGpus"] == 16; })) << ext->State().dump();
  // The scheduler retries: a fresh plan, and this time every member is bound.
  for (const std::string& err : BindAll(*this, "f")) EXPECT_EQ(err, "");
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(IsBound(cluster.Get("ml", "f-" + std::to_string(i)))) << i;
}

TEST_F(GangFixture, AFailedBindingAfterTheCommitPointIsCompletedOnTheSchedulersRetry) {
  StartExtender();
  CreateGang("b");
  ASSERT_TRUE(WaitUntil([&] { return AllUngated("b", 8); })) << ext->Log();
  cluster.server->FailNext({.verb = "create", .path_contains = "/pods/b-2/binding", .code = 500, .count = 1});
  auto errors = BindAll(*this, "b");
  for (int i = 0; i < 8; ++i) {
    if (i == 2) {
      EXPECT_NE(errors[2], "");
    } else {
      EXPECT_EQ(errors[static_cast<size_t>(i)], "") << i;
    }
  }
  Json b2 = cluster.Get("ml", "b-2");
  EXPECT_FALSE(IsBound(b2));
  EXPECT_TRUE(HasDevices(b2));  // committed
  EXPECT_TRUE(WaitUntil([&] { return ext->State()["cluster"]["freeGpus"] == 0; })) << ext->State().dump();
  // Retry: filter pins it to the node its devices are on, bind completes it.
  const std::string node = FilterOne(b2);
  EXPECT_EQ(BindError(ext->Post("bind", BindBody(b2, node))), "");
  b2 = cluster.Get("ml", "b-2");
  EXPECT_EQ(b2["spec"].value("nodeName", ""), node);
  const std::string devices = b2["metadata"]["annotations"]["phalanx.io/devices"].get<std::string>();
  EXPECT_NE(devices.find("GPU-" + node + "-"), std::string::npos) << devices;
  EXPECT_EQ(ext->State()["cluster"]["freeGpus"], 0);
}

}  // namespace
}  // namespace phalanx::extender::itest
