// The fault rules (faults.h): which requests they match, and what each kind of fault looks like on
// the wire, as a real kube-apiserver (or the network in front of it) would produce it.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "tests/fakes/apiserver/fake_apiserver.h"
#include "tests/fakes/apiserver/raw_client.h"

namespace phalanx::fakes::apiserver {
namespace {

using json::Json;
using testing::NextEvent;
using testing::RawClient;
using Clock = std::chrono::steady_clock;

constexpr const char* kConfigMaps = "/api/v1/namespaces/ml/configmaps";

Json ConfigMap(const std::string& name) { return {{"metadata", {{"name", name}}}, {"data", {{"v", "1"}}}}; }

FaultRequest Request(std::string_view verb, std::string_view resource, std::string_view ns = "ml",
                     std::string_view client = "phalanx-operator/0.1.0") {
  return {.verb = verb, .resource = resource, .namespace_ = ns, .client = client, .path = "/p", .write = true};
}

TEST(FaultInjector, MatchesVerbResourceNamespaceAndClientPrefix) {
  FaultInjector faults;
  faults.FailNext({.name = "r", .verb = "create", .resource = "pods", .namespace_ = "ml", .client = "phalanx-operator",
                   .count = -1});
  EXPECT_FALSE(faults.Match(Request("patch", "pods")));
  EXPECT_FALSE(faults.Match(Request("create", "pods/binding")));
  EXPECT_FALSE(faults.Match(Request("create", "pods", "other")));
  EXPECT_FALSE(faults.Match(Request("create", "pods", "ml", "phalanx-extender/0.1.0")));
  EXPECT_TRUE(faults.Match(Request("create", "pods")));
  EXPECT_TRUE(faults.Match(Request("create", "pods")));  // -1: until cleared
  EXPECT_EQ(faults.fired("r"), 2u);
  faults.Clear();
  EXPECT_FALSE(faults.Match(Request("create", "pods")));
  EXPECT_EQ(faults.fired("r"), 2u);  // kept after the rule is gone
}

TEST(FaultInjector, AfterLetsRequestsThroughAndWriteMatchesEveryWriteVerb) {
  FaultInjector faults;
  faults.FailNext({.name = "third-write", .verb = "write", .after = 2, .count = 1});
  EXPECT_FALSE(faults.Match(Request("get", "pods")));  // not a write: not counted
  EXPECT_FALSE(faults.Match(Request("create", "pods")));
  EXPECT_FALSE(faults.Match(Request("patch", "pods")));
  EXPECT_TRUE(faults.Match(Request("delete", "pods")));
  EXPECT_FALSE(faults.Match(Request("update", "pods")));  // spent
  EXPECT_EQ(faults.fired("third-write"), 1u);
}

TEST(FaultInjector, ProbabilityIsReproducibleForASeed) {
  auto draws = [](uint64_t seed) {
    FaultInjector faults;
    faults.FailNext({.verb = "*", .count = -1, .probability = 0.3, .seed = seed});
    std::string out;
    for (int i = 0; i < 64; ++i) out += faults.Match(Request("get", "pods")) ? '1' : '0';
    return out;
  };
  const std::string a = draws(7);
  EXPECT_EQ(a, draws(7));
  EXPECT_NE(a, draws(8));
  const auto fired = std::count(a.begin(), a.end(), '1');
  EXPECT_GT(fired, 5);   // ~19 of 64
  EXPECT_LT(fired, 40);
}

TEST(FaultInjector, WatchFaultsOnlyBreakWatchesAndTimeoutsNeverWatches) {
  FaultInjector faults;
  faults.FailNext({.verb = "*", .kind = FaultKind::kWatchGone, .count = -1});
  faults.FailNext({.verb = "*", .kind = FaultKind::kTimeout, .count = -1});
  auto watch = faults.Match(Request("watch", "pods"));
  ASSERT_TRUE(watch);
  EXPECT_EQ(watch->kind, FaultKind::kWatchGone);
  auto list = faults.Match(Request("list", "pods"));
  ASSERT_TRUE(list);
  EXPECT_EQ(list->kind, FaultKind::kTimeout);
}

TEST(FaultInjector, RulesFromJsonRefuseWhatTheyCannotDo) {
  EXPECT_FALSE(FaultRuleFromJson(Json{{"kind", "explode"}}).ok());
  EXPECT_FALSE(FaultRuleFromJson(Json{{"probability", 2}}).ok());
  EXPECT_FALSE(FaultRuleFromJson(Json{{"count", "many"}}).ok());
  EXPECT_FALSE(FaultRuleFromJson(Json{{"code", 200}}).ok());
  auto rule = FaultRuleFromJson(Json{{"kind", "reset"}, {"verb", "create"}, {"resource", "pods/binding"},
                                     {"afterApply", true}, {"delayMs", 5}, {"count", -1}});
  ASSERT_TRUE(rule.ok()) << rule.status();
  EXPECT_EQ(rule->kind, FaultKind::kReset);
  EXPECT_TRUE(rule->after_apply);
  EXPECT_EQ(rule->delay.count(), 5);
  EXPECT_EQ(rule->count, -1);
}

class FaultsOnTheWire : public ::testing::Test {
 protected:
  void SetUp() override {
    auto started = FakeApiServer::Start();
    ASSERT_TRUE(started.ok()) << started.status();
    server_ = std::move(started).value();
    client_ = std::make_unique<RawClient>(server_->url());
    ASSERT_EQ(client_->Post("/api/v1/namespaces", Json{{"metadata", {{"name", "ml"}}}}).status, 201);
  }

