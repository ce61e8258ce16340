#include "sim/trace/synthetic.h"

#include <cmath>
#include <random>

#include <fmt/format.h>

#include "sim/model/tiers.h"

namespace phalanx::sim {

Workload GenerateSynthetic(const SyntheticOptions& o) {
  Workload w;
  w.source = fmt::format("synthetic(jobs={}, seed={}, load={:g})", o.jobs, o.seed, o.load);
  w.format = "synthetic";
  std::mt19937_64 rng(o.seed);
  std::uniform_real_distribution<double> u(0, 1);
  // Lognormal durations with the requested mean (sigma 1).
  const double sigma = 1.0;
  std::lognormal_distribution<double> dur(std::log(o.mean_duration_s) - sigma * sigma / 2, sigma);
  w.jobs.reserve(static_cast<size_t>(o.jobs));
  double mean_gpus = 0;
  for (int64_t i = 0; i < o.jobs; ++i) {
    Job j;
    j.line = static_cast<int>(i + 2);
    j.name = fmt::format("syn-{}", i);
    const double s = u(rng);
    if (s < 0.60) {
      j.gpus_per_replica = 1;
    } else if (s < 0.75) {
      j.gpus_per_replica = u(rng) < 0.5 ? 2 : 4;
    } else if (s < 0.95) {
      j.gpus_per_replica = 8;
    } else {
      j.replicas = 2 + static_cast<int>(u(rng) * (o.max_gang_members - 1));
      j.gpus_per_replica = 8;
    }
    j.duration = std::round(dur(rng));
    const double t = u(rng);
    j.priority = t < 0.05 ? kCriticalPriority : (t < 0.25 ? kHighPriority : (t < 0.75 ? kStandardPriority : kSpotPriority));
    j.tier = TierName(j.priority);
    j.checkpoint_interval = u(rng) < 0.7 ? 1800 : 0;
    j.queue = fmt::format("team-{}", i % 4);
    mean_gpus += j.TotalGpus() * j.duration;
    w.jobs.push_back(std::move(j));
  }
  // Poisson arrivals: rate so that offered GPU-seconds per second = load x GPUs.
  mean_gpus /= static_cast<double>(std::max<int64_t>(1, o.jobs));
  const double rate = o.load * o.cluster_gpus / std::max(1.0, mean_gpus);
  std::exponential_distribution<double> gap(rate);
  double now = 0;
  for (Job& j : w.jobs) {
    now += gap(rng);
    j.submit = std::round(now);
  }
  FinalizeWorkload(w);
  return w;
}

}  // namespace phalanx::sim
