#include "core/metrics/registry.h"

#include <atomic>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace phalanx::metrics {
namespace {

TEST(RegistryTest, ExposesGoldenText) {
  Registry registry;
  auto requests = registry.AddCounter("phalanx_extender_requests_total", "Requests served.",
                                      {"verb", "result"});
  ASSERT_TRUE(requests.ok()) << requests.status();
  // Created out of order: exposition sorts children by label values.
  (*(*requests)->WithLabels({"filter", "ok"}))->Add(3);
  (*(*requests)->WithLabels({"filter", "error"}))->Add(0.5);
  (*(*requests)->WithLabels({"bind", "error"}))->Inc();

  auto held = registry.AddGauge("phalanx_extender_held_binds", "Binds held at the barrier.");
  ASSERT_TRUE(held.ok()) << held.status();
  (*(*held)->WithLabels({}))->Set(2);

  auto latency = registry.AddHistogram("phalanx_extender_request_duration_seconds",
                                       "Server time per verb.", {"verb"}, {0.25, 1, 4});
  ASSERT_TRUE(latency.ok()) << latency.status();
  Histogram* filter = *(*latency)->WithLabels({"filter"});
  for (double v : {0.25, 0.5, 2.0, 8.0}) filter->Observe(v);

  // A labelled family without children yet is left out entirely.
  ASSERT_TRUE(registry.AddCounter("phalanx_extender_unused_total", "Unused.", {"reason"}).ok());

  EXPECT_EQ(registry.Expose(),
            "# HELP phalanx_extender_held_binds Binds held at the barrier.\n"
            "# TYPE phalanx_extender_held_binds gauge\n"
            "phalanx_extender_held_binds 2\n"
            "# HELP phalanx_extender_request_duration_seconds Server time per verb.\n"
            "# TYPE phalanx_extender_request_duration_seconds histogram\n"
            "phalanx_extender_request_duration_seconds_bucket{verb=\"filter\",le=\"0.25\"} 1\n"
            "phalanx_extender_request_duration_seconds_bucket{verb=\"filter\",le=\"1\"} 2\n"
            "phalanx_extender_request_duration_seconds_bucket{verb=\"filter\",le=\"4\"} 3\n"
            "phalanx_extender_request_duration_seconds_bucket{verb=\"filter\",le=\"+Inf\"} 4\n"
            "phalanx_extender_request_duration_seconds_sum{verb=\"filter\"} 10.75\n"
            "phalanx_extender_request_duration_seconds_count{verb=\"filter\"} 4\n"
            "# HELP phalanx_extender_requests_total Requests served.\n"
            "# TYPE phalanx_extender_requests_total counter\n"
            "phalanx_extender_requests_total{verb=\"bind\",result=\"error\"} 1\n"
            "phalanx_extender_requests_total{verb=\"filter\",result=\"error\"} 0.5\n"
            "phalanx_extender_requests_total{verb=\"filter\",result=\"ok\"} 3\n");
}

TEST(RegistryTest, EscapesHelpAndLabelValuesInExposition) {
  Registry registry;
  auto family = registry.AddGauge("m", "Line one\nline two with \\ backslash", {"path"});
  ASSERT_TRUE(family.ok());
  (*(*family)->WithLabels({"C:\\dir \"quoted\"\nnext"}))->Set(1);
  EXPECT_EQ(registry.Expose(),
            "# HELP m Line one\\nline two with \\\\ backslash\n"
            "# TYPE m gauge\n"
            "m{path=\"C:\\\\dir \\\"quoted\\\"\\nnext\"} 1\n");
}

TEST(RegistryTest, UnlabelledFamilyIsExposedAsZeroBeforeFirstUse) {
  Registry registry;
  ASSERT_TRUE(registry.AddCounter("phalanx_operator_restarts_total", "Restarts.").ok());
  ASSERT_TRUE(registry.AddHistogram("h_seconds", "H.", {}, {1}).ok());
  EXPECT_EQ(registry.Expose(),
            "# HELP h_seconds H.\n"
            "# TYPE h_seconds histogram\n"
            "h_seconds_bucket{le=\"1\"} 0\n"
            "h_seconds_bucket{le=\"+Inf\"} 0\n"
            "h_seconds_sum 0\n"
            "h_seconds_count 0\n"
            "# HELP phalanx_operator_restarts_total Restarts.\n"
            "# TYPE phalanx_operator_restarts_total counter\n"
            "phalanx_operator_restarts_total 0\n");
}

TEST(RegistryTest, CallbackGaugeIsReadAtScrapeTime) {
  Registry registry;
  auto family = registry.AddGauge("phalanx_operator_workqueue_depth", "Keys waiting.");
  ASSERT_TRUE(family.ok());
  Gauge* depth = *(*family)->WithLabels({});
  int queued = 4;
  depth->SetCallback([&queued] { return static_cast<double>(queued); });
  EXPECT_NE(registry.Expose().find("phalanx_operator_workqueue_depth 4\n"), std::string::npos);
  queued = 9;
  EXPECT_NE(registry.Expose().find("phalanx_operator_workqueue_depth 9\n"), std::string::npos);
  depth->ClearCallback();
  EXPECT_NE(registry.Expose().find("phalanx_operator_workqueue_depth 0\n"), std::string::npos);
}

TEST(RegistryTest, ChildrenAreStableAndShared) {
  Registry registry;
  CounterFamily* family = *registry.AddCounter("c_total", "C.", {"verb"});
  Counter* a = *family->WithLabels({"filter"});
  Counter* b = *family->WithLabels({"filter"});
  EXPECT_EQ(a, b);
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(family->WithLabels({std::to_string(i)}).ok());
  EXPECT_EQ(*family->WithLabels({"filter"}), a);
}

TEST(RegistryTest, WrongLabelArityIsInvalidArgument) {
  Registry registry;
  CounterFamily* family =
      *registry.AddCounter("phalanx_extender_requests_total", "R.", {"verb", "result"});
  auto too_few = family->WithLabels({"filter"});
  ASSERT_FALSE(too_few.ok());
  EXPECT_EQ(too_few.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(too_few.status().message(),
            "metric phalanx_extender_requests_total: got 1 label value(s) [filter] for 2 label "
            "name(s) [verb,result]");
  EXPECT_EQ(family->WithLabels({"a", "b", "c"}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(family->WithLabels({}).status().code(), StatusCode::kInvalidArgument);
  // Nothing was created by the failed calls.
  EXPECT_EQ(registry.Expose(), "");
}

TEST(RegistryTest, InvalidNamesAreRejected) {
  Registry registry;
  auto bad_metric = registry.AddCounter("9lives_total", "x");
  EXPECT_EQ(bad_metric.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad_metric.status().message(),
            "invalid metric name \"9lives_total\": must match [a-zA-Z_:][a-zA-Z0-9_:]*");

  auto bad_label = registry.AddGauge("g", "x", {"node-name"});
  EXPECT_EQ(bad_label.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad_label.status().message(),
            "metric g: invalid label name \"node-name\": must match [a-zA-Z_][a-zA-Z0-9_]*");

  EXPECT_EQ(registry.AddGauge("g", "x", {"__reserved"}).status().code(),
            StatusCode::kInvalidArgument);
  auto dup = registry.AddGauge("g", "x", {"verb", "verb"});
  EXPECT_EQ(dup.status().message(), "metric g: duplicate label name verb");
  auto le = registry.AddHistogram("h", "x", {"le"}, {1});
  EXPECT_EQ(le.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(le.status().message(), "metric h: label name \"le\" is reserved for histogram buckets");
  // "le" is an ordinary label outside histograms.
  EXPECT_TRUE(registry.AddGauge("g_le", "x", {"le"}).ok());
  EXPECT_EQ(registry.Expose(), "");
}

TEST(RegistryTest, InvalidBucketsAreRejected) {
  Registry registry;
  auto r = registry.AddHistogram("h", "x", {}, {1, 0.5});
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "metric h: histogram bucket bounds must be strictly increasing: bound 1 (0.5) <= "
            "bound 0 (1)");
}

TEST(RegistryTest, SameShapeReturnsTheSameFamily) {
  Registry registry;
  auto first = registry.AddCounter("c_total", "C.", {"verb"});
  auto second = registry.AddCounter("c_total", "C.", {"verb"});
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(*first, *second);
  auto h1 = registry.AddHistogram("h", "H.", {}, {1, 2});
  auto h2 = registry.AddHistogram("h", "H.", {}, {1, 2, std::numeric_limits<double>::infinity()});
  ASSERT_TRUE(h1.ok() && h2.ok());
  EXPECT_EQ(*h1, *h2);
}

TEST(RegistryTest, DifferentShapeUnderSameNameIsAlreadyExists) {
  Registry registry;
  ASSERT_TRUE(registry.AddCounter("m", "M.", {"verb"}).ok());
  auto as_gauge = registry.AddGauge("m", "M.", {"verb"});
  EXPECT_EQ(as_gauge.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(as_gauge.status().message(),
            "metric m already registered as counter with labels [verb], not as gauge with labels "
            "[verb]");
  auto other_labels = registry.AddCounter("m", "M.", {"verb", "result"});
  EXPECT_EQ(other_labels.status().code(), StatusCode::kAlreadyExists);
  auto other_help = registry.AddCounter("m", "Other.", {"verb"});
  EXPECT_EQ(other_help.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(other_help.status().message(),
            "metric m already registered with help \"M.\", not \"Other.\"");

  ASSERT_TRUE(registry.AddHistogram("h", "H.", {}, {1, 2}).ok());
  auto other_buckets = registry.AddHistogram("h", "H.", {}, {1, 3});
  EXPECT_EQ(other_buckets.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(other_buckets.status().message(),
            "metric h already registered as histogram with labels [] and buckets [1,2], not as "
            "histogram with labels [] and buckets [1,3]");
}

TEST(RegistryTest, HistogramSeriesMayNotCollideWithOtherFamilies) {
  Registry registry;
  ASSERT_TRUE(registry.AddHistogram("x", "X.", {}, {1}).ok());
  auto count = registry.AddCounter("x_count", "C.");
  EXPECT_EQ(count.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(count.status().message(), "metric x_count: series x_count collides with histogram x");

  ASSERT_TRUE(registry.AddGauge("y_sum", "Y.").ok());
  EXPECT_EQ(registry.AddHistogram("y", "Y.", {}, {1}).status().code(),
            StatusCode::kAlreadyExists);
}

// Parses "series value" lines into a map (comments skipped).
std::map<std::string, std::string> ParseSamples(const std::string& text) {
  std::map<std::string, std::string> samples;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    samples[line.substr(0, space)] = line.substr(space + 1);
  }
  return samples;
}

TEST(RegistryTest, ConcurrentObserveCreateAndExposeStayConsistent) {
  Registry registry;
  HistogramFamily* family =
      *registry.AddHistogram("lat_seconds", "L.", {"shard"}, {0.001, 0.01, 0.1, 1});
  CounterFamily* counters = *registry.AddCounter("ops_total", "O.", {"shard"});
  constexpr int kWriters = 4;
  constexpr int kPerWriter = 100'000;
  constexpr int kShards = 16;
  std::atomic<int> writers_left{kWriters};
  std::atomic<int> expositions{0};
  std::atomic<int> inconsistencies{0};

  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      for (int i = 0; i < kPerWriter; ++i) {
        // Child creation races with exposition too: a new shard every 1000 observations.
        const std::string shard = std::to_string((w * kPerWriter + i) / 1000 % kShards);
        if (i % 1000 == 0 || i + 1 == kPerWriter) {
          ASSERT_TRUE(counters->WithLabels({shard}).ok());
        }
        (*family->WithLabels({std::to_string(w)}))->Observe((i % 7) * 0.003);
        (*counters->WithLabels({shard}))->Inc();
      }
      writers_left.fetch_sub(1);
    });
  }
  for (int e = 0; e < 2; ++e) {
    threads.emplace_back([&] {
      // At least 20 scrapes each, and keep scraping while writers run.
      for (int n = 0; n < 20 || writers_left.load() > 0; ++n) {
        const auto samples = ParseSamples(registry.Expose());
        for (const auto& [series, value] : samples) {
          const std::string inf = ",le=\"+Inf\"}";
          if (series.size() < inf.size() ||
              series.compare(series.size() - inf.size(), inf.size(), inf) != 0) {
            continue;
          }
          // lat_seconds_bucket{shard="w",le="+Inf"} must equal lat_seconds_count{shard="w"}.
          std::string count = series.substr(0, series.size() - inf.size()) + "}";
          count.replace(count.find("_bucket"), 7, "_count");
          auto it = samples.find(count);
          if (it == samples.end() || it->second != value) inconsistencies.fetch_add(1);
        }
        expositions.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();

  EXPECT_EQ(inconsistencies.load(), 0);
  EXPECT_GE(expositions.load(), 40);
  const auto samples = ParseSamples(registry.Expose());
  double total_ops = 0;
  uint64_t total_observations = 0;
  for (const auto& [series, value] : samples) {
    if (series.starts_with("ops_total{")) total_ops += std::stod(value);
    if (series.starts_with("lat_seconds_count{")) total_observations += std::stoull(value);
  }
  EXPECT_EQ(total_ops, static_cast<double>(kWriters) * kPerWriter);
  EXPECT_EQ(total_observations, static_cast<uint64_t>(kWriters) * kPerWriter);
}

}  // namespace
}  // namespace phalanx::metrics
