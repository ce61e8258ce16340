// The write pipeline against the API server (issue 15 item 2): the real phalanx-extender binary
// and the fake API server with a per-write latency. A single-pod bind made while a large gang's
// commit is being written is answered at once (its writes overtake the gang's), and a devices
// patch that fails in the middle of a parallel commit binds nobody and leaves no annotation.
#include <future>

#include "tests/integration/extender/apiserver_harness.h"

namespace phalanx::extender::itest {
namespace {

using Steady = std::chrono::steady_clock;

struct WritePipelineFixture : ::testing::Test {
  Cluster cluster;
  std::unique_ptr<ExtenderProcess> ext;
  std::vector<std::string> nodes;

  void SetUp() override {
    cluster.Start(::testing::UnitTest::GetInstance()->current_test_info()->name());
    cluster.server->SetWriteLatency(std::chrono::milliseconds(5));
  }
  void TearDown() override {
    if (HasFailure() && ext) std::cerr << "--- extender log ---\n" << ext->Log() << "\n";
  }
  void SeedNodes(int n) {
    for (int i = 0; i < n; ++i) {
      nodes.push_back("dgx-" + std::to_string(i));
      cluster.Seed(DgxNode(nodes.back()));
    }
  }
  void StartExtender(std::vector<std::string> extra) {
    ext = std::make_unique<ExtenderProcess>(::testing::UnitTest::GetInstance()->current_test_info()->name(),
                                            cluster.kubeconfig, std::move(extra));
    ASSERT_TRUE(ext->WaitReady()) << ext->Log();
  }
  std::string Member(const std::string& gang, int i) { return gang + "-" + std::to_string(i); }
  // Seeds `n` gated 1-GPU members, waits for the admission to lift every gate, and returns the
  // members as the informer sees them with the node filter pins each to.
  void AdmitGang(const std::string& gang, int n, std::vector<Json>& pods, std::vector<std::string>& planned) {
    for (int i = 0; i < n; ++i) {
      cluster.Seed(Pod({.name = Member(gang, i), .gpus = 1, .gang = gang, .min_members = n, .gated = true}));
    }
    ASSERT_TRUE(WaitUntil([&] {
      for (int i = 0; i < n; ++i) {
        if (HasGate(cluster.Get("ml", Member(gang, i)))) return false;
      }
      return true;
    })) << ext->Log();
    for (int i = 0; i < n; ++i) {
      pods.push_back(cluster.Get("ml", Member(gang, i)));
      auto passed = Passed(ext->Post("filter", FilterBody(pods.back(), nodes)));
      ASSERT_EQ(passed.size(), 1u) << Member(gang, i);
      planned.push_back(passed[0]);
    }
  }
  std::vector<std::future<HttpReply>> BindAll(const std::vector<Json>& pods, const std::vector<std::string>& planned) {
    std::vector<std::future<HttpReply>> replies;
    for (size_t i = 0; i < pods.size(); ++i) {
      replies.push_back(std::async(std::launch::async, [&, i] { return ext->Post("bind", BindBody(pods[i], planned[i])); }));
    }
    return replies;
  }
};

TEST_F(WritePipelineFixture, SinglePodBindDuringAGangCommitIsNotQueuedBehindIt) {
  SeedNodes(17);  // the gang takes 128 GPUs; the single pod finds room
  // 100 writes/s without burst: the 256 writes of the commit take ~2.6 s.
  StartExtender({"--writers", "8", "--write-qps", "100", "--write-burst", "1"});
  std::vector<Json> pods;
  std::vector<std::string> planned;
  AdmitGang("big", 128, pods, planned);
  cluster.Seed(Pod({.name = "solo", .gpus = 1}));
  const Json solo = cluster.Get("ml", "solo");
  ASSERT_TRUE(WaitUntil([&] {
    auto r = ext->Post("filter", FilterBody(solo, nodes));
    return !Passed(r).empty();
  })) << ext->Log();
  const std::string solo_node = Passed(ext->Post("filter", FilterBody(solo, nodes)))[0];

  auto replies = BindAll(pods, planned);
  // The commit is under way: some member carries its devices annotation.
  ASSERT_TRUE(WaitUntil([&] {
    for (int i = 0; i < 128; i += 8) {
      if (HasDevices(cluster.Get("ml", Member("big", i)))) return true;
    }
    return false;
  })) << ext->Log();
  const auto t0 = Steady::now();
  const HttpReply bound = ext->Post("bind", BindBody(solo, solo_node));
  const auto took = Steady::now() - t0;
  EXPECT_EQ(BindError(bound), "");
  size_t answered = 0;
  for (auto& r : replies) answered += r.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  EXPECT_LT(answered, replies.size()) << "the gang's commit was over before the single pod was bound";
  // Target 50 ms (bench/RESULTS.md); behind the gang it would be seconds. 10x margin.
  EXPECT_LT(took, std::chrono::milliseconds(500))
      << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms";
  EXPECT_TRUE(IsBound(cluster.Get("ml", "solo")));
  for (auto& r : replies) EXPECT_EQ(BindError(r.get()), "");
  for (int i = 0; i < 128; ++i) EXPECT_TRUE(IsBound(cluster.Get("ml", Member("big", i)))) << i;
}

TEST_F(WritePipelineFixture, AFailedDevicesPatchInAParallelCommitBindsNobody) {
  SeedNodes(8);
  StartExtender({"--writers", "16"});
  std::vector<Json> pods;
  std::vector<std::string> planned;
  AdmitGang("f", 64, pods, planned);
  // Every attempt at member 37's devices patch fails; the other 63 land in parallel.
  cluster.server->FailNext({.verb = "patch", .path_contains = "/pods/f-37", .code = 500, .count = 1 << 20});
  for (auto& r : BindAll(pods, planned)) {
    const std::string err = BindError(r.get());
    EXPECT_NE(err.find("commit point was not reached"), std::string::npos) << err;
  }
  cluster.server->ClearFaults();
  for (int i = 0; i < 64; ++i) {
    const Json p = cluster.Get("ml", Member("f", i));
    EXPECT_FALSE(IsBound(p)) << "member " << i << " was bound without the commit point";
    EXPECT_FALSE(HasDevices(p)) << "member " << i << " kept its devices annotation";
  }
}

TEST_F(WritePipelineFixture, BadWriteFlagsStopTheStartNamingTheFlag) {
  for (const auto& [flag, value] : std::vector<std::pair<std::string, std::string>>{
           {"--writers", "1"}, {"--write-qps", "0"}, {"--write-burst", "0"}}) {
    ExtenderProcess bad("bad-" + flag.substr(2) + "-" + std::to_string(::getpid()), cluster.kubeconfig, {flag, value});
    EXPECT_NE(bad.Wait(), 0) << flag;
    EXPECT_NE(bad.Log().find(flag), std::string::npos) << bad.Log();
  }
}

}  // namespace
}  // namespace phalanx::extender::itest