  std::unique_ptr<FakeApiServer> server_;
  std::unique_ptr<RawClient> client_;
};

TEST_F(FaultsOnTheWire, TooManyRequestsCarriesRetryAfterAndTheStatusReason) {
  server_->FailNext({.verb = "create", .resource = "configmaps", .code = 429, .retry_after_seconds = 3});
  auto r = client_->Post(kConfigMaps, ConfigMap("a"));
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(kube::FindHeader(r.headers, "Retry-After"), "3");
  EXPECT_EQ(r.Reason(), "TooManyRequests");
  EXPECT_EQ(r.Json()["details"]["retryAfterSeconds"], 3);
  EXPECT_EQ(r.Json()["message"], "Too many requests, please try again later.");
  EXPECT_EQ(client_->Post(kConfigMaps, ConfigMap("a")).status, 201);  // nothing was stored before
}

TEST_F(FaultsOnTheWire, TimeoutAnswers504AfterTheDelayAndAfterApplyCommitsTheWrite) {
  server_->FailNext({.verb = "create", .kind = FaultKind::kTimeout, .delay = std::chrono::milliseconds(200)});
  const auto start = Clock::now();
  auto r = client_->Post(kConfigMaps, ConfigMap("a"));
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(200));
  EXPECT_EQ(r.status, 504);
  EXPECT_EQ(r.Reason(), "Timeout");
  EXPECT_FALSE(server_->Get("configmaps", "ml", "a").ok());

