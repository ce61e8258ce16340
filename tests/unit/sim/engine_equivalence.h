// The engine-equivalence fixture (issue 16, issue 25): the same gangs arriving, finishing,
// being evicted and coming back at the same times, replayed through the simulator's
// `phalanx` policy and through the extender's admission (gated pods, Tick), must give the
// same admissions (instant, nodes, per attempt) and the same evictions (victim, instant).
//
// The extender's side plays kubelet, the informers and the operator deterministically, as
// the simulator models them:
//   - an admitted gang's members are pinned by filter and reported running on their nodes
//     at once (the simulator starts a gang the instant it places it);
//   - an evicted gang (the extender's `evict` writes) is gone the same instant: the
//     simulator stops a victim at once (Simulator::Preempt) unless it asks it to
//     checkpoint, so the harness deletes the pods and ticks again at that instant;
//   - a gang asked to checkpoint and stop (the extender's `preempt-request` on its
//     TrainingJob) stops SimConfig::graceful_notice_s later having lost nothing, as the
//     simulator's does (Simulator::RequestGracefulStop); one evicted at once loses the work
//     since its last periodic checkpoint, as in Simulator::Preempt;
//   - a victim's next attempt is a new gang (the operator's "<job>-a<attempt>") created
//     SimConfig::restart_overhead_s later, the simulator's restart, running for the work
//     left;
//   - every gang belongs to a TrainingJob (its preemption history is per job, as the
//     simulator's is per job across attempts) whose status reports the GPU-seconds at risk
//     as the simulator counts them (the attempt's run time since its last checkpoint x
//     GPUs) and, for a gang that checkpoints, the simulator's notice as its flush time;
//   - a MIG pod (no gang: kube-scheduler places it) is tried after the admission pass, as
//     the simulator tries its MIG queue after each pass: filter, the node prioritize scores
//     highest, bind (see engine_equivalence_mig_test.cc for what that compares).
// Gang and pod names carry the scenario index zero-padded: the extender orders gangs that
// arrive together by name, the simulator by index.
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "sim/engine/simulator.h"
#include "sim/policy/policies.h"
#include "tests/unit/extender/test_cluster.h"
#include "tests/unit/sim/test_util.h"

