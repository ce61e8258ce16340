// `phalanx report --from-sim`: prices a simulator report (sim/report/json_writer.cc) with the
// operator's price table. The simulator counts GPU-hours, not money; per policy it reports
// allocated and busy GPU-time as fractions of GPUs x makespan, GPU-hours held idle by partial
// gangs, and lost (preempted) GPU-hours per tier. All GPUs are priced as `gpu_model` (the
// report does not say which model its cluster has; "" = the table's default price).
// Tier multipliers apply where the report splits by tier (lost work, and per-tier GPU-hours if a
// newer simulator reports `gpuHours` per tier); allocated hours without a tier split are priced at
// multiplier 1. A report of `phalanx simulate` with per-tier `gpuHoursByModel` and
// `lostGpuHoursByModel` is priced per GPU model (its node groups' gpuModel; `gpu_model` is then
// unused), with the same formula as the simulator's own `--prices` figures, which it therefore
// reproduces when given the same table (the report carries it as "prices": ReportFromSim uses it
// when no --prices is given). Without `gpu_model`, a report whose per-model hours name a single
// model prices its allocated columns as that model. Pure; thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "core/base/result.h"
#include "core/json/json.h"
#include "core/cost/price_table.h"

namespace phalanx::cli {

struct SimTierCost {
  std::string tier;
  bool by_model = false;  // priced per GPU model from gpuHoursByModel / lostGpuHoursByModel
  double gpu_hours = -1;  // -1: the report has no per-tier GPU-hours
  double cost = 0;
  double lost_gpu_hours = 0;
  double lost_cost = 0;
};

struct SimPolicyCost {
  std::string policy;
  bool has_busy = false;  // the report has gpuUtilisation
  double allocated_gpu_hours = 0, busy_gpu_hours = 0, idle_held_gpu_hours = 0, lost_gpu_hours = 0;
  double allocated_cost = 0, busy_cost = 0, idle_held_cost = 0, lost_cost = 0;
  // Sum of the tiers' cost (tier multipliers and models applied); -1 when the report has no
  // per-tier GPU-hours.
  double tier_cost = -1;
  std::vector<SimTierCost> tiers;
};

struct SimCostReport {
  std::string cluster, currency, gpu_model;
  double hourly = 0;  // price of one GPU-hour at multiplier 1
  std::vector<SimPolicyCost> policies;
};

// kInvalidArgument naming the field ("policies[1].tiers[0].lostGpuHours: expected number, got
// string") when the document is not a simulator report.
Result<SimCostReport> PriceSimReport(const json::Json& report, const cost::PriceTable& prices, const std::string& gpu_model);

std::string RenderSimCostTable(const SimCostReport& r);
json::Json RenderSimCostJson(const SimCostReport& r);

}  // namespace phalanx::cli
