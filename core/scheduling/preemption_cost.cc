#include "core/scheduling/preemption_cost.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <ctime>

#include <fmt/format.h>

namespace phalanx::scheduling {

double VictimCost(const VictimPrice& v, double restart_overhead_s) {
  return v.lost_work_weight * v.gpu_seconds_at_risk + v.notice_cost +
         v.weight * v.gpus * (restart_overhead_s + v.expected_wait_s);
}

double PreemptionBenefit(int preemptor_gpus, double preemptor_weight, double wait_avoided_s) {
  return preemptor_weight * preemptor_gpus * wait_avoided_s;
}

PreemptionPrice PricePreemption(int preemptor_gpus, double preemptor_weight, double wait_avoided_s,
                                const std::vector<VictimPrice>& victims, double restart_overhead_s) {
  PreemptionPrice p;
  p.benefit = PreemptionBenefit(preemptor_gpus, preemptor_weight, wait_avoided_s);
  // The preemptor waits for the slowest checkpoint once, not once per victim.
  double notice = 0;
  for (const VictimPrice& v : victims) {
    p.cost += VictimCost(v, restart_overhead_s) - v.notice_cost;
    notice = std::max(notice, v.notice_cost);
  }
  p.cost += notice;
  return p;
}

std::string PreemptionPrice::Describe() const {
  return fmt::format("benefit {:.3g} {} cost {:.3g} weighted GPU-s", benefit, pays() ? ">" : "<=", cost);
}

}  // namespace phalanx::scheduling