namespace phalanx::sim::equivalence {

struct GangEvent {
  double submit;
  double duration;
  int members;
  int gpus;
  int priority;
  std::string queue = "";  // team queue (with Variant::queues); "" = the default queue
  double checkpoint = 0;   // seconds between periodic checkpoints; 0 = never checkpoints
  std::string mig = "";    // a MIG profile: one pod of `gpus` such devices (members = 1)
};

struct Variant {
  bool hints = false;       // exact duration hints (TrainingJob activeDeadlineSeconds)
  double hint_factor = 1;   // with hints: each is the run time left x this (users overestimate)
  bool calibrate = true;    // EnginePolicy::calibrate_durations
  bool preemption = false;  // tier preemption and queue reclaim (the engine's default search budget)
  double spot_weight = 0;   // the spot tier's price weight; 0: the engine's default
  scheduling::QueueConfig queues;  // empty: no team queues
  int nodes = 8;                   // of 8 GPUs, two per rack, one pool (H100)
  // The nodes are A100s (pool kMigPool, no racks) with GPU 0 as 7 x 1g.10gb and GPU 1 as
  // 3g.40gb + 2g.20gb + 2 x 1g.10gb (the a100-mig reference machine), 6 GPUs whole.
  bool mig = false;
};

// One attempt's admission: when, and on which nodes (per member, sorted).
struct Start {
  double time = 0;
  std::vector<std::string> nodes;
  bool operator==(const Start&) const = default;
};

struct Outcome {
  std::map<int, std::vector<Start>> starts;     // by scenario index, per attempt
  std::set<std::pair<double, int>> evictions;   // (instant its GPUs were freed, scenario index)
  int completed = 0;
  bool operator==(const Outcome&) const = default;
};

inline std::ostream& operator<<(std::ostream& os, const Start& s) {
  return os << fmt::format("t={} on [{}]", s.time, fmt::join(s.nodes, ","));
}
inline std::ostream& operator<<(std::ostream& os, const Outcome& o) {
  for (const auto& [i, starts] : o.starts) {
    os << "\n  gang " << i << ":";
    for (const Start& s : starts) os << " " << s;
  }
  for (const auto& [t, i] : o.evictions) os << fmt::format("\n  evicted gang {} at t={}", i, t);
  return os;
}

inline constexpr const char* kMigPool = "A100-SXM4-80GB";

inline std::string GangName(int i, int attempt) {
  return attempt == 0 ? fmt::format("g{:02}", i) : fmt::format("g{:02}-a{}", i, attempt);
}
inline std::string JobName(int i) { return fmt::format("tj-g{:02}", i); }

inline PolicyOptions OptionsOf(const Variant& v) {
  PolicyOptions o;
  if (!v.preemption) o.engine.preemption_searches_per_pass = 0;
  o.duration_hints = v.hints;
  o.engine.calibrate_durations = v.calibrate;
  if (v.spot_weight > 0) {
    for (scheduling::TierPolicy& t : o.engine.tiers)
      if (t.name == "spot") t.weight = v.spot_weight;
  }
  if (v.hint_factor != 1) {
    o.hints.mode = HintModel::Mode::kNoisy;  // U(f, f): the same factor for every job
    o.hints.lo = o.hints.hi = v.hint_factor;
  }
  o.queues = v.queues;
  return o;
}

// Records what the `phalanx` policy it wraps does to the simulator: the jobs each pass
// starts, and the jobs whose GPUs a preemption freed (OnFinished of a job going back to
// the queue).
class RecordingPolicy final : public Policy {
 public:
  RecordingPolicy(Policy& inner, Outcome& out) : inner_(inner), out_(out) {}
  std::string name() const override { return inner_.name(); }
  void OnQueued(Simulator& sim, JobId id) override { inner_.OnQueued(sim, id); }
  void OnFinished(Simulator& sim, JobId id) override {
    if (sim.run(id).phase == JobPhase::kRestarting) out_.evictions.emplace(sim.now(), Index(sim, id));
    inner_.OnFinished(sim, id);
  }
  void Schedule(Simulator& sim) override {
    const std::set<JobId> before = sim.running();
    inner_.Schedule(sim);
    for (JobId id : sim.running()) {
      if (before.contains(id) || sim.job(id).IsMig()) continue;
      Start s{sim.now(), {}};
      for (const NodeName& n : sim.run(id).nodes) s.nodes.push_back(n.str());
      std::sort(s.nodes.begin(), s.nodes.end());
      out_.starts[Index(sim, id)].push_back(std::move(s));
    }
  }
  // The engine places no MIG job (Simulator::ScheduleMig asks this after each pass): the
  // start is recorded where the policy chose its node (StartMig takes free devices).
  std::optional<MigPlacement> PlaceMig(const Simulator& sim, JobId id) override {
    std::optional<MigPlacement> p = inner_.PlaceMig(sim, id);
    if (p) out_.starts[Index(sim, id)].push_back(Start{sim.now(), {p->node.str()}});
    return p;
  }

 private:
  // The scenario index: the workload orders jobs by submit time, names keep the index.
  static int Index(const Simulator& sim, JobId id) { return std::stoi(sim.job(id).name.substr(3)); }  // "job<i>"

