#include <algorithm>

#include <fmt/format.h>

#include "sim/report/writers.h"

namespace phalanx::sim {

std::string HumanSeconds(double s) {
  if (s < 90) return fmt::format("{:.0f}s", s);
  if (s < 90 * 60) return fmt::format("{:.1f}m", s / 60);
  if (s < 48 * 3600) return fmt::format("{:.1f}h", s / 3600);
  return fmt::format("{:.1f}d", s / 86400);
}

namespace {

const TierReport* FindTier(const PolicyReport& p, int priority) {
  for (const auto& t : p.tiers)
    if (t.priority == priority) return &t;
  return nullptr;
}

}  // namespace

std::string RenderTable(const SimulationReport& r) {
  std::string out = fmt::format("Cluster {}: {} nodes, {} GPUs.  Trace {} ({}): {} jobs, seed {}\n", r.cluster,
                                r.cluster_nodes, r.cluster_gpus, r.trace, r.trace_format, r.jobs, r.seed);
  for (const auto& n : r.notes) out += fmt::format("  note: {}\n", n);
  const int w = 14;
  auto row = [&](const std::string& label, auto&& cell) {
    out += fmt::format("{:<34}", label);
    for (const auto& p : r.policies) out += fmt::format("{:>{}}", cell(p), w);
    out += "\n";
  };
  out += "\n";
  row("policy", [](const PolicyReport& p) { return p.policy; });
  out += std::string(34 + w * r.policies.size(), '-') + "\n";
  row("jobs completed", [](const PolicyReport& p) { return fmt::format("{}/{}", p.completed, p.jobs); });
  row("jobs never fitting the cluster", [](const PolicyReport& p) { return fmt::format("{}", p.never_fit); });
  row("jobs stuck at the end", [](const PolicyReport& p) { return fmt::format("{}", p.unfinished); });
  row("makespan", [](const PolicyReport& p) { return HumanSeconds(p.makespan_s); });
  row("GPU utilisation (running work)", [](const PolicyReport& p) { return fmt::format("{:.1f}%", 100 * p.gpu_utilisation); });
  row("GPU allocation (incl. idle held)", [](const PolicyReport& p) { return fmt::format("{:.1f}%", 100 * p.gpu_allocation); });
  row("fragmentation (FGD, mean ratio)", [](const PolicyReport& p) { return fmt::format("{:.1f}%", 100 * p.mean_fragmentation_ratio); });
  row("partially placed gangs", [](const PolicyReport& p) { return fmt::format("{}", p.partial_gangs); });
  row("  GPU-hours held idle by them", [](const PolicyReport& p) { return fmt::format("{:.1f}", p.idle_held_gpu_hours); });
  row("  deadlocked at the end", [](const PolicyReport& p) { return fmt::format("{}", p.deadlocked_gangs); });
  row("preemptions", [](const PolicyReport& p) { return fmt::format("{}", p.preemptions); });
  row("  per job", [](const PolicyReport& p) { return fmt::format("{:.3f}", p.preemptions_per_job); });
  row("lost GPU-hours (since checkpoint)", [](const PolicyReport& p) { return fmt::format("{:.1f}", p.lost_gpu_hours); });
  const bool priced = std::any_of(r.policies.begin(), r.policies.end(), [](const PolicyReport& p) { return p.priced; });
  if (priced) {
    row(fmt::format("cost of GPU-hours held ({})", r.prices ? r.prices->currency : ""),
        [](const PolicyReport& p) { return fmt::format("{:.2f}", p.cost); });
    row("  of which lost work", [](const PolicyReport& p) { return fmt::format("{:.2f}", p.lost_cost); });
  }
  row("GPU-hours idle while work waited", [](const PolicyReport& p) { return fmt::format("{:.0f}", p.idle_while_waiting_gpu_hours); });
  row("backfilled GPU-hours", [](const PolicyReport& p) { return fmt::format("{:.0f}", p.backfilled_gpu_hours); });
  row("runs past their duration hint", [](const PolicyReport& p) { return fmt::format("{}", p.hint_overruns); });
  row("queueing delay, GPU-weighted mean", [](const PolicyReport& p) { return HumanSeconds(p.gpu_weighted_queueing_delay_s); });
  row("topology quality (ring/best)", [](const PolicyReport& p) { return fmt::format("{:.3f}", p.mean_topology_ratio); });
  row("multi-node gang starts in one rack", [](const PolicyReport& p) {
    return fmt::format("{}/{}", p.multi_node_gangs_in_one_rack, p.multi_node_gangs_started);
  });
  const bool mig = std::any_of(r.policies.begin(), r.policies.end(),
                               [](const PolicyReport& p) { return p.mig_compute_slices > 0 || p.mig_jobs > 0; });
  if (mig) {
    row("MIG jobs completed", [](const PolicyReport& p) { return fmt::format("{}/{}", p.mig_completed, p.mig_jobs); });
    row("MIG slice allocation", [](const PolicyReport& p) { return fmt::format("{:.1f}%", 100 * p.mig_allocation); });
    row("MIG slices in use at peak", [](const PolicyReport& p) {
      return fmt::format("{}/{}", p.mig_peak_used_slices, p.mig_compute_slices);
    });
  }
  // Per tier, highest first, over the tiers any policy saw.
  std::vector<std::pair<int, std::string>> tiers;
  for (const auto& p : r.policies)
    for (const auto& t : p.tiers)
      if (std::find_if(tiers.begin(), tiers.end(), [&](auto& x) { return x.first == t.priority; }) == tiers.end())
        tiers.emplace_back(t.priority, t.tier);
  std::sort(tiers.begin(), tiers.end(), [](auto& a, auto& b) { return a.first > b.first; });
  for (const auto& [tier_prio, name] : tiers) {
    const auto prio = tier_prio;  // clang 14 (the fuzz build) cannot capture a structured binding
    out += fmt::format("tier {}\n", name);
    auto tier_row = [&](const std::string& label, auto&& cell) {
      row("  " + label, [&](const PolicyReport& p) {
        const TierReport* t = FindTier(p, prio);
        return t ? cell(*t) : std::string("-");
      });
    };
    tier_row("completed", [](const TierReport& t) { return fmt::format("{}/{}", t.completed, t.jobs); });
    tier_row("queueing delay mean", [](const TierReport& t) { return HumanSeconds(t.queueing_delay_s.mean); });
    tier_row("queueing delay p50/p95", [](const TierReport& t) {
      return HumanSeconds(t.queueing_delay_s.p50) + "/" + HumanSeconds(t.queueing_delay_s.p95);
    });
    tier_row("queueing delay p99", [](const TierReport& t) { return HumanSeconds(t.queueing_delay_s.p99); });
    tier_row("JCT mean", [](const TierReport& t) { return HumanSeconds(t.jct_s.mean); });
    tier_row("JCT p50/p95", [](const TierReport& t) { return HumanSeconds(t.jct_s.p50) + "/" + HumanSeconds(t.jct_s.p95); });
    tier_row("JCT p99", [](const TierReport& t) { return HumanSeconds(t.jct_s.p99); });
    tier_row("preemptions", [](const TierReport& t) { return fmt::format("{}", t.preemptions); });
    if (priced) {
      tier_row("GPU-hours held", [](const TierReport& t) { return fmt::format("{:.1f}", t.gpu_hours); });
      tier_row("cost", [](const TierReport& t) { return fmt::format("{:.2f}", t.cost); });
      tier_row("cost of lost work", [](const TierReport& t) { return fmt::format("{:.2f}", t.lost_cost); });
    }
  }
  // Per team queue, when the cluster defines them (same queues for every policy).
  const PolicyReport* with_queues = nullptr;
  for (const auto& p : r.policies)
    if (!p.queues.empty()) with_queues = &p;
  if (with_queues != nullptr) {
    row("fairness (Jain, GPUs / fair share)", [](const PolicyReport& p) { return fmt::format("{:.3f}", p.fairness.jain_index); });
    row("6-h windows all within 10% of fair", [](const PolicyReport& p) {
      return fmt::format("{}/{}", p.fairness.windows_within_10pct, p.fairness.windows);
    });
    row("  worst deviation from fair share", [](const PolicyReport& p) {
      return fmt::format("{:.1f}%", 100 * p.fairness.worst_window_deviation);
    });
    row("    in (queue @ window start)", [](const PolicyReport& p) {
      const WindowReport* worst = nullptr;
      const WindowReport::Queue* worst_queue = nullptr;
      for (const WindowReport& w : p.fairness.contended_windows)
        for (const WindowReport::Queue& q : w.queues)
          if (worst_queue == nullptr || q.deviation > worst_queue->deviation) {
            worst = &w;
            worst_queue = &q;
          }
      return worst ? fmt::format("{} @{:g}h", worst_queue->name, worst->start_hours) : std::string("-");
    });
    row("reclaim preemptions (per job)", [](const PolicyReport& p) {
      return fmt::format("{} ({:.3f})", p.fairness.reclaim_preemptions, p.fairness.reclaims_per_job);
    });
    for (size_t i = 0; i < with_queues->queues.size(); ++i) {
      const QueueReport& q0 = with_queues->queues[i];
      out += fmt::format("queue {} (nominal {:.0f} GPUs, weight {:g}, {} jobs)\n", q0.name, q0.nominal_gpus, q0.weight, q0.jobs);
      auto queue_row = [&](const std::string& label, auto&& cell) {
        row("  " + label, [&](const PolicyReport& p) { return i < p.queues.size() ? cell(p.queues[i]) : std::string("-"); });
      };
      queue_row("mean share of GPUs", [](const QueueReport& q) { return fmt::format("{:.1f}%", 100 * q.mean_share); });
      queue_row("hours below min(demand, nominal)", [](const QueueReport& q) { return fmt::format("{:.1f}", q.hours_below_entitlement); });
      queue_row("  GPU-hours missing", [](const QueueReport& q) { return fmt::format("{:.0f}", q.gpu_hours_below_entitlement); });
      queue_row("worst 6-h deviation from fair", [](const QueueReport& q) { return fmt::format("{:.1f}%", 100 * q.worst_window_deviation); });
      queue_row("preemptions (reclaims)", [](const QueueReport& q) { return fmt::format("{} ({})", q.preemptions, q.reclaimed); });
      if (priced) {
        queue_row("cost (lost work)", [](const QueueReport& q) { return fmt::format("{:.2f} ({:.2f})", q.cost, q.lost_cost); });
      }
    }
  }
  out += std::string(34 + w * r.policies.size(), '-') + "\n";
  row("simulator events", [](const PolicyReport& p) { return fmt::format("{}", p.events); });
  row("simulator speed (events/min)", [](const PolicyReport& p) {
    return fmt::format("{:.2f}M", p.events_per_second * 60 / 1e6);
  });
  for (const auto& p : r.policies)
    for (const auto& nf : p.never_fit_jobs) {
      if (&p != &r.policies.front()) break;
      out += fmt::format("never fits: {} (line {}): {}\n", nf.job, nf.line, nf.reason);
    }
  return out;
}

}  // namespace phalanx::sim
