#include "core/scheduling/preemption_cost.h"

#include <algorithm>

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