  Policy& inner_;
  Outcome& out_;
};

// `report`, if given, receives the simulator's report (reclaims, preemptions).
inline Outcome ThroughTheSimulator(const std::vector<GangEvent>& gangs, const Variant& v,
                                   PolicyReport* report = nullptr) {
  std::vector<Job> jobs;
  for (const GangEvent& e : gangs) {
    Job j = testing::MakeJob(e.submit, e.duration, e.members, e.gpus, e.priority, e.checkpoint);
    j.queue = e.queue;
    j.mig_profile = e.mig;
    jobs.push_back(j);
  }
  const Workload w = testing::MakeWorkload(std::move(jobs));  // "job<i>" is scenario gang i
  auto policy = MakePolicy("phalanx", OptionsOf(v));
  EXPECT_TRUE(policy.ok());
  Outcome out;
  RecordingPolicy recording(**policy, out);
  SimConfig config;
  config.restart_overhead_s = OptionsOf(v).engine.restart_overhead_s;
  config.queues = v.queues;  // the report's per-queue figures (reclaims)
  ClusterSpec spec = testing::Cluster(v.nodes, 8, IntraNodeTopology::kNvSwitch, v.mig ? 0 : 2);
  if (v.mig) {
    spec.groups[0].gpu_model = kMigPool;
    spec.groups[0].mig = {{.gpus = 1, .profiles = std::vector<std::string>(7, "1g.10gb")},
                          {.gpus = 1, .profiles = {"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"}}};
  }
  auto cluster = BuildSimCluster(spec);
  EXPECT_TRUE(cluster.ok()) << cluster.status();
  Simulator sim(w, cluster->state, cluster->mig, recording, config);
  const PolicyReport r = sim.Run();
  out.completed = r.completed;
  if (report != nullptr) *report = r;
  return out;
}

// The extender with kubelet, the informers and the operator played as the header says.
class ExtenderReplay {
 public:
  ExtenderReplay(const std::vector<GangEvent>& gangs, const Variant& v) : gangs_(gangs), v_(v), c_(ConfigOf(v)) {
    for (int i = 0; i < v.nodes; ++i) {
      const std::string name = fmt::format("n-{}", i);
      extender::NodeInfo node = extender::testing::DgxNode(name, fmt::format("n-r{}", i / 2));
      if (v.mig) {
        node = extender::testing::A100MigNode(name);
        node.labels[std::string(extender::kProductLabel)] = kMigPool;  // the simulator's pool name
      }
      EXPECT_TRUE(c_.ext.OnNode(node).ok());
      node_names_.push_back(name);
    }
    if (v.queues.enabled()) {
      extender::QueueAssignment queues;
      queues.config = v.queues;
      EXPECT_TRUE(c_.ext.SetQueues(queues).ok());
    }
    start_ = c_.clock.Now();
    wall_start_ = c_.clock.WallNow();
  }

  Outcome Run() {
    for (size_t i = 0; i < gangs_.size(); ++i) {
      events_.emplace(gangs_[i].submit, Event{Kind::kArrive, static_cast<int>(i), 0});
    }
    for (int guard = 0; guard < 10000 && !events_.empty(); ++guard) {
      const double t = events_.begin()->first;
      const auto since_start = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(t));
      c_.clock.Advance(start_ + since_start - c_.clock.Now());
      while (!events_.empty() && events_.begin()->first == t) {
        const Event e = events_.begin()->second;
        events_.erase(events_.begin());
        Apply(e, t);
      }
      // Ticks at this instant until nothing is evicted any more (an eviction frees GPUs now).
      for (int again = 0; again < 20; ++again) {
        ReportRisk(t);
        c_.ext.Tick();
        c_.ext.DrainForTest();
        RecordAdmissions(t);
        if (!DeleteEvicted(t)) break;
      }
      PlaceMigPods(t);
    }
    EXPECT_TRUE(events_.empty()) << "the replay did not end";
    EXPECT_TRUE(running_.empty() && waiting_.empty() && mig_waiting_.empty())
        << running_.size() << " running, " << waiting_.size() + mig_waiting_.size() << " waiting";
    return out_;
  }

