// Watch streams of the fake API server over raw HTTP: replay from a resourceVersion in order
// without duplicates, concurrent writes, selector transitions, 410 after compaction (ERROR event
// or HTTP 410), bookmarks, server-side stream end.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/fakes/apiserver/fake_apiserver.h"
#include "tests/fakes/apiserver/raw_client.h"

namespace phalanx::fakes::apiserver {
namespace {

using json::Json;
using testing::NextEvent;
using testing::RawClient;

constexpr const char* kConfigMaps = "/api/v1/namespaces/ml/configmaps";

Json ConfigMap(const std::string& name, const std::string& value, const std::string& tier = "a") {
  return {{"metadata", {{"name", name}, {"labels", {{"tier", tier}}}}}, {"data", {{"v", value}}}};
}

uint64_t Rv(const Json& object) {
  return std::stoull(object["metadata"]["resourceVersion"].get<std::string>());
}

std::string EventName(const Json& event) {
  return event["type"].get<std::string>() + " " + event["object"]["metadata"]["name"].get<std::string>();
}

class WatchTest : public ::testing::Test {
 protected:
  void Boot(FakeApiServerOptions options = {}) {
    auto started = FakeApiServer::Start(std::move(options));
    ASSERT_TRUE(started.ok()) << started.status();
    server_ = std::move(started).value();
    client_ = std::make_unique<RawClient>(server_->url());
  }
  void SetUp() override { Boot(); }

  std::unique_ptr<FakeApiServer> server_;
  std::unique_ptr<RawClient> client_;
};

TEST_F(WatchTest, FromResourceVersionDeliversEveryChangeInOrder) {
  const uint64_t start = Rv(client_->Post(kConfigMaps, ConfigMap("before", "0")).Json());
  ASSERT_EQ(client_->Post(kConfigMaps, ConfigMap("a", "1")).status, 201);
  ASSERT_EQ(client_->Patch(std::string(kConfigMaps) + "/a", R"({"data":{"v":"2"}})",
                           "application/merge-patch+json")
                .status,
            200);
  ASSERT_EQ(client_->Delete(std::string(kConfigMaps) + "/a").status, 200);
  ASSERT_EQ(client_->Post(kConfigMaps, ConfigMap("b", "1")).status, 201);

  auto stream = client_->Watch(std::string(kConfigMaps) + "?watch=1&resourceVersion=" + std::to_string(start));
  ASSERT_TRUE(stream);
  EXPECT_EQ(stream->status(), 200);
  std::vector<std::string> seen;
  uint64_t last = start;
  for (int i = 0; i < 4; ++i) {
    Json e = NextEvent(*stream);
    ASSERT_TRUE(e.is_object()) << "stream ended after " << i << " events";
    seen.push_back(EventName(e));
    EXPECT_GT(Rv(e["object"]), last) << e.dump();
    last = Rv(e["object"]);
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"ADDED a", "MODIFIED a", "DELETED a", "ADDED b"}));
  stream->Cancel();
}

TEST_F(WatchTest, WithoutResourceVersionStartsWithSyntheticAdds) {
  ASSERT_EQ(client_->Post(kConfigMaps, ConfigMap("x", "1")).status, 201);
  ASSERT_EQ(client_->Post("/api/v1/namespaces/other/configmaps", ConfigMap("y", "1")).status, 201);
  auto stream = client_->Watch(std::string(kConfigMaps) + "?watch=true");
  ASSERT_TRUE(stream);
  Json first = NextEvent(*stream);
  EXPECT_EQ(EventName(first), "ADDED x");  // namespace ml only
  ASSERT_EQ(client_->Post(kConfigMaps, ConfigMap("z", "1")).status, 201);
  EXPECT_EQ(EventName(NextEvent(*stream)), "ADDED z");
  stream->Cancel();
}

TEST_F(WatchTest, ConcurrentWritesArriveOnceAndInOrder) {
  const uint64_t start = server_->resource_version();
  auto stream = client_->Watch(std::string(kConfigMaps) + "?watch=1&resourceVersion=" + std::to_string(start));
  ASSERT_TRUE(stream);
  constexpr int kWriters = 2, kPerWriter = 100;
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([this, w] {
      RawClient own(server_->url());
      for (int i = 0; i < kPerWriter; ++i) {
        own.Post(kConfigMaps, ConfigMap("w" + std::to_string(w) + "-" + std::to_string(i), "1"));
      }
    });
  }
  std::set<std::string> names;
  uint64_t last = start;
  for (int i = 0; i < kWriters * kPerWriter; ++i) {
    Json e = NextEvent(*stream);
    ASSERT_TRUE(e.is_object()) << "stream ended after " << i << " events";
    EXPECT_EQ(e["type"], "ADDED");
    EXPECT_GT(Rv(e["object"]), last);
    last = Rv(e["object"]);
    EXPECT_TRUE(names.insert(e["object"]["metadata"]["name"].get<std::string>()).second) << e.dump();
  }
  for (auto& t : writers) t.join();
  EXPECT_EQ(names.size(), static_cast<size_t>(kWriters * kPerWriter));
  stream->Cancel();
}

