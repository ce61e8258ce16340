#include "core/kube/leader_election.h"

#include <gtest/gtest.h>

#include <future>

#include "tests/fakes/clock/fake_clock.h"
#include "tests/unit/core/kube/test_server.h"

namespace phalanx::kube {
namespace {

using namespace std::chrono_literals;
using testing::ScriptedServer;
using testing::WaitUntil;

// One Lease with resourceVersion semantics (409 on stale PUT, AlreadyExists on double create).
class LeaseServer {
 public:
  LeaseServer() {
    server_.Set([this](const http::Request& r) { return Handle(r); });
  }
  KubeConfig Config() const { return server_.Config(); }
  void set_down(bool down) {
    std::lock_guard lock(mu_);
    down_ = down;
  }
  Json lease() const {
    std::lock_guard lock(mu_);
    return lease_;
  }
  std::string holder() const {
    std::lock_guard lock(mu_);
    return lease_.is_null() ? "" : lease_["spec"].value("holderIdentity", "");
  }

 private:
  static http::Response Status(int code, const char* reason, const std::string& msg) {
    return {code, "application/json", {},
            Json{{"kind", "Status"}, {"code", code}, {"reason", reason}, {"message", msg}}.dump()};
  }
  http::Response Handle(const http::Request& r) {
    std::lock_guard lock(mu_);
    if (down_) return Status(503, "ServiceUnavailable", "down");
    const std::string base = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases";
    if (r.method == "GET" && r.path == base + "/phalanx") {
      if (lease_.is_null()) return Status(404, "NotFound", "leases \"phalanx\" not found");
      return {200, "application/json", {}, lease_.dump()};
    }
    if (r.method == "POST" && r.path == base) {
      if (!lease_.is_null()) return Status(409, "AlreadyExists", "exists");
      lease_ = Json::parse(r.body);
      lease_["metadata"]["resourceVersion"] = std::to_string(++rv_);
      return {201, "application/json", {}, lease_.dump()};
    }
    if (r.method == "PUT" && r.path == base + "/phalanx") {
      Json in = Json::parse(r.body);
      if (lease_.is_null()) return Status(404, "NotFound", "gone");
      if (in["metadata"].value("resourceVersion", "") != lease_["metadata"]["resourceVersion"]) {
        return Status(409, "Conflict", "the object has been modified");
      }
      lease_ = in;
      lease_["metadata"]["resourceVersion"] = std::to_string(++rv_);
      return {200, "application/json", {}, lease_.dump()};
    }
    return Status(404, "NotFound", "no route " + r.method + " " + r.path);
  }

