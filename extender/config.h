// The --config file of phalanx-extender (YAML; format and example in docs/extender.md,
// rendered by the Helm chart). Validated once at start: every problem is reported with
// its key, and the daemon refuses to start rather than run with a half-understood file.
// Pure; thread-safe.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"
#include "core/placement/node_score.h"
#include "core/scheduling/queues.h"
#include "core/scheduling/tier_policy.h"

namespace phalanx::extender {

// A PriorityClass tier: pods with priority >= min_priority (and below the next tier up).
struct Tier {
  std::string name;
  int min_priority = 0;
  std::vector<std::string> preempts;  // names of tiers this tier may preempt
};

struct ExtenderConfig {
  placement::ScoreWeights weights;
  // Highest first after validation.
  std::vector<Tier> tiers;
  // Topology label keys, narrowest first; the first must be kubernetes.io/hostname.
  std::vector<std::string> topology_levels;
  // Accepted for compatibility and ignored: the scheduling engine's per-tier
  // `reserveAfterSeconds` replaced the head-of-line hold (docs/algorithms.md §8.2).
  std::chrono::seconds head_of_line{300};
  // The scheduling engine's tier rules (`scheduling:` section, core/scheduling/policy_yaml.h).
  scheduling::EnginePolicy scheduling = scheduling::EnginePolicy::Defaults();
  // What GpuQueue objects do not carry (`teamQueues:` section: crossQueuePreemptionPriority,
  // reclaimAfterSeconds; docs/extender.md "Team queues"). The queues themselves come from the
  // GpuQueue objects; `queues` here stays empty.
  scheduling::QueueConfig team_queues;
  std::chrono::seconds gang_timeout{120};  // default when the pod has no annotation
  // kube-scheduler's extender httpTimeout; barriers end 10 s before it.
  std::chrono::seconds http_timeout{30};
  std::chrono::milliseconds member_settle{2000};
  // An admitted plan nobody binds against is dropped after this long.
  std::chrono::seconds plan_ttl{300};
  // A preempted gang of which some member is already gone, whose other members' evictions a
  // PodDisruptionBudget keeps refusing: retried this long, then those members are deleted (the
  // budget overridden, a Warning Event names it). A partly evicted gang cannot run, so waiting
  // longer only holds its GPUs (extender/eviction/gang_evictor.h).
  std::chrono::seconds pdb_override_after{60};

  // Index into tiers (0 = highest) of a priority value; the lowest tier if below all.
  int TierOf(int priority) const;
  bool MayPreempt(int preemptor_priority, int victim_priority) const;
  // min(gang timeout, httpTimeout - 10 s), at least 1 s.
  std::chrono::seconds BarrierTimeout(std::chrono::seconds gang_timeout) const;
  // One API write's timeout: httpTimeout / 3 within [1 s, 10 s], so a write and two retries
  // fit in the time kube-scheduler waits for the bind it serves.
  std::chrono::seconds WriteRequestTimeout() const;
};

// The chart's defaults: critical > high > standard > spot, each preempting every lower
// tier; levels hostname, nvlink-domain, rack, block, zone.
ExtenderConfig DefaultConfig();

// Parses YAML text over the defaults (absent keys keep them). InvalidArgument listing
// the offending key, e.g. "tiers[1].preempts: unknown tier \"gold\"".
Result<ExtenderConfig> ParseConfig(std::string_view yaml);
Result<ExtenderConfig> LoadConfigFile(const std::string& path);

}  // namespace phalanx::extender