 private:
  enum class Kind { kArrive, kFinish, kStop };
  struct Event {
    Kind kind;
    int gang;
    int attempt;
  };
  struct Running {
    int attempt = 0;
    double started = 0;
    bool stopping = false;  // asked to checkpoint and stop
  };

  static extender::ExtenderConfig ConfigOf(const Variant& v) {
    extender::ExtenderConfig config = extender::DefaultConfig();
    config.scheduling = OptionsOf(v).engine;
    config.plan_ttl = std::chrono::seconds(100000);
    return config;
  }
  const GangEvent& gang(int i) const { return gangs_[static_cast<size_t>(i)]; }
  extender::PodInfo Pod(int i, int attempt, int m) const {
    const GangEvent& e = gang(i);
    if (!e.mig.empty()) {  // a plain pod: kube-scheduler places it (filter, prioritize, bind)
      extender::PodInfo p = extender::testing::GpuPod(GangName(i, attempt), 0, e.priority);
      p.mig[e.mig] = e.gpus;
      p.mig_container = "main";
      if (v_.queues.enabled() && !e.queue.empty()) p.labels[std::string(extender::kQueueLabel)] = e.queue;
      return p;
    }
    extender::PodInfo p = extender::testing::GangPod(GangName(i, attempt), m, e.gpus, e.members, e.priority);
    if (e.members > 1) p.topology_level = "topology.kubernetes.io/rack";  // preferred, as the simulator
    p.training_job = JobName(i);
    if (v_.queues.enabled() && !e.queue.empty()) p.labels[std::string(extender::kQueueLabel)] = e.queue;
    return p;
  }
  extender::TrainingJobInfo JobOf(int i, double risk) const {
    // A hint is the TrainingJob's deadline (its run time's upper bound): here the run time
    // the attempt has left (x Variant::hint_factor).
    const double notice = gang(i).checkpoint > 0 ? SimConfig().graceful_notice_s : 0;
    extender::TrainingJobInfo job{"default", JobName(i), risk, notice, "",
                                  v_.hints ? Remaining(i) * v_.hint_factor : 0};
    // Created when the job was submitted, as the API server stamps it: every attempt of the
    // job keeps that place in the engine's order, as the simulator's next attempt does.
    job.created = wall_start_ + std::chrono::duration_cast<Duration>(std::chrono::duration<double>(gang(i).submit));
    return job;
  }
  double Remaining(int i) const {
    auto it = remaining_.find(i);
    return it == remaining_.end() ? gang(i).duration : it->second;
  }
  // Work since the attempt's last checkpoint (all of it for a gang that never checkpoints).
  double Unsaved(int i, double elapsed) const {
    const double every = gang(i).checkpoint;
    return every > 0 ? elapsed - std::floor(elapsed / every) * every : elapsed;
  }

  void Apply(const Event& e, double t) {  // t: now
    if (e.kind == Kind::kStop) {
      auto it = running_.find(e.gang);
      if (it != running_.end() && it->second.attempt == e.attempt) Stop(e.gang, t, 0);  // checkpointed: nothing lost
      return;
    }
    if (e.kind == Kind::kFinish) {
      auto it = running_.find(e.gang);
      if (it == running_.end() || it->second.attempt != e.attempt) return;  // that attempt was evicted
      DeletePods(e.gang, e.attempt);
      running_.erase(it);
      ++out_.completed;
      return;
    }
    if (!gang(e.gang).mig.empty()) {
      c_.ext.OnPod(Pod(e.gang, e.attempt, 0));
      mig_waiting_.emplace(std::pair{-gang(e.gang).priority, mig_seq_++}, e.gang);
      return;
    }
    c_.ext.OnTrainingJob(JobOf(e.gang, 0));
    for (int m = 0; m < gang(e.gang).members; ++m) c_.ext.OnPod(Pod(e.gang, e.attempt, m));
    waiting_[e.gang] = e.attempt;
  }

