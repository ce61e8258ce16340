// engine_trace: the scheduling engine through seeded random workloads (with and without
// team queues: two pools, a cohort, a parent with children, borrowing and lending limits,
// shares, any-pool and topology gangs, graceful and refused evictions, removals, a
// SetQueues), printing everything observable after every pass: admissions, evictions,
// stats, heads, each waiting gang's reason, the ledger's usage, shares and borrowers.
// A change meant to keep behaviour (a speed-up) must print the same on both commits:
//   build/bench/core/scheduling/engine_trace 16 | md5sum
// Not a benchmark: a differential check (bench/RESULTS.md, "Queues").
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/scheduling/engine.h"

namespace phalanx::scheduling {
namespace {

std::shared_ptr<const placement::BandwidthMatrix> Bw() {
  auto bw = std::make_shared<placement::BandwidthMatrix>(8);
  for (int i = 0; i < 8; ++i)
    for (int j = i + 1; j < 8; ++j) bw->Set(i, j, 450);
  return bw;
}

placement::ClusterState Cluster() {
  placement::ClusterState s({"kubernetes.io/hostname", "topology.kubernetes.io/rack"});
  auto bw = Bw();
  for (int i = 0; i < 120; ++i) {
    placement::NodeSpec spec;
    spec.name = NodeName(fmt::format("n{}", i));
    spec.pool = i < 80 ? "H100" : "A100";
    spec.gpu_count = 8;
    spec.healthy = placement::AllGpus(8);
    spec.bandwidth = bw;
    spec.domains = {spec.name.str(), fmt::format("r{}", i / 16)};
    if (!s.AddNode(std::move(spec)).ok()) std::abort();
  }
  return s;
}

QueueConfig Queues(int variant) {
  constexpr Milli G = kMilliGpu;
  QueueConfig c;
  for (int q = 0; q < 8; ++q) {
    QueueSpec s{.name = fmt::format("t{}", q), .cohort = q < 6 ? "org" : "", .weight = 1.0 + q % 3, .parent = "",
                .quotas = {{"H100", (40 + 10 * q + variant * 8) * G, std::nullopt, std::nullopt}}};
    if (q % 2 == 0) s.quotas.push_back({"A100", (30 + 5 * q) * G, std::nullopt, std::nullopt});
    if (q == 3) s.quotas[0].borrowing_limit = 24 * G;
    if (q == 4) s.quotas[0].lending_limit = 16 * G;
    c.queues.push_back(s);
  }
  c.queues.push_back(QueueSpec{.name = "parent", .cohort = "org", .weight = 2, .parent = "",
                               .quotas = {{"H100", 120 * G, std::nullopt, std::nullopt}}});
  for (int k = 0; k < 3; ++k) {
    c.queues.push_back(QueueSpec{.name = fmt::format("child{}", k), .cohort = "", .weight = 1, .parent = "parent",
                                 .quotas = {{"H100", 40 * G, std::nullopt, std::nullopt}}});
  }
  c.default_queue = "t0";
  c.reclaim_after_s = variant == 1 ? 600 : 0;
  if (!c.Validate().ok()) {
    fmt::print(stderr, "bad queues: {}\n", c.Validate().message());
    std::abort();
  }
  return c;
}

class Driver : public EngineDriver {
 public:
  explicit Driver(placement::ClusterState s) : state_(std::move(s)) {}
  const placement::ClusterState& state() const override { return state_; }
  std::optional<std::vector<PodUid>> Admit(const GangRequest& g, const Admission& a) override {
    std::vector<PodUid> pods;
    if (a.share) {
      PodUid pod(g.key.str() + "-0");
      if (!state_.AllocateShare(pod, a.share->first, a.share->second, g.milli, g.priority).ok()) return std::nullopt;
      pods.push_back(pod);
    } else {
      for (size_t m = 0; m < a.members.size(); ++m) {
        PodUid pod(fmt::format("{}-{}", g.key.str(), m));
        if (!state_.Allocate(pod, a.members[m].node, a.members[m].gpus, g.priority).ok()) std::abort();
        pods.push_back(pod);
      }
    }
    pods_[g.key] = pods;
    log.push_back(fmt::format("admit {} kind={} pool={} why={} evicted={}", g.key.str(), static_cast<int>(a.kind), a.pool,
                              a.why, a.evicted.size()));
    return pods;
  }
  std::optional<double> Evict(const GangKey& v, const GangKey& p, std::string_view reason, bool graceful) override {
    log.push_back(fmt::format("evict {} for {} graceful={} reason={}", v.str(), p.str(), graceful, reason));
    if (refuse.contains(v)) return std::nullopt;
    evicted.push_back(v);
    if (graceful) return 45.0;
    Release(v);
    return 0.0;
  }
  double GpuSecondsAtRisk(const GangKey& k) const override { return static_cast<double>(std::hash<std::string>{}(k.str()) % 5000); }
  double NoticeSeconds(const GangKey& k) const override { return std::hash<std::string>{}(k.str()) % 3 == 0 ? 45 : 0; }
  bool IsIdle(const GangKey& k) const override { return std::hash<std::string>{}(k.str()) % 7 == 0; }
  void Release(const GangKey& k) {
    for (const PodUid& p : pods_[k]) (void)state_.Release(p);
    pods_.erase(k);
  }
  placement::ClusterState& mutable_state() { return state_; }
  std::vector<std::string> log;
  std::vector<GangKey> evicted;
  std::set<GangKey> refuse;

