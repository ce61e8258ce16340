// The device plugin's shared state under the threads that touch it in the daemon, without gRPC in
// between: the pod watch writing the PodCache while kubelet's calls read it, the health monitor
// writing the HealthTable while ListAndWatch subscribers and the publisher read it, and
// concurrent GetPreferredAllocation calls on one AdmissionMatcher (gRPC runs callbacks on any of
// its threads). Labelled `tsan`: under `make tsan` this is what checks the device plugin's
// locking, because Debian's gRPC is not instrumented and the daemon's gRPC tests cannot be
// (docs/hardening.md "Sanitizers"). In the normal build it checks the same invariants.
#include <atomic>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/placement/topology_bandwidth.h"
#include "core/topology/reference_machines.h"
#include "device-plugin/plugin/admission_match.h"
#include "device-plugin/plugin/health_table.h"
#include "device-plugin/publish/pod_cache.h"
#include "tests/unit/device-plugin/plugin/test_resources.h"

namespace phalanx::device_plugin {
namespace {

using namespace std::chrono_literals;

PodOnNode MakePod(int i, uint64_t rv) {
  PodOnNode p;
  p.uid = "uid-" + std::to_string(i);
  p.ns = "ml";
  p.name = "p" + std::to_string(i);
  p.phase = "Pending";
  p.resource_version = rv;
  return p;
}

// The watch thread puts and removes pods while readers take snapshots and wait for changes:
// every snapshot is whole (in arrival order, no pod twice), versions never go back, and a reader
// waiting for a change is woken by it.
TEST(DevicePluginConcurrencyTest, PodCacheReadersSeeWholeSnapshotsWhileTheWatchWrites) {
  PodCache cache;
  constexpr int kPods = 400;
  std::atomic<bool> done{false};
  std::atomic<int> bad_snapshots{0}, wakeups{0};

  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&] {
      uint64_t seen = 0;
      while (!done.load()) {
        const uint64_t v = cache.version();
        if (v < seen) ++bad_snapshots;
        seen = v;
        PodCache::Snapshot pods = cache.Pods();
        std::set<std::string> names;
        for (size_t i = 0; i < pods->size(); ++i) {
          if (!names.insert((*pods)[i].name).second) ++bad_snapshots;
          if (i > 0 && std::tie((*pods)[i - 1].arrival_rv, (*pods)[i - 1].arrival_seq) >=
                           std::tie((*pods)[i].arrival_rv, (*pods)[i].arrival_seq)) {
            ++bad_snapshots;
          }
        }
        if (cache.WaitForChange(seen, std::chrono::steady_clock::now() + 50ms)) ++wakeups;
      }
    });
  }

  std::thread watch([&] {
    for (int i = 0; i < kPods; ++i) {
      cache.Put(MakePod(i, 100 + i));
      if (i % 3 == 0) {
        PodOnNode again = MakePod(i, 100 + kPods + i);  // an update keeps its arrival
        again.phase = "Running";
        cache.Put(std::move(again));
      }
      if (i % 5 == 4) cache.Remove("ml", "p" + std::to_string(i - 2));
    }
    cache.SetSynced();
  });
  watch.join();
  done = true;
  for (auto& t : readers) t.join();

  EXPECT_EQ(bad_snapshots.load(), 0);
  EXPECT_GT(wakeups.load(), 0);
  EXPECT_TRUE(cache.Synced());
  PodCache::Snapshot final_pods = cache.Pods();
  EXPECT_EQ(final_pods->size(), static_cast<size_t>(kPods - kPods / 5));
  // Arrival order survives updates: p0 (updated to Running) is still first.
  ASSERT_FALSE(final_pods->empty());
  EXPECT_EQ(final_pods->front().name, "p0");
  EXPECT_EQ(final_pods->front().phase, "Running");
}