namespace phalanx::scheduling {
namespace {

std::string Words(double seconds) {
  if (seconds < 90) return fmt::format("{:.0f}s", seconds);
  if (seconds < 5400) return fmt::format("{:.0f}m", seconds / 60);
  return fmt::format("{:.1f}h", seconds / 3600);
}

// "14:05:10 UTC" (wall clock known) or "in 12m".
std::string At(double t, double now, std::optional<double> wall_now) {
  if (!std::isfinite(t)) return "never";
  if (!wall_now) return "in " + Words(std::max(0.0, t - now));
  const auto secs = static_cast<std::time_t>(std::llround(*wall_now + (t - now)));
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return fmt::format("{:02}:{:02}:{:02} UTC", tm.tm_hour, tm.tm_min, tm.tm_sec);
}

}  // namespace

std::string PreemptionStanding::Describe(double now, std::optional<double> wall_now) const {
  const std::string today = fmt::format("preempted {}/{} today", preempted_in_day, max_per_day);
  switch (guard) {
    case Guard::kNone:
      return fmt::format("preemptible now ({}; min run {} after a preemption)", today, Words(min_run_s));
    case Guard::kNeverByCost:
      return fmt::format("never preempted by the cost rules (the {} tier's maxPreemptionsPerDay is 0)", tier);
    case Guard::kMinRun:
      return fmt::format("preemptible after {} (min run {}; {})", At(eligible_at, now, wall_now), Words(min_run_s),
                         today);
    case Guard::kDailyCap:
      return fmt::format("{}: not preemptible until {}", today, At(eligible_at, now, wall_now));
  }
  return "";
}

bool CloseToNeed(int victim_gpus, int preemptor_gpus) {
  return victim_gpus <= std::max(kCloseFootprintFactor * preemptor_gpus, kCloseFootprintGpus);
}

Result<PricedPreemption> ChoosePricedPreemption(const EnginePolicy& policy, const placement::ClusterState& state,
                                                const PreemptorFacts& preemptor,
                                                std::span<const VictimFacts> candidates) {
  using Outcome = PricedPreemption::Outcome;
  PricedPreemption out;
  const TierPolicy& tier = policy.TierOf(preemptor.priority);
  // Neither its tier's target nor the price gates a reclaim (below: kPays once a set helps).
  if (!preemptor.reclaim && tier.target_wait_s < 0) {
    out.outcome = Outcome::kTierNeverPreempts;
    out.why = fmt::format("the {} tier never preempts (targetWaitSeconds < 0)", tier.name);
    return out;
  }
  if (!preemptor.reclaim && preemptor.expected_wait_s <= tier.target_wait_s) {
    out.outcome = Outcome::kWithinTarget;
    out.why = fmt::format("its expected wait ({}) is within the {} tier's target ({}): it queues",
                          Words(preemptor.expected_wait_s), tier.name, Words(tier.target_wait_s));
    return out;
  }
  if (candidates.empty()) {
    out.outcome = Outcome::kNoVictimSet;
    out.why = "no lower-tier gang may be preempted";
    return out;
  }
  const int need = preemptor.Gpus();
  std::vector<placement::VictimGang> gangs;
  std::vector<VictimPrice> prices;
  gangs.reserve(candidates.size());
  prices.reserve(candidates.size());
  out.graceful.assign(candidates.size(), false);
  for (size_t i = 0; i < candidates.size(); ++i) {
    const VictimFacts& v = candidates[i];
    const TierPolicy& vt = policy.TierOf(v.priority);
    if (v.idle && vt.idle_victims_first) {
      // An idle gang: evicted at once, nothing lost, nothing to wait back for.
      VictimPrice free{.gpus = v.gpus, .weight = 0, .lost_work_weight = 0};
      placement::VictimGang g;
      g.key = v.key;
      g.priority = v.priority;
      g.cost = 0;
      g.rank_class = -1;
      g.pods = v.pods;
      gangs.push_back(std::move(g));
      prices.push_back(free);
      continue;
    }
    const double lost_weight = std::max(vt.weight, tier.weight);
    // Immediate eviction loses its work; graceful makes the preemptor wait for the checkpoint.
    const double notice_cost = v.notice_s > 0 ? tier.weight * need * v.notice_s : 0;
    const bool graceful = v.notice_s > 0 && notice_cost < lost_weight * v.gpu_seconds_at_risk;
    out.graceful[i] = graceful;
    VictimPrice price{.gpus = v.gpus, .weight = vt.weight, .lost_work_weight = lost_weight,
                      .gpu_seconds_at_risk = graceful ? 0 : v.gpu_seconds_at_risk,
                      .notice_cost = graceful ? notice_cost : 0, .expected_wait_s = v.expected_wait_s};
    placement::VictimGang g;
    g.key = v.key;
    g.priority = v.priority;
    g.gpu_seconds_at_risk = price.gpu_seconds_at_risk;
    g.cost = VictimCost(price, policy.restart_overhead_s);
    g.rank_class = CloseToNeed(v.gpus, need) ? 0 : 1;
    g.pods = v.pods;
    gangs.push_back(std::move(g));
    prices.push_back(price);
  }
  placement::PreemptionRequest req{.preemptor = preemptor.spec,
                                   .priority = preemptor.reclaim ? INT_MAX : preemptor.priority,
                                   .candidates = gangs};
  req.rank = placement::VictimRank::kCost;
  req.own_plan = preemptor.own_plan;
  req.domains = preemptor.domains;
  PHX_ASSIGN_OR_RETURN(placement::PreemptionResult result, placement::ChoosePreemption(state, req));
  if (!result.helps()) {
    out.outcome = Outcome::kNoVictimSet;
    out.why = result.none ? result.none->Message() : std::string("no victim set helps");
    return out;
  }
  if (result.decision->victims.empty()) {
    out.outcome = Outcome::kFitsAlready;
    out.why = "it fits without preempting";
    out.decision = std::move(result.decision);
    return out;
  }
  // Without preempting, the victims' GPUs come free anyway when they end: the wait a
  // preemption avoids is at most the longest of their remaining run times.
  std::vector<VictimPrice> chosen;
  double victims_remaining = 0;
  for (int v : result.decision->victims) {
    chosen.push_back(prices[static_cast<size_t>(v)]);
    victims_remaining = std::max(victims_remaining, candidates[static_cast<size_t>(v)].remaining_s);
  }
  const double avoided = std::clamp(victims_remaining, 0.0, preemptor.expected_wait_s);
  out.price = PricePreemption(need, tier.weight, avoided, chosen, policy.restart_overhead_s);
  out.decision = std::move(result.decision);
  out.outcome = out.price.pays() || preemptor.reclaim ? Outcome::kPays : Outcome::kDeclined;
  out.why = out.outcome == Outcome::kPays
                ? out.price.Describe()
                : fmt::format("preemption of {} gang(s) declined: {}", chosen.size(), out.price.Describe());
  return out;
}

}  // namespace phalanx::scheduling
