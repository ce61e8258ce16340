// A minimal EngineDriver over a ClusterState: admissions allocate every member at once
// (pods "<key>-<member>"), evictions release them. What the simulator's and the
// extender's drivers do, without either.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/scheduling/engine.h"
#include "tests/unit/core/placement/placement_builders.h"

namespace phalanx::scheduling::testing {

using placement::testing::AddRack;
using placement::testing::StandardLevels;

class FakeDriver : public EngineDriver {
 public:
  FakeDriver() : state_(StandardLevels()) {}

  placement::ClusterState& mutable_state() { return state_; }
  const placement::ClusterState& state() const override { return state_; }

  std::optional<std::vector<PodUid>> Admit(const GangRequest& gang, const Admission& a) override {
    std::vector<PodUid> pods;
    if (a.share) {
      PodUid pod(gang.key.str() + "-0");
      if (!state_.AllocateShare(pod, a.share->first, a.share->second, gang.milli, gang.priority).ok()) return std::nullopt;
      pods.push_back(pod);
    } else {
      for (size_t m = 0; m < a.members.size(); ++m) {
        PodUid pod(fmt::format("{}-{}", gang.key.str(), m));
        Status s = state_.Allocate(pod, a.members[m].node, a.members[m].gpus, gang.priority);
        EXPECT_TRUE(s.ok()) << s;
        if (!s.ok()) return std::nullopt;
        pods.push_back(pod);
      }
    }
    admitted.push_back(a);
    pods_[gang.key] = pods;
    return pods;
  }

  std::optional<double> Evict(const GangKey& victim, const GangKey& preemptor, std::string_view reason,
                              bool graceful) override {
    evicted.push_back(victim.str());
    last_reason = std::string(reason);
    (void)preemptor;
    if (graceful) return graceful_notice;  // the test releases it later
    Release(victim);
    return 0.0;
  }

  double GpuSecondsAtRisk(const GangKey& running) const override {
    auto it = risk.find(running.str());
    return it == risk.end() ? 0 : it->second;
  }

  double NoticeSeconds(const GangKey& /*running*/) const override { return graceful_notice; }

  bool IsIdle(const GangKey& running) const override {
    ++idle_questions;
    return idle.contains(running.str());
  }

  // A running gang ended: its GPUs are free again.
  void Release(const GangKey& key) {
    for (const PodUid& p : pods_[key]) (void)state_.Release(p);
    pods_.erase(key);
  }

  const Admission* AdmissionOf(const std::string& key) const {
    for (const Admission& a : admitted)
      if (a.key.str() == key) return &a;
    return nullptr;
  }

  std::vector<Admission> admitted;
  std::vector<std::string> evicted;
  std::string last_reason;
  std::map<std::string, double> risk;
  double graceful_notice = 0;  // > 0: gangs may checkpoint on notice (the test finishes them)
  std::set<std::string> idle;  // gangs whose every member is idle (phalanx.io/idle-since)
  mutable int idle_questions = 0;

 private:
  placement::ClusterState state_;
  std::map<GangKey, std::vector<PodUid>> pods_;
};

inline GangRequest Gang(const std::string& key, int members, int gpus, int priority, double submitted,
                        std::optional<double> hint = std::nullopt, bool checkpoints = false,
                        const std::string& pool = "H100") {
  GangRequest g;
  g.key = GangKey(key);
  g.pool = pool;
  g.priority = priority;
  g.members = members;
  g.gpus_per_member = gpus;
  g.submitted = submitted;
  g.duration_hint_s = hint;
  g.checkpoints = checkpoints;
  return g;
}

inline constexpr int kCritical = 1000000;
inline constexpr int kHigh = 10000;
inline constexpr int kStandard = 1000;
inline constexpr int kSpot = 100;

}  // namespace phalanx::scheduling::testing