  server_->FailNext({.verb = "create", .kind = FaultKind::kTimeout, .after_apply = true});
  EXPECT_EQ(client_->Post(kConfigMaps, ConfigMap("b")).status, 504);
  EXPECT_TRUE(server_->Get("configmaps", "ml", "b").ok());  // committed; only the answer was lost
  EXPECT_EQ(client_->Post(kConfigMaps, ConfigMap("b")).Reason(), "AlreadyExists");
}

// Until cleared: cpprest may send a request again, once, on a new connection when a reused
// keep-alive connection fails (POST included; whether it does depends on timing), so a single
// reset can come back as the answer to the resend, e.g. AlreadyExists for a committed create.
TEST_F(FaultsOnTheWire, ResetClosesTheConnectionWithoutAnAnswer) {
  server_->FailNext({.name = "reset", .verb = "create", .kind = FaultKind::kReset, .count = -1});
  auto r = client_->Post(kConfigMaps, ConfigMap("a"));
  EXPECT_EQ(r.status, 0) << r.body;  // a network error, not an HTTP answer
  EXPECT_FALSE(server_->Get("configmaps", "ml", "a").ok());
  EXPECT_GE(server_->faults().fired("reset"), 1u);
  server_->ClearFaults();
  EXPECT_EQ(client_->Get(kConfigMaps).status, 200);  // the server goes on serving
}

TEST_F(FaultsOnTheWire, ResetAfterApplyLosesTheAnswerOfACommittedWrite) {
  server_->FailNext({.verb = "create", .kind = FaultKind::kReset, .count = -1, .after_apply = true});
  EXPECT_EQ(client_->Post(kConfigMaps, ConfigMap("b")).status, 0);
  EXPECT_TRUE(server_->Get("configmaps", "ml", "b").ok());  // committed; only the answer was lost
}

TEST_F(FaultsOnTheWire, SlowServesAfterTheDelay) {
  server_->FailNext({.verb = "get", .kind = FaultKind::kSlow, .delay = std::chrono::milliseconds(200)});
  ASSERT_EQ(client_->Post(kConfigMaps, ConfigMap("a")).status, 201);
  const auto start = Clock::now();
  EXPECT_EQ(client_->Get(std::string(kConfigMaps) + "/a").status, 200);
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(200));
}

TEST_F(FaultsOnTheWire, WatchGoneIsAnErrorEventWithStatus410Expired) {
  server_->FailNext({.verb = "watch", .kind = FaultKind::kWatchGone});
  auto stream = client_->Watch(std::string(kConfigMaps) + "?watch=1&resourceVersion=1");
  ASSERT_TRUE(stream);
  EXPECT_EQ(stream->status(), 200);
  Json event = NextEvent(*stream);
  EXPECT_EQ(event["type"], "ERROR") << event.dump();
  EXPECT_EQ(event["object"]["code"], 410);
  EXPECT_EQ(event["object"]["reason"], "Expired");
  EXPECT_TRUE(NextEvent(*stream).is_null());  // then the end
}

TEST_F(FaultsOnTheWire, WatchCloseEndsTheStreamWithoutAnyEvent) {
  ASSERT_EQ(client_->Post(kConfigMaps, ConfigMap("a")).status, 201);
  server_->FailNext({.verb = "watch", .kind = FaultKind::kWatchClose});
  auto stream = client_->Watch(std::string(kConfigMaps) + "?watch=1");
  ASSERT_TRUE(stream);
  EXPECT_TRUE(NextEvent(*stream).is_null());  // not even the synthetic ADDED
}

TEST_F(FaultsOnTheWire, WatchStallSendsNothingUntilItEnds) {
  server_->FailNext({.verb = "watch", .kind = FaultKind::kWatchStall, .delay = std::chrono::milliseconds(300)});
  auto stream = client_->Watch(std::string(kConfigMaps) + "?watch=1&allowWatchBookmarks=true");
  ASSERT_TRUE(stream);
  ASSERT_EQ(client_->Post(kConfigMaps, ConfigMap("a")).status, 201);  // never delivered
  const auto start = Clock::now();
  EXPECT_TRUE(NextEvent(*stream).is_null());
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(200));
}

TEST_F(FaultsOnTheWire, ControlEndpointTakesRulesAndReportsFiredCounts) {
  EXPECT_EQ(client_->Post("/fake/faults", Json{{"kind", "nope"}}).status, 400);
  ASSERT_EQ(client_->Post("/fake/faults", Json{{"name", "lists"}, {"verb", "list"}, {"resource", "configmaps"},
                                               {"code", 503}, {"count", 2}})
                .status,
            200);
  EXPECT_EQ(client_->Get(kConfigMaps).status, 503);
  auto state = client_->Get("/fake/faults").Json();
  EXPECT_EQ(state["fired"]["lists"], 1) << state.dump();
  EXPECT_EQ(state["rules"][0]["count"], 1) << state.dump();
  EXPECT_EQ(client_->Send("DELETE", "/fake/faults").status, 200);
  EXPECT_EQ(client_->Get(kConfigMaps).status, 200);
}

}  // namespace
}  // namespace phalanx::fakes::apiserver