TEST_F(WatchTest, LabelSelectorTurnsTransitionsIntoAddAndDelete) {
  ASSERT_EQ(client_->Post(kConfigMaps, ConfigMap("m", "1", "a")).status, 201);
  auto stream = client_->Watch(std::string(kConfigMaps) + "?watch=1&labelSelector=tier%3Db");
  ASSERT_TRUE(stream);
  const std::string path = std::string(kConfigMaps) + "/m";
  ASSERT_EQ(client_->Patch(path, R"({"metadata":{"labels":{"tier":"b"}}})", "application/merge-patch+json").status,
            200);
  EXPECT_EQ(EventName(NextEvent(*stream)), "ADDED m");
  ASSERT_EQ(client_->Patch(path, R"({"data":{"v":"2"}})", "application/merge-patch+json").status, 200);
  EXPECT_EQ(EventName(NextEvent(*stream)), "MODIFIED m");
  ASSERT_EQ(client_->Patch(path, R"({"metadata":{"labels":{"tier":"c"}}})", "application/merge-patch+json").status,
            200);
  EXPECT_EQ(EventName(NextEvent(*stream)), "DELETED m");
  stream->Cancel();
}

TEST_F(WatchTest, CompactedResourceVersionIsGoneAsErrorEvent) {
  const uint64_t old = Rv(client_->Post(kConfigMaps, ConfigMap("a", "1")).Json());
  ASSERT_EQ(client_->Post(kConfigMaps, ConfigMap("b", "1")).status, 201);
  server_->CompactHistory();
  auto stream = client_->Watch(std::string(kConfigMaps) + "?watch=1&resourceVersion=" + std::to_string(old));
  ASSERT_TRUE(stream);
  EXPECT_EQ(stream->status(), 200);
  Json e = NextEvent(*stream);
  ASSERT_EQ(e["type"], "ERROR") << e.dump();
  EXPECT_EQ(e["object"]["code"], 410);
  EXPECT_EQ(e["object"]["reason"], "Expired");
  EXPECT_TRUE(NextEvent(*stream).is_null());  // then the stream ends

  // The current version is still fine.
  auto current = client_->Watch(std::string(kConfigMaps) + "?watch=1&resourceVersion=" +
                                std::to_string(server_->resource_version()));
  ASSERT_TRUE(current);
  ASSERT_EQ(client_->Post(kConfigMaps, ConfigMap("c", "1")).status, 201);
  EXPECT_EQ(EventName(NextEvent(*current)), "ADDED c");
  current->Cancel();
}

TEST_F(WatchTest, ShortEventWindowExpiresOldVersions) {
  FakeApiServerOptions options;
  options.event_window = 3;
  options.gone_as_http_status = true;
  Boot(options);
  const uint64_t old = Rv(client_->Post(kConfigMaps, ConfigMap("a", "1")).Json());
  for (int i = 0; i < 5; ++i) ASSERT_EQ(client_->Post(kConfigMaps, ConfigMap("n" + std::to_string(i), "1")).status, 201);
  auto gone = client_->Get(std::string(kConfigMaps) + "?watch=1&resourceVersion=" + std::to_string(old));
  EXPECT_EQ(gone.status, 410) << gone.body;
  EXPECT_EQ(gone.Reason(), "Expired");
}

TEST_F(WatchTest, BookmarksOnlyWhenAsked) {
  FakeApiServerOptions options;
  options.bookmark_interval = std::chrono::milliseconds(20);
  Boot(options);
  ASSERT_EQ(client_->Post(kConfigMaps, ConfigMap("a", "1")).status, 201);
  const uint64_t rv = server_->resource_version();
  auto with = client_->Watch(std::string(kConfigMaps) + "?watch=1&allowWatchBookmarks=true&resourceVersion=" +
                             std::to_string(rv));
  auto without = client_->Watch(std::string(kConfigMaps) + "?watch=1&resourceVersion=" + std::to_string(rv));
  ASSERT_TRUE(with && without);
  Json bookmark = NextEvent(*with);
  ASSERT_EQ(bookmark["type"], "BOOKMARK") << bookmark.dump();
  EXPECT_EQ(bookmark["object"]["kind"], "ConfigMap");
  EXPECT_EQ(Rv(bookmark["object"]), rv);
  // Bookmarks go to every asking watch in one pass, so had `without` been sent one, it would
  // come before the change.
  ASSERT_EQ(client_->Post(kConfigMaps, ConfigMap("b", "1")).status, 201);
  EXPECT_EQ(EventName(NextEvent(*without)), "ADDED b");
  with->Cancel();
  without->Cancel();
}

TEST_F(WatchTest, DroppedWatchesEndTheirStreams) {
  auto stream = client_->Watch(std::string(kConfigMaps) + "?watch=1");
  ASSERT_TRUE(stream);
  ASSERT_TRUE(server_->WaitForWatches(1));
  server_->DropWatches();
  EXPECT_TRUE(NextEvent(*stream).is_null());
  EXPECT_EQ(server_->watch_count(), 0u);
}

TEST_F(WatchTest, TimeoutSecondsEndsTheStream) {
  auto stream = client_->Watch(std::string(kConfigMaps) + "?watch=1&timeoutSeconds=1");
  ASSERT_TRUE(stream);
  EXPECT_TRUE(NextEvent(*stream).is_null());  // ends cleanly after ~1 s
}

}  // namespace
}  // namespace phalanx::fakes::apiserver