  // kube-scheduler's cycle for pending MIG pods after the admission pass, in the simulator's
  // MIG queue order (priority, then arrival): filter, the node prioritize scores highest
  // (ties to the first in name order, the simulator's choice among equal best fits), bind.
  void PlaceMigPods(double t) {
    for (auto it = mig_waiting_.begin(); it != mig_waiting_.end();) {
      const int i = it->second;
      const extender::PodInfo p = Pod(i, 0, 0);
      const extender::FilterResult r = c_.ext.Filter(extender::testing::Args(p, node_names_));
      std::vector<std::string> passed(r.passed.begin(), r.passed.end());
      if (passed.empty()) {
        ++it;
        continue;
      }
      std::string best;
      int best_score = -1;
      for (const extender::HostScore& h : c_.ext.Prioritize(extender::testing::Args(p, passed))) {
        if (h.score > best_score || (h.score == best_score && std::string(h.host) < best)) {
          best = std::string(h.host);
          best_score = static_cast<int>(h.score);
        }
      }
      extender::testing::BindProbe probe;
      c_.ext.Bind(extender::testing::BindOf(p, best), probe.Callback());
      const std::string error = probe.Wait();
      c_.ext.DrainForTest();
      EXPECT_EQ(error, "") << p.name;
      if (!error.empty()) {
        ++it;
        continue;
      }
      out_.starts[i].push_back(Start{t, {best}});
      running_[i] = Running{0, t};
      events_.emplace(t + gang(i).duration, Event{Kind::kFinish, i, 0});
      it = mig_waiting_.erase(it);
    }
  }

  void DeletePods(int i, int attempt) {
    if (!gang(i).mig.empty()) {
      c_.ext.OnPodDeleted(PodUid("uid-" + GangName(i, attempt)));
      return;
    }
    for (int m = 0; m < gang(i).members; ++m) {
      c_.ext.OnPodDeleted(PodUid(fmt::format("uid-{}-{}", GangName(i, attempt), m)));
    }
  }

  // The operator's status.preemptionCost: GPU-seconds since the attempt's last checkpoint.
  void ReportRisk(double t) {
    for (const auto& [i, r] : running_) {
      if (r.stopping || !gang(i).mig.empty()) continue;
      c_.ext.OnTrainingJob(JobOf(i, Unsaved(i, t - r.started) * gang(i).members * gang(i).gpus));
    }
  }

  // Gangs admitted by the last tick: recorded, pinned by filter and reported running.
  void RecordAdmissions(double t) {
    std::vector<std::pair<int, std::vector<std::string>>> admitted;
    c_.ext.ReadLedger([&](const extender::Ledger& ledger) {
      for (const auto& [i, attempt] : waiting_) {
        const extender::GangRecord* g = ledger.FindGang(GangKey("default/" + GangName(i, attempt)));
        if (g == nullptr || !g->plan) continue;
        std::vector<std::string> nodes;
        for (const auto& m : g->plan->members) nodes.push_back(m.node.str());
        admitted.emplace_back(i, std::move(nodes));
      }
    });
    for (auto& [i, nodes] : admitted) {
      const int attempt = waiting_.at(i);
      waiting_.erase(i);
      std::sort(nodes.begin(), nodes.end());
      out_.starts[i].push_back(Start{t, nodes});
      for (int m = 0; m < gang(i).members; ++m) {
        extender::PodInfo p = Pod(i, attempt, m);
        p.gated = false;
        c_.ext.OnPod(p);
        const extender::FilterResult r = c_.ext.Filter(extender::testing::Args(p, node_names_));
        EXPECT_EQ(r.passed.size(), 1u) << p.name << " is not pinned to one node";
        if (r.passed.empty()) continue;
        p.node_name = std::string(r.passed[0]);
        p.phase = extender::PodPhase::kRunning;
        p.start_time = c_.clock.WallNow();
        c_.ext.OnPod(p);
      }
      running_[i] = Running{attempt, t};
      events_.emplace(t + Remaining(i), Event{Kind::kFinish, i, attempt});
    }
  }

