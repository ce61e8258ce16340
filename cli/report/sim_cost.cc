#include "cli/report/sim_cost.h"

#include <algorithm>

#include <fmt/format.h>

#include "cli/report/usage_report.h"

namespace phalanx::cli {

namespace {

using json::Json;

Result<double> Number(const Json& obj, const char* key, const std::string& path, bool required) {
  const Json* v = json::Member(obj, key);
  if (v == nullptr) {
    if (required) return InvalidArgumentError(fmt::format("{}: required field missing", json::JoinPath(path, key)));
    return -1.0;
  }
  if (!v->is_number()) {
    return InvalidArgumentError(
        fmt::format("{}: expected number, got {}", json::JoinPath(path, key), json::TypeName(*v)));
  }
  return v->get<double>();
}

// Sum of hours x price over a {model: GPU-hours} object (a simulator report's *ByModel).
Result<double> PriceByModel(const Json& by_model, const std::string& path, const cost::PriceTable& prices,
                            const std::string& tier, double* hours) {
  if (!by_model.is_object()) {
    return InvalidArgumentError(fmt::format("{}: expected object, got {}", path, json::TypeName(by_model)));
  }
  double total = 0;
  *hours = 0;
  for (auto it = by_model.begin(); it != by_model.end(); ++it) {
    if (!it->is_number()) {
      return InvalidArgumentError(
          fmt::format("{}: expected number, got {}", json::JoinPath(path, it.key()), json::TypeName(*it)));
    }
    const double h = it->get<double>();
    *hours += h;
    total += h * prices.Hourly(it.key(), tier);
  }
  return total;
}

// The one GPU model a simulator report's per-tier gpuHoursByModel names ("" when none or
// several): a single-model cluster's allocated columns are then priced as that model.
std::string OnlyModel(const Json& policies) {
  std::string only;
  for (const Json& p : policies) {
    const Json* tiers = p.is_object() ? json::Member(p, "tiers") : nullptr;
    if (tiers == nullptr || !tiers->is_array()) continue;
    for (const Json& t : *tiers) {
      const Json* by_model = t.is_object() ? json::Member(t, "gpuHoursByModel") : nullptr;
      if (by_model == nullptr || !by_model->is_object()) continue;
      for (auto it = by_model->begin(); it != by_model->end(); ++it) {
        if (!only.empty() && only != it.key()) return "";
        only = it.key();
      }
    }
  }
  return only;
}

}  // namespace

Result<SimCostReport> PriceSimReport(const Json& report, const cost::PriceTable& prices, const std::string& gpu_model) {
  if (!report.is_object()) {
    return InvalidArgumentError(fmt::format("simulator report: expected object, got {}", json::TypeName(report)));
  }
  const Json* cluster = json::Member(report, "cluster");
  const Json* policies = json::Member(report, "policies");
  if (cluster == nullptr || policies == nullptr || !policies->is_array()) {
    return InvalidArgumentError("not a simulator report: expected cluster{} and policies[] (phalanx simulate --report FILE)");
  }
  SimCostReport out;
  if (const Json* n = json::Member(*cluster, "name"); n != nullptr && n->is_string()) out.cluster = n->get<std::string>();
  PHX_ASSIGN_OR_RETURN(double gpus, Number(*cluster, "gpus", "cluster", true));
  out.currency = prices.currency;
  out.gpu_model = gpu_model.empty() ? OnlyModel(*policies) : gpu_model;
  out.hourly = prices.Base(out.gpu_model);
  for (size_t i = 0; i < policies->size(); ++i) {
    const Json& p = (*policies)[i];
    const std::string path = fmt::format("policies[{}]", i);
    if (!p.is_object()) return InvalidArgumentError(fmt::format("{}: expected object, got {}", path, json::TypeName(p)));
    SimPolicyCost pc;
    if (const Json* n = json::Member(p, "policy"); n != nullptr && n->is_string()) pc.policy = n->get<std::string>();
    PHX_ASSIGN_OR_RETURN(double makespan, Number(p, "makespanSeconds", path, true));
    PHX_ASSIGN_OR_RETURN(double alloc, Number(p, "gpuAllocation", path, true));
    PHX_ASSIGN_OR_RETURN(double util, Number(p, "gpuUtilisation", path, false));
    PHX_ASSIGN_OR_RETURN(double idle_held, Number(p, "idleHeldGpuHours", path, false));
    const double gpu_h = gpus * makespan / 3600;
    pc.allocated_gpu_hours = alloc * gpu_h;
    pc.has_busy = util >= 0;
    pc.busy_gpu_hours = pc.has_busy ? util * gpu_h : 0;
    pc.idle_held_gpu_hours = std::max(0.0, idle_held);
    pc.allocated_cost = pc.allocated_gpu_hours * out.hourly;
    pc.busy_cost = pc.busy_gpu_hours * out.hourly;
    pc.idle_held_cost = pc.idle_held_gpu_hours * out.hourly;
    if (const Json* tiers = json::Member(p, "tiers")) {
      if (!tiers->is_array()) {
        return InvalidArgumentError(fmt::format("{}.tiers: expected array, got {}", path, json::TypeName(*tiers)));
      }
      for (size_t k = 0; k < tiers->size(); ++k) {
        const Json& t = (*tiers)[k];
        const std::string tpath = fmt::format("{}.tiers[{}]", path, k);
        SimTierCost tc;
        const Json* name = json::Member(t, "tier");
        if (name == nullptr || !name->is_string()) {
          return InvalidArgumentError(fmt::format("{}.tier: expected string", tpath));
        }
        tc.tier = name->get<std::string>();
        const double hourly = prices.Hourly(gpu_model, tc.tier);
        PHX_ASSIGN_OR_RETURN(double lost, Number(t, "lostGpuHours", tpath, false));
        PHX_ASSIGN_OR_RETURN(tc.gpu_hours, Number(t, "gpuHours", tpath, false));
        tc.lost_gpu_hours = std::max(0.0, lost);
        tc.lost_cost = tc.lost_gpu_hours * hourly;
        if (tc.gpu_hours >= 0) tc.cost = tc.gpu_hours * hourly;
        const Json* held_by_model = json::Member(t, "gpuHoursByModel");
        const Json* lost_by_model = json::Member(t, "lostGpuHoursByModel");
        if (held_by_model != nullptr && lost_by_model != nullptr) {
          tc.by_model = true;
          PHX_ASSIGN_OR_RETURN(tc.cost, PriceByModel(*held_by_model, tpath + ".gpuHoursByModel", prices, tc.tier,
                                                     &tc.gpu_hours));
          PHX_ASSIGN_OR_RETURN(tc.lost_cost, PriceByModel(*lost_by_model, tpath + ".lostGpuHoursByModel", prices,
                                                          tc.tier, &tc.lost_gpu_hours));
        }
        if (tc.gpu_hours >= 0) pc.tier_cost = std::max(0.0, pc.tier_cost) + tc.cost;
        pc.lost_gpu_hours += tc.lost_gpu_hours;
        pc.lost_cost += tc.lost_cost;
        pc.tiers.push_back(tc);
      }
    }
    out.policies.push_back(std::move(pc));
  }
  return out;
}

std::string RenderSimCostTable(const SimCostReport& r) {
  bool by_model = false;
  for (const auto& p : r.policies)
    for (const auto& t : p.tiers) by_model = by_model || t.by_model;
  std::string out = fmt::format("Simulated cluster {}: every GPU priced as {} at {} {}/GPU-hour (tier multiplier 1){}.\n\n",
                                r.cluster.empty() ? "(unnamed)" : r.cluster,
                                r.gpu_model.empty() ? "the default model" : r.gpu_model, Money(r.hourly), r.currency,
                                by_model ? " in the columns without a tier split; per tier, each node group's GPU model" : "");
  std::vector<std::vector<std::string>> rows;
  for (const auto& p : r.policies) {
    rows.push_back({p.policy, Hours(p.allocated_gpu_hours), Money(p.allocated_cost),
                    p.has_busy ? Hours(p.busy_gpu_hours) : "-", p.has_busy ? Money(p.busy_cost) : "-", Hours(p.idle_held_gpu_hours), Money(p.idle_held_cost), Hours(p.lost_gpu_hours),
                    Money(p.lost_cost)});
  }
  std::vector<std::vector<std::string>> priced_rows;
  for (const auto& p : r.policies)
    if (p.tier_cost >= 0) priced_rows.push_back({p.policy, Money(p.tier_cost), Money(p.lost_cost)});
  if (!priced_rows.empty()) {
    out += "Per-tier GPU-hours priced (tier multipliers and, where the report has them, GPU models applied):\n";
    out += FormatTable({"POLICY", "COST-OF-HELD-GPU-HOURS", "LOST-COST"}, priced_rows, {false, true, true});
    out += "\n";
  }
  out += FormatTable({"POLICY", "ALLOCATED-GPU-HOURS", "COST", "BUSY-GPU-HOURS", "BUSY-COST", "IDLE-HELD-GPU-HOURS",
                      "IDLE-HELD-COST", "LOST-GPU-HOURS", "LOST-COST"},
                     rows, {false, true, true, true, true, true, true, true, true});
  std::vector<std::vector<std::string>> tier_rows;
  for (const auto& p : r.policies) {
    for (const auto& t : p.tiers) {
      tier_rows.push_back({p.policy, t.tier, t.gpu_hours >= 0 ? Hours(t.gpu_hours) : "-",
                           t.gpu_hours >= 0 ? Money(t.cost) : "-", Hours(t.lost_gpu_hours), Money(t.lost_cost)});
    }
  }
  if (!tier_rows.empty()) {
    out += "\nPer tier (tier multipliers applied; '-': the simulator does not report GPU-hours per tier):\n";
    out += FormatTable({"POLICY", "TIER", "GPU-HOURS", "COST", "LOST-GPU-HOURS", "LOST-COST"}, tier_rows,
                       {false, false, true, true, true, true});
  }
  return out;
}

Json RenderSimCostJson(const SimCostReport& r) {
  Json out = {{"cluster", r.cluster}, {"currency", r.currency}, {"gpuModel", r.gpu_model}, {"gpuHourly", r.hourly},
              {"policies", Json::array()}};
  for (const auto& p : r.policies) {
    Json pj = {{"policy", p.policy},
               {"allocatedGpuHours", p.allocated_gpu_hours},
               {"allocatedCost", p.allocated_cost},
               {"idleHeldGpuHours", p.idle_held_gpu_hours},
               {"idleHeldCost", p.idle_held_cost},
               {"lostGpuHours", p.lost_gpu_hours},
               {"lostCost", p.lost_cost},
               {"tiers", Json::array()}};
    if (p.tier_cost >= 0) pj["tierCost"] = p.tier_cost;
    if (p.has_busy) {
      pj["busyGpuHours"] = p.busy_gpu_hours;
      pj["busyCost"] = p.busy_cost;
    }
    for (const auto& t : p.tiers) {
      Json tj = {{"tier", t.tier}, {"lostGpuHours", t.lost_gpu_hours}, {"lostCost", t.lost_cost}};
      if (t.gpu_hours >= 0) {
        tj["gpuHours"] = t.gpu_hours;
        tj["cost"] = t.cost;
      }
      pj["tiers"].push_back(std::move(tj));
    }
    out["policies"].push_back(std::move(pj));
  }
  return out;
}

}  // namespace phalanx::cli