// Two health writers (the event loop and the poll fallback) on their own devices, readers asking
// for effective health, and ListAndWatch streams subscribing and leaving: the listener that stays
// subscribed hears every change, and the table ends as the writers left it.
TEST(DevicePluginConcurrencyTest, HealthTableNotifiesEveryChangeWhileReadersRead) {
  HealthTable table;
  std::atomic<int> heard{0};
  const int steady = table.Subscribe([&] { ++heard; });
  std::atomic<bool> done{false};
  std::atomic<int> changes{0};

  auto writer = [&](const std::string& prefix) {
    for (int round = 0; round < 300; ++round) {
      const std::string uuid = prefix + std::to_string(round % 4);
      if (table.SetUnhealthy(uuid, "XID 79", 79, MonotonicTime{} + std::chrono::seconds(round))) ++changes;
      if (round % 2 == 1 && table.SetHealthy(uuid)) ++changes;
    }
  };
  std::thread reader([&] {
    while (!done.load()) {
      for (int i = 0; i < 4; ++i) {
        const DeviceHealth h = table.Effective("MIG-a" + std::to_string(i), "GPU-a" + std::to_string(i));
        if (!h.healthy && h.reason.empty()) ADD_FAILURE() << "unhealthy without a reason";
      }
      (void)table.Unhealthy();
    }
  });
  std::thread streams([&] {
    while (!done.load()) {
      const int id = table.Subscribe([] {});
      std::this_thread::yield();
      table.Unsubscribe(id);
    }
  });
  std::thread a(writer, "GPU-a"), b(writer, "GPU-b");
  a.join();
  b.join();
  done = true;
  reader.join();
  streams.join();
  table.Unsubscribe(steady);

  EXPECT_EQ(heard.load(), changes.load());
  EXPECT_EQ(table.version(), static_cast<uint64_t>(changes.load()));
  // Round 299 (odd) made its device healthy again; round 298 left GPU-x2 unhealthy.
  const auto unhealthy = table.Unhealthy();
  EXPECT_EQ(unhealthy.size(), 4u);
  EXPECT_FALSE(table.Get("GPU-a2").healthy);
  EXPECT_FALSE(table.Effective("MIG-x", "GPU-b0").healthy);
  EXPECT_TRUE(table.Get("GPU-a3").healthy);
}

// GetPreferredAllocation calls for one resource arriving on several gRPC threads at once (kubelet
// admits one pod at a time, but nothing in gRPC serialises the callbacks): each pending container
// is identified exactly once, and each gets its own plan.
TEST(DevicePluginConcurrencyTest, AdmissionMatcherServesEachContainerOnceUnderConcurrentCalls) {
  const topology::NodeTopology node = topology::MakeNvlinkPairsNode(8, "NVIDIA RTX A6000", 49140, 4);
  const ResourceSpec gpus = testing::WholeGpuResource(node);
  AdmissionMatcher matcher(gpus, std::make_shared<const placement::BandwidthMatrix>(
                                     placement::BandwidthFromTopology(node)));
  std::vector<std::string> all;
  for (const auto& g : node.gpus) all.push_back(g.uuid.str());
  // 64 single-container pods, each planned to one GPU (round robin: a kubelet admitting them in
  // turn as earlier ones finish would see each GPU free again).
  std::vector<PendingPod> pods;
  for (int i = 0; i < 64; ++i) {
    pods.push_back(PendingPod{.key = "ml/p" + std::to_string(i), .uid = "uid-" + std::to_string(i),
                              .annotated = true,
                              .containers = {PendingContainer{.name = "main", .count = 1, .planned = true,
                                                              .plan = {all[i % 8]}}}});
  }
  std::mutex out_mu;
  std::map<std::string, std::vector<std::string>> answered;  // pod -> devices; guarded by out_mu
  std::atomic<int> duplicates{0}, errors{0};
  std::vector<std::thread> calls;
  for (int t = 0; t < 4; ++t) {
    calls.emplace_back([&] {
      while (true) {
        auto got = matcher.Preferred({.available = all, .size = 1}, pods);
        if (!got.ok()) {
          ++errors;
          return;
        }
        if (!got->identified) return;  // every container served
        std::lock_guard<std::mutex> lock(out_mu);
        if (!answered.emplace(got->pod, got->choice.device_ids).second) ++duplicates;
      }
    });
  }
  for (auto& t : calls) t.join();

  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(duplicates.load(), 0);
  ASSERT_EQ(answered.size(), pods.size());
  for (const PendingPod& p : pods) {
    EXPECT_EQ(answered[p.key], p.containers[0].plan) << p.key;
  }
}

}  // namespace
}  // namespace phalanx::device_plugin
