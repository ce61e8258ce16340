#include "core/kube/informer.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "tests/unit/core/kube/mini_apiserver.h"
#include "tests/unit/core/kube/test_server.h"

namespace phalanx::kube {
namespace {

using testing::MiniApiServer;
using testing::Pod;
using testing::WaitUntil;
using namespace std::chrono_literals;

// The lean struct a daemon would keep instead of the JSON.
struct LeanPod {
  std::string ns, name, node, app, rv;
};

Result<LeanPod> DecodeLeanPod(const Json& j) {
  if (!j.contains("metadata")) return InvalidArgumentError("no metadata");
  const Json& m = j["metadata"];
  LeanPod p;
  p.ns = m.value("namespace", "");
  p.name = m.value("name", "");
  p.rv = m.value("resourceVersion", "");
  if (m.contains("labels")) p.app = m["labels"].value("app", "");
  if (j.contains("spec")) p.node = j["spec"].value("nodeName", "");
  return p;
}

// Records handler calls as strings, thread-safe.
class Recorder {
 public:
  Informer<LeanPod>::Handlers Handlers() {
    return {[this](const LeanPod& p) { Push("add " + p.ns + "/" + p.name + "@" + p.rv); },
            [this](const LeanPod& o, const LeanPod& n) {
              Push("update " + n.ns + "/" + n.name + " " + o.rv + "->" + n.rv);
            },
            [this](const LeanPod& p) { Push("delete " + p.ns + "/" + p.name); }};
  }
  std::vector<std::string> Events() const {
    std::lock_guard lock(mu_);
    return events_;
  }
  size_t Count() const {
    std::lock_guard lock(mu_);
    return events_.size();
  }
  void Clear() {
    std::lock_guard lock(mu_);
    events_.clear();
  }

 private:
  void Push(std::string s) {
    std::lock_guard lock(mu_);
    events_.push_back(std::move(s));
  }
  mutable std::mutex mu_;
  std::vector<std::string> events_;
};

class InformerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.started().ok());
    KubeConfig config;
    config.server = server_.url();
    ClientOptions o;
    o.qps = 0;
    auto c = KubeClient::Create(config, o);
    ASSERT_TRUE(c.ok()) << c.status();
    client_ = std::move(*c);
  }
  InformerOptions Options() {
    InformerOptions o;
    o.resource = resources::kPods;
    o.page_size = 2;  // several pages even for small lists
    o.backoff = {10ms, 50ms, 0ms, false};
    return o;
  }
  std::unique_ptr<Informer<LeanPod>> Make(InformerOptions o) {
    auto inf = std::make_unique<Informer<LeanPod>>(*client_, std::move(o), DecodeLeanPod);
    inf->AddIndex("node", [](const LeanPod& p) {
      return p.node.empty() ? std::vector<std::string>{} : std::vector<std::string>{p.node};
    });
    inf->AddIndex("app", [](const LeanPod& p) {
      return p.app.empty() ? std::vector<std::string>{} : std::vector<std::string>{p.app};
    });
    inf->AddHandlers(rec_.Handlers());
    return inf;
  }

  MiniApiServer server_;
  std::unique_ptr<KubeClient> client_;
  Recorder rec_;
};

TEST_F(InformerTest, InitialSyncIndexesAndHandlers) {
  server_.Upsert(Pod("ml", "a", "n1", "train"));  // rv 101
  server_.Upsert(Pod("ml", "b", "n1", "serve"));  // 102
  server_.Upsert(Pod("dev", "c", "n2", "train"));  // 103
  auto inf = Make(Options());
  EXPECT_FALSE(inf->HasSynced());
  inf->Start();
  ASSERT_TRUE(inf->WaitForSync(20s));
  EXPECT_EQ(inf->Size(), 3u);
  EXPECT_EQ(inf->Get("ml/a")->node, "n1");
  EXPECT_EQ(inf->Get("ml/zz"), nullptr);
  EXPECT_EQ(inf->ByNamespace("ml").size(), 2u);
  EXPECT_EQ(inf->ByIndex("node", "n1").size(), 2u);
  EXPECT_EQ(inf->ByIndex("app", "train").size(), 2u);
  EXPECT_EQ(inf->ByIndex("nope", "x").size(), 0u);
  auto ev = rec_.Events();
  std::sort(ev.begin(), ev.end());
  EXPECT_EQ(ev, (std::vector<std::string>{"add dev/c@103", "add ml/a@101", "add ml/b@102"}));
  // Paginated: 2 per page -> 2 list requests.
  const auto targets = server_.targets();
  ASSERT_GE(targets.size(), 2u);
  EXPECT_EQ(targets[0], "/api/v1/pods?limit=2");
  EXPECT_EQ(targets[1], "/api/v1/pods?limit=2&continue=2");

  // Watch starts from the list's resourceVersion, with bookmarks.
  ASSERT_TRUE(WaitUntil([&] { return server_.live_watches() == 1; }));
  const std::string watch = server_.targets()[2];
  EXPECT_EQ(watch.rfind("/api/v1/pods?watch=1&resourceVersion=103&allowWatchBookmarks=true&timeoutSeconds=", 0), 0u)
      << watch;
}