  // Victims evicted since the last look are gone now, those asked to checkpoint stop after
  // the notice. True if any was evicted (its GPUs are free now).
  bool DeleteEvicted(double t) {
    const auto asked = c_.writer.CallsOf("preempt-request");
    for (; requests_seen_ < asked.size(); ++requests_seen_) {
      const std::string& job = asked[requests_seen_].target;  // "default/tj-g03"
      const int i = std::stoi(job.substr(std::string("default/tj-g").size(), 2));
      auto it = running_.find(i);
      if (it == running_.end() || it->second.stopping) continue;
      it->second.stopping = true;
      events_.emplace(t + SimConfig().graceful_notice_s, Event{Kind::kStop, i, it->second.attempt});
    }
    const auto calls = c_.writer.CallsOf("evict");
    std::set<int> victims;
    for (; evicts_seen_ < calls.size(); ++evicts_seen_) {
      const std::string& pod = calls[evicts_seen_].target;  // "default/g03[-a1]-<m>"
      victims.insert(std::stoi(pod.substr(std::string("default/g").size(), 2)));
    }
    for (int i : victims) {
      auto it = running_.find(i);
      if (it == running_.end()) continue;  // every member's eviction names the gang
      Stop(i, t, Unsaved(i, t - it->second.started));
    }
    return !victims.empty();
  }

  // The running attempt of gang i is gone at t, having lost `lost` seconds of work; its next
  // attempt comes back after the restart overhead.
  void Stop(int i, double t, double lost) {
    const Running r = running_.at(i);
    DeletePods(i, r.attempt);
    remaining_[i] = Remaining(i) - (t - r.started - lost);
    out_.evictions.emplace(t, i);
    events_.emplace(t + OptionsOf(v_).engine.restart_overhead_s, Event{Kind::kArrive, i, r.attempt + 1});
    running_.erase(i);
  }

  const std::vector<GangEvent>& gangs_;
  Variant v_;
  extender::testing::TestCluster c_;
  std::vector<std::string> node_names_;
  MonotonicTime start_;
  SystemTime wall_start_;
  std::multimap<double, Event> events_;
  std::map<int, int> waiting_;   // gang -> attempt
  std::map<std::pair<int, int>, int> mig_waiting_;  // (-priority, arrival) -> MIG pod's gang
  int mig_seq_ = 0;
  std::map<int, Running> running_;
  std::map<int, double> remaining_;  // work left by gang, once it lost or saved some
  size_t evicts_seen_ = 0, requests_seen_ = 0;
  Outcome out_;
};

inline Outcome ThroughTheExtender(const std::vector<GangEvent>& gangs, const Variant& v) {
  return ExtenderReplay(gangs, v).Run();
}

// Both drivers decided alike; returns the simulator's outcome (for the caller's checks that
// the scenario exercised what it is meant to).
inline Outcome ExpectSameOutcome(const std::vector<GangEvent>& gangs, const Variant& v,
                                 PolicyReport* report = nullptr) {
  const Outcome sim = ThroughTheSimulator(gangs, v, report);
  const Outcome ext = ThroughTheExtender(gangs, v);
  EXPECT_EQ(sim.completed, static_cast<int>(gangs.size()));
  EXPECT_TRUE(sim == ext) << "simulator:" << sim << "\nextender:" << ext;
  return sim;
}

// Gangs that waited (started after they were submitted) in their first attempt.
inline int Waited(const std::vector<GangEvent>& gangs, const Outcome& o) {
  int waited = 0;
  for (const auto& [i, starts] : o.starts) {
    waited += !starts.empty() && starts[0].time > gangs[static_cast<size_t>(i)].submit;
  }
  return waited;
}

}  // namespace phalanx::sim::equivalence