 private:
  placement::ClusterState state_;
  std::map<GangKey, std::vector<PodUid>> pods_;
};

void Run(bool queues, unsigned seed, std::FILE* out) {
  std::mt19937 rng(seed);
  Driver d(Cluster());
  EnginePolicy policy = EnginePolicy::Defaults();
  Engine e(policy, queues ? Queues(0) : QueueConfig{});
  std::map<GangKey, GangRequest> all;  // every gang ever queued
  std::map<GangKey, double> ends;      // running: expected end in the driver
  std::map<GangKey, double> leaving;   // graceful: gone at
  std::set<GangKey> waiting;
  int next = 0;
  const std::vector<std::string> qnames = {"t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "child0", "child1", "child2", "parent", "", "nope"};
  auto make = [&](double now) {
    static const int kShapes[][2] = {{1, 1}, {1, 2}, {1, 4}, {1, 8}, {2, 8}, {4, 8}, {3, 4}, {8, 8}};
    static const int kTiers[] = {100, 1000, 1000, 10000, 1000000};
    GangRequest g;
    g.key = GangKey(fmt::format("g{}", next++));
    const int shape = static_cast<int>(rng() % 8);
    g.members = kShapes[shape][0];
    g.gpus_per_member = kShapes[shape][1];
    if (rng() % 10 == 0) g.milli = 500;
    if (g.milli < 1000) g.members = g.gpus_per_member = 1;
    const int pool = static_cast<int>(rng() % 5);
    g.pool = pool < 3 ? "H100" : pool == 3 ? "A100" : "";
    g.queue = qnames[rng() % qnames.size()];
    g.priority = kTiers[rng() % 5];
    g.submitted = now - static_cast<double>(rng() % 3000);
    if (rng() % 4 != 0) g.duration_hint_s = 600 + static_cast<double>(rng() % 7200);
    g.checkpoints = rng() % 2 == 0;
    if (g.members > 1 && rng() % 2) {
      g.level = "topology.kubernetes.io/rack";
      g.mode = rng() % 2 ? placement::TopologyMode::kPreferred : placement::TopologyMode::kRequired;
    }
    return g;
  };
  const bool light = seed % 2 == 0;
  for (int i = 0; i < (light ? 60 : 400); ++i) {
    GangRequest g = make(0);
    all[g.key] = g;
    if (e.Enqueue(g).ok()) waiting.insert(g.key);
  }
  for (int step = 0; step < 70; ++step) {
    const double now = 100.0 + step * 137.0;
    bool released = false;
    for (auto it = ends.begin(); it != ends.end();) {
      if (it->second <= now) {
        d.Release(it->first);
        e.OnFinished(it->first);
        released = true;
        it = ends.erase(it);
      } else {
        ++it;
      }
    }
    for (auto it = leaving.begin(); it != leaving.end();) {
      if (it->second <= now) {
        d.Release(it->first);
        e.OnFinished(it->first);
        released = true;
        it = leaving.erase(it);
      } else {
        ++it;
      }
    }
    const int arrivals = static_cast<int>(rng() % (light ? 8 : 30));
    for (int i = 0; i < arrivals; ++i) {
      GangRequest g = make(now);
      all[g.key] = g;
      if (e.Enqueue(g).ok()) waiting.insert(g.key);
    }
    if (step % 9 == 4 && !waiting.empty()) {
      auto it = waiting.begin();
      std::advance(it, rng() % waiting.size());
      (void)e.Remove(*it);
      waiting.erase(it);
    }
    if (queues && step == 35) (void)e.SetQueues(Queues(1));
    if (step % 11 == 5 && !ends.empty()) d.refuse.insert(ends.begin()->first);
    d.log.clear();
    d.evicted.clear();
    e.Pass(now, d, released || step % 3 == 0 ? Engine::Scope::kFull : Engine::Scope::kArrivalsOnly);
    for (const GangKey& v : d.evicted) {
      if (ends.erase(v)) {
        // Immediate evictions were released by the driver; graceful ones leave later.
        if (e.IsRunning(v)) leaving[v] = now + 45;
      }
    }
    for (auto it = waiting.begin(); it != waiting.end();) {
      if (e.IsRunning(*it)) {
        const GangRequest& g = all.at(*it);
        ends[*it] = now + (g.duration_hint_s ? *g.duration_hint_s * 1.3 : 5000);
        it = waiting.erase(it);
      } else {
        ++it;
      }
    }
    fmt::print(out, "== step {} now {} queues {}\n", step, now, queues);
    for (const std::string& l : d.log) fmt::print(out, "{}\n", l);
    const EngineStats& s = e.stats();
    fmt::print(out, "stats {} {} {} {} {} {} {} {}\n", s.passes, s.admitted, s.backfilled, s.preemptions, s.reclaims,
               s.preemptions_declined, s.plan_calls, s.queue_reclaims);
    fmt::print(out, "wake {}\n", e.NextWake() ? fmt::format("{}", *e.NextWake()) : "none");
    for (const HeadReservation& h : e.Heads()) {
      fmt::print(out, "head {} {} {} {} {} {} {} {}\n", h.pool, h.head.str(), h.priority, h.gpus, h.members,
                 h.expected_start, h.reachable, h.spare_gpus);
    }
    for (const GangKey& k : waiting) fmt::print(out, "why {} {}\n", k.str(), e.WhyWaiting(k));
    if (queues) {
      for (const std::string& q : qnames) {
        if (q.empty() || q == "nope") continue;
        for (const std::string& p : e.queues().Pools()) {
          const QueuePoolUsage u = e.queues().UsageOf(q, p);
          fmt::print(out, "usage {} {} {} {} {} {} share {} room {}\n", q, p, u.nominal, u.usage, u.borrowed, u.lent,
                     e.queues().Share(q), e.queues().Room(q, p));
        }
      }
      for (const GangKey& k : e.queues().Borrowing()) fmt::print(out, "borrowing {}\n", k.str());
      for (const GangKey& k : e.queues().ReclaimCandidates("t1", "H100")) fmt::print(out, "cand {}\n", k.str());
    }
    // The preempt verb's quote for the oldest waiting gang.
    if (!waiting.empty()) {
      const GangRequest& g = all.at(*waiting.begin());
      fmt::print(out, "expected wait {}\n", e.ExpectedWait(g, now, d.state()));
    }
  }
}

}  // namespace
}  // namespace phalanx::scheduling

int main(int argc, char** argv) {
  const unsigned seeds = argc > 1 ? static_cast<unsigned>(std::atoi(argv[1])) : 4;
  for (unsigned seed = 1; seed <= seeds; ++seed) {
    phalanx::scheduling::Run(true, seed, stdout);
    phalanx::scheduling::Run(false, seed, stdout);
  }
  return 0;
}