TEST_F(InformerTest, WatchEventsUpdateCacheIndexesAndHandlersInOrder) {
  server_.Upsert(Pod("ml", "a", "n1"));  // 101
  auto inf = Make(Options());
  inf->Start();
  ASSERT_TRUE(inf->WaitForSync(20s));
  ASSERT_TRUE(WaitUntil([&] { return server_.live_watches() == 1; }));
  server_.Upsert(Pod("ml", "b", "n2"));  // 102 add
  server_.Upsert(Pod("ml", "a", "n3"));  // 103 modify: moves index n1 -> n3
  server_.Delete("ml/b");                // 104
  ASSERT_TRUE(WaitUntil([&] { return rec_.Count() == 4; }));
  EXPECT_EQ(rec_.Events(), (std::vector<std::string>{"add ml/a@101", "add ml/b@102", "update ml/a 101->103",
                                                     "delete ml/b"}));
  EXPECT_EQ(inf->ByIndex("node", "n1").size(), 0u);
  EXPECT_EQ(inf->ByIndex("node", "n3").size(), 1u);
  EXPECT_EQ(inf->ByIndex("node", "n2").size(), 0u);
  EXPECT_EQ(inf->Size(), 1u);
  EXPECT_EQ(inf->reflector().last_resource_version(), "104");
}

TEST_F(InformerTest, ResumesAfterDisconnectWithoutLossOrDuplicates) {
  server_.Upsert(Pod("ml", "a"));  // 101
  auto inf = Make(Options());
  inf->Start();
  ASSERT_TRUE(inf->WaitForSync(20s));
  ASSERT_TRUE(WaitUntil([&] { return server_.live_watches() == 1; }));
  server_.Upsert(Pod("ml", "b"));  // 102, seen on the first watch
  ASSERT_TRUE(WaitUntil([&] { return rec_.Count() == 2; }));
  for (int round = 0; round < 3; ++round) {
    // Changes made while no watch is open are replayed from history on reconnect.
    server_.Atomically([&] { server_.DropWatchesLocked(); });
    const std::string n = std::to_string(round);
    server_.Upsert(Pod("ml", std::string("r").append(n)));
    server_.Upsert(Pod("ml", "a", std::string("n").append(n)));
    ASSERT_TRUE(WaitUntil([&] { return server_.live_watches() == 1 && rec_.Count() == static_cast<size_t>(4 + 2 * round); }))
        << rec_.Count();
  }
  EXPECT_EQ(rec_.Events(),
            (std::vector<std::string>{"add ml/a@101", "add ml/b@102", "add ml/r0@103", "update ml/a 101->104",
                                      "add ml/r1@105", "update ml/a 104->106", "add ml/r2@107",
                                      "update ml/a 106->108"}));
  EXPECT_EQ(inf->reflector().lists(), 1u);  // never relisted
  EXPECT_GE(inf->reflector().watches(), 4u);
  // Each reconnect resumed from the last version seen.
  const auto targets = server_.targets();
  int resumed_from_102 = 0;
  for (const auto& t : targets) resumed_from_102 += t.find("resourceVersion=102&") != std::string::npos;
  EXPECT_EQ(resumed_from_102, 1);
}

