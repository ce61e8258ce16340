// Renders a SimulationReport: a terminal table (policies side by side), JSON (stable
// field names, docs/simulator.md) and a self-contained HTML page with inline SVG charts.
#pragma once

#include <string>

#include "sim/report/report.h"

namespace phalanx::sim {

std::string RenderTable(const SimulationReport& report);
// `include_timing` = false drops wall-clock figures (determinism comparisons).
std::string RenderJson(const SimulationReport& report, bool include_timing = true);
std::string RenderHtml(const SimulationReport& report);

// "42s", "13.5m", "2.1h", "3.2d".
std::string HumanSeconds(double seconds);

}  // namespace phalanx::sim
