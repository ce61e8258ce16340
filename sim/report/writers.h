// Renders a SimulationReport: a terminal table (policies side by side), JSON (stable
// field names, docs/simulator.md), a self-contained HTML page with inline SVG charts, and
// the per-job CSV (--jobs-csv).
#pragma once

#include <string>
#include <vector>

#include "sim/report/report.h"

namespace phalanx::sim {

std::string RenderTable(const SimulationReport& report);
// `include_timing` = false drops wall-clock figures (determinism comparisons).
std::string RenderJson(const SimulationReport& report, bool include_timing = true);
std::string RenderHtml(const SimulationReport& report);
// --jobs-csv: a header, then one row per job per policy (PolicyReport::job_results).
std::string RenderJobsCsv(const std::vector<PolicyReport>& policies);

// "42s", "13.5m", "2.1h", "3.2d".
std::string HumanSeconds(double seconds);

}  // namespace phalanx::sim