void RelistTest(MiniApiServer& server, Informer<LeanPod>& inf, Recorder& rec) {
  server.Upsert(Pod("ml", "keep"));    // 101
  server.Upsert(Pod("ml", "change"));  // 102
  server.Upsert(Pod("ml", "gone"));    // 103
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(20s));
  ASSERT_TRUE(WaitUntil([&] { return server.live_watches() == 1; }));
  rec.Clear();
  server.Atomically([&] { server.DropWatchesLocked(); });
  server.Upsert(Pod("ml", "change", "n1"));  // 104
  server.Delete("ml/gone");                  // 105
  server.Upsert(Pod("ml", "new"));           // 106
  server.Compact();                          // the reconnecting watch from 103 is now too old
  ASSERT_TRUE(WaitUntil([&] { return rec.Count() == 3 && inf.reflector().lists() == 2; })) << rec.Count();
  auto ev = rec.Events();
  std::sort(ev.begin(), ev.end());
  EXPECT_EQ(ev, (std::vector<std::string>{"add ml/new@106", "delete ml/gone", "update ml/change 102->104"}));
  EXPECT_EQ(inf.Size(), 3u);
  // And it keeps watching from the new list's version.
  ASSERT_TRUE(WaitUntil([&] { return server.live_watches() == 1; }));
  server.Upsert(Pod("ml", "after"));
  ASSERT_TRUE(WaitUntil([&] { return rec.Count() == 4; }));
  EXPECT_EQ(rec.Events().back(), "add ml/after@107");
}

TEST_F(InformerTest, RelistsOnHttp410WithNeitherMissedNorDuplicatedEvents) {
  server_.set_gone_style(MiniApiServer::GoneStyle::kHttp410);
  auto inf = Make(Options());
  RelistTest(server_, *inf, rec_);
}

TEST_F(InformerTest, RelistsOnErrorEvent410) {
  server_.set_gone_style(MiniApiServer::GoneStyle::kErrorEvent);
  auto inf = Make(Options());
  RelistTest(server_, *inf, rec_);
}

TEST_F(InformerTest, BookmarksAdvanceTheResumeVersion) {
  server_.Upsert(Pod("ml", "a"));  // 101
  auto inf = Make(Options());
  inf->Start();
  ASSERT_TRUE(inf->WaitForSync(20s));
  ASSERT_TRUE(WaitUntil([&] { return server_.live_watches() == 1; }));
  // Changes filtered out elsewhere still advance the server's version; a bookmark carries it.
  server_.Atomically([] {});
  server_.Upsert(Pod("other", "x"));  // 102: seen as an event too (no selector here)
  ASSERT_TRUE(WaitUntil([&] { return rec_.Count() == 2; }));
  server_.Bookmark();  // rv 102
  server_.Upsert(Pod("ml", "a", "n9"));  // 103
  ASSERT_TRUE(WaitUntil([&] { return inf->reflector().last_resource_version() == "103"; }));
  EXPECT_EQ(inf->reflector().events(), 2u);  // bookmarks are not events
}

TEST_F(InformerTest, ResyncRedeliversEveryObject) {
  server_.Upsert(Pod("ml", "a"));
  server_.Upsert(Pod("ml", "b"));
  auto o = Options();
  o.resync_period = 30ms;
  auto inf = Make(o);
  inf->Start();
  ASSERT_TRUE(inf->WaitForSync(20s));
  ASSERT_TRUE(WaitUntil([&] {
    auto ev = rec_.Events();
    return std::count(ev.begin(), ev.end(), "update ml/a 101->101") >= 2;
  }));
}

TEST_F(InformerTest, HandlersAddedLateSeeTheCache) {
  server_.Upsert(Pod("ml", "a"));
  InformerOptions o = Options();
  Informer<LeanPod> inf(*client_, o, DecodeLeanPod);
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(20s));
  Recorder late;
  inf.AddHandlers(late.Handlers());
  EXPECT_EQ(late.Events(), (std::vector<std::string>{"add ml/a@101"}));
}