  ScriptedServer server_;
  mutable std::mutex mu_;
  Json lease_;
  int rv_ = 10;
  bool down_ = false;
};

LeaderElectionConfig Config(const std::string& id, Duration lease = 15s, Duration renew = 10s, Duration retry = 2s) {
  LeaderElectionConfig c;
  c.lease_namespace = "kube-system";
  c.lease_name = "phalanx";
  c.identity = id;
  c.lease_duration = lease;
  c.renew_deadline = renew;
  c.retry_period = retry;
  return c;
}

std::unique_ptr<KubeClient> Client(const KubeConfig& config, const Clock* clock = nullptr) {
  ClientOptions o;
  o.qps = 0;
  o.clock = clock;
  auto c = KubeClient::Create(config, o);
  EXPECT_TRUE(c.ok()) << c.status();
  return std::move(*c);
}

TEST(LeaderElectionTest, ValidatesTimings) {
  EXPECT_TRUE(ValidateLeaderElectionConfig(Config("a")).ok());
  EXPECT_EQ(ValidateLeaderElectionConfig(Config("a", 10s, 10s, 2s)).message(),
            "leader election: lease duration must be greater than the renew deadline");
  EXPECT_EQ(ValidateLeaderElectionConfig(Config("a", 15s, 2s, 2s)).message(),
            "leader election: renew deadline must be greater than 1.2 x retry period");
  EXPECT_FALSE(ValidateLeaderElectionConfig(Config("")).ok());
}

TEST(LeaderElectionTest, AcquireRenewAndTakeOverAnExpiredLeaseOnAFakeClock) {
  LeaseServer server;
  phalanx::testing::FakeClock clock;
  auto ca = Client(server.Config(), &clock);
  auto cb = Client(server.Config(), &clock);
  std::vector<std::string> b_saw;
  LeaderCallbacks b_callbacks;
  b_callbacks.on_new_leader = [&](const std::string& id) { b_saw.push_back(id); };
  LeaderElector a(*ca, Config("a"), {}, &clock);
  LeaderElector b(*cb, Config("b"), b_callbacks, &clock);

  ASSERT_TRUE(a.TryAcquireOrRenew());  // creates the lease
  EXPECT_EQ(server.holder(), "a");
  EXPECT_EQ(server.lease()["spec"]["leaseDurationSeconds"], 15);
  const std::string acquired = server.lease()["spec"]["acquireTime"];
  EXPECT_EQ(acquired.size(), std::string("2026-11-19T00:00:00.000000Z").size()) << acquired;

  EXPECT_FALSE(b.TryAcquireOrRenew());
  EXPECT_EQ(b.CurrentHolder(), "a");
  EXPECT_EQ(b_saw, std::vector<std::string>{"a"});

  clock.Advance(5s);
  ASSERT_TRUE(a.TryAcquireOrRenew());  // renew keeps acquireTime and transitions
  EXPECT_EQ(server.lease()["spec"]["acquireTime"], acquired);
  EXPECT_EQ(server.lease()["spec"]["leaseTransitions"], 0);
  EXPECT_FALSE(b.TryAcquireOrRenew());  // b sees a renewal: its 15 s start again now

  clock.Advance(14s);  // a stops renewing
  EXPECT_FALSE(b.TryAcquireOrRenew());
  clock.Advance(1s);  // 15 s since b last saw the record change
  ASSERT_TRUE(b.TryAcquireOrRenew());
  EXPECT_EQ(server.holder(), "b");
  EXPECT_EQ(server.lease()["spec"]["leaseTransitions"], 1);
  EXPECT_FALSE(a.TryAcquireOrRenew());  // a must not take it back
  EXPECT_EQ(a.CurrentHolder(), "b");
}

TEST(LeaderElectionTest, ConcurrentCandidatesNeverBothWin) {
  LeaseServer server;
  phalanx::testing::FakeClock clock;
  std::vector<std::unique_ptr<KubeClient>> clients;
  std::vector<std::unique_ptr<LeaderElector>> electors;
  for (int i = 0; i < 4; ++i) {
    clients.push_back(Client(server.Config(), &clock));
    electors.push_back(std::make_unique<LeaderElector>(*clients.back(), Config(std::string("c").append(std::to_string(i))),
                                                       LeaderCallbacks{}, &clock));
  }
  std::vector<std::future<bool>> results;
  for (auto& e : electors) results.push_back(std::async(std::launch::async, [&e] { return e->TryAcquireOrRenew(); }));
  int winners = 0;
  for (auto& r : results) winners += r.get();
  EXPECT_EQ(winners, 1);
}

TEST(LeaderElectionTest, FailoverWhenTheLeaderStopsRenewing) {
  LeaseServer server;
  auto ca = Client(server.Config());
  auto cb = Client(server.Config());
  auto a_cfg = Config("a", 1000ms, 600ms, 100ms);
  a_cfg.release_on_cancel = false;  // a crash: the lease is not handed over
  std::atomic<bool> a_started{false}, b_started{false};
  LeaderElector a(*ca, a_cfg, {[&] { a_started = true; }, {}, {}});
  LeaderElector b(*cb, Config("b", 1000ms, 600ms, 100ms), {[&] { b_started = true; }, {}, {}});
  auto a_run = std::async(std::launch::async, [&] { return a.Run(); });
  ASSERT_TRUE(WaitUntil([&] { return a.IsLeader() && a_started.load(); }));
  auto b_run = std::async(std::launch::async, [&] { return b.Run(); });
  std::this_thread::sleep_for(300ms);  // b keeps trying while a renews (observation window)
  EXPECT_FALSE(b.IsLeader());
  EXPECT_EQ(server.holder(), "a");

  a.Stop();
  EXPECT_TRUE(a_run.get().ok());
  const auto stopped = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitUntil([&] { return b.IsLeader() && b_started.load(); }));
  const auto took = std::chrono::steady_clock::now() - stopped;
  EXPECT_LT(took, 5s);  // lease duration 1 s + retry period, with slack for a loaded machine
  EXPECT_EQ(server.holder(), "b");
  EXPECT_EQ(server.lease()["spec"]["leaseTransitions"], 1);
  b.Stop();
  EXPECT_TRUE(b_run.get().ok());
  EXPECT_EQ(server.holder(), "");  // released on stop
}

TEST(LeaderElectionTest, LosingTheLeaseStopsWorkAndFailsRun) {
  LeaseServer server;
  auto c = Client(server.Config());
  std::atomic<bool> stopped_leading{false};
  LeaderElector a(*c, Config("a", 1000ms, 600ms, 100ms), {[] {}, [&] { stopped_leading = true; }, {}});
  auto run = std::async(std::launch::async, [&] { return a.Run(); });
  ASSERT_TRUE(WaitUntil([&] { return a.IsLeader(); }));
  server.set_down(true);  // renewals fail
  ASSERT_EQ(run.wait_for(20s), std::future_status::ready);
  Status s = run.get();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "lost leadership of lease kube-system/phalanx");
  EXPECT_TRUE(stopped_leading.load());
  EXPECT_FALSE(a.IsLeader());
}

}  // namespace
}  // namespace phalanx::kube