TEST_F(InformerTest, StopIsPromptWhileWatching) {
  auto inf = Make(Options());
  inf->Start();
  ASSERT_TRUE(inf->WaitForSync(20s));
  ASSERT_TRUE(WaitUntil([&] { return server_.live_watches() == 1; }));
  const auto start = std::chrono::steady_clock::now();
  inf->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST_F(InformerTest, JsonInformerWithLabelAndFieldIndexes) {
  server_.Upsert(Pod("ml", "a", "n1", "train"));
  JsonInformer inf(*client_, Options(), JsonIdentity());
  inf.AddIndex("app", JsonLabelIndex("app"));
  inf.AddIndex("node", JsonFieldIndex("/spec/nodeName"));
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(20s));
  ASSERT_EQ(inf.ByIndex("app", "train").size(), 1u);
  EXPECT_EQ((*inf.ByIndex("node", "n1")[0])["metadata"]["name"], "a");
}

TEST_F(InformerTest, JsonPathDropsManagedFieldsAndRawPathSeesEverything) {
  Json pod = Pod("ml", "a");
  pod["metadata"]["managedFields"] = Json::array({{{"manager", "kubectl"}}});
  pod["spec"]["managedFields"] = "kept: only metadata.managedFields is dropped";
  server_.Upsert(pod);
  JsonInformer lean(*client_, Options(), JsonIdentity());
  InformerOptions keep = Options();
  keep.keep_managed_fields = true;
  JsonInformer full(*client_, keep, JsonIdentity());
  Informer<std::string> raw(*client_, Options(), Informer<std::string>::RawDecode{[](std::string_view text) -> Result<std::string> {
    return std::string(text);
  }});
  lean.Start();
  full.Start();
  raw.Start();
  ASSERT_TRUE(lean.WaitForSync(20s) && full.WaitForSync(20s) && raw.WaitForSync(20s));
  EXPECT_FALSE(lean.Get("ml/a")->at("metadata").contains("managedFields"));
  EXPECT_EQ(lean.Get("ml/a")->at("spec").at("managedFields"), "kept: only metadata.managedFields is dropped");
  EXPECT_TRUE(full.Get("ml/a")->at("metadata").contains("managedFields"));
  EXPECT_NE(raw.Get("ml/a")->find("\"managedFields\":[{\"manager\":\"kubectl\"}]"), std::string::npos);
}

TEST_F(InformerTest, ThrowingOrFailingDecodersSkipTheObject) {
  server_.Upsert(Pod("ml", "good"));
  server_.Upsert(Pod("ml", "bad"));
  server_.Upsert(Pod("ml", "throws"));
  Informer<LeanPod> inf(*client_, Options(), [](const Json& j) -> Result<LeanPod> {
    const std::string name = j.at("metadata").at("name");
    if (name == "bad") return InvalidArgumentError("no");
    if (name == "throws") (void)j.at("no-such-field");
    return DecodeLeanPod(j);
  });
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(20s));
  EXPECT_EQ(inf.Size(), 1u);
  ASSERT_TRUE(WaitUntil([&] { return server_.live_watches() == 1; }));
  server_.Upsert(Pod("ml", "throws", "n1"));  // a watch event that throws: skipped, informer alive
  server_.Upsert(Pod("ml", "good2"));
  ASSERT_TRUE(WaitUntil([&] { return inf.Size() == 2; }));
  EXPECT_NE(inf.Get("ml/good2"), nullptr);
}

TEST(WatchParseTest, EventsAndErrors) {
  auto ev = ParseWatchEvent(R"({"type":"MODIFIED","object":{"metadata":{"name":"a","namespace":"ml","resourceVersion":"9"}}})");
  ASSERT_TRUE(ev.ok());
  EXPECT_EQ(ev->type, EventType::kModified);
  EXPECT_EQ(ev->meta.resource_version, "9");
  EXPECT_EQ(ev->meta.Key(), "ml/a");
  EXPECT_EQ((*ev->Object())["metadata"]["name"], "a");
  auto gone = ParseWatchEvent(R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old"}})");
  EXPECT_TRUE(IsGone(gone.status())) << gone.status();
  auto other = ParseWatchEvent(R"({"type":"ERROR","object":{"kind":"Status","code":500,"message":"boom"}})");
  EXPECT_EQ(other.status().code(), StatusCode::kUnavailable);
  EXPECT_FALSE(ParseWatchEvent(R"({"type":"WHAT","object":{}})").ok());
  EXPECT_FALSE(ParseWatchEvent("not json").ok());
}

}  // namespace
}  // namespace phalanx::kube
