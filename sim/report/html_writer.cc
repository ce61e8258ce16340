// Self-contained HTML: no scripts, no external assets; charts are inline SVG.
#include <algorithm>

#include <fmt/format.h>

#include "sim/report/writers.h"

namespace phalanx::sim {
namespace {

const char* kColours[] = {"#1b6ac9", "#d9480f", "#2b8a3e", "#862e9c", "#e67700", "#495057"};

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// A line chart of one timeline field for every policy.
template <typename Field>
std::string LineChart(const SimulationReport& r, const std::string& title, const std::string& unit, Field field) {
  const double W = 760, H = 260, L = 60, B = 30, T = 24;
  double tmax = 1, vmax = 1e-9;
  for (const auto& p : r.policies)
    for (const auto& s : p.timeline) {
      tmax = std::max(tmax, s.time);
      vmax = std::max(vmax, field(s));
    }
  std::string svg = fmt::format(
      "<svg xmlns='http://www.w3.org/2000/svg' width='{0}' height='{1}' viewBox='0 0 {0} {1}'>"
      "<text x='{2}' y='16' font-size='14' font-weight='bold'>{3}</text>",
      W, H, L, Escape(title));
  for (int k = 0; k <= 4; ++k) {
    const double y = T + (H - T - B) * (1 - k / 4.0);
    svg += fmt::format("<line x1='{}' y1='{:.1f}' x2='{}' y2='{:.1f}' stroke='#ddd'/>", L, y, W - 10, y);
    svg += fmt::format("<text x='{}' y='{:.1f}' font-size='11' text-anchor='end'>{:.3g}{}</text>", L - 4, y + 4,
                       vmax * k / 4, unit);
  }
  svg += fmt::format("<text x='{}' y='{}' font-size='11'>0</text><text x='{}' y='{}' font-size='11' "
                     "text-anchor='end'>{}</text>",
                     L, H - 10, W - 10, H - 10, Escape(HumanSeconds(tmax)));
  for (size_t i = 0; i < r.policies.size(); ++i) {
    std::string pts;
    for (const auto& s : r.policies[i].timeline)
      pts += fmt::format("{:.1f},{:.1f} ", L + (W - L - 10) * s.time / tmax, T + (H - T - B) * (1 - field(s) / vmax));
    svg += fmt::format("<polyline fill='none' stroke='{}' stroke-width='1.5' points='{}'/>", kColours[i % 6], pts);
    svg += fmt::format("<text x='{}' y='{}' font-size='11' fill='{}'>{}</text>", W - 150, T + 14 * (i + 1),
                       kColours[i % 6], Escape(r.policies[i].policy));
  }
  return svg + "</svg>";
}

// Grouped bars: p95 JCT per tier per policy.
std::string TierBars(const SimulationReport& r) {
  std::vector<std::pair<int, std::string>> tiers;
  for (const auto& p : r.policies)
    for (const auto& t : p.tiers)
      if (std::none_of(tiers.begin(), tiers.end(), [&](auto& x) { return x.first == t.priority; }))
        tiers.emplace_back(t.priority, t.tier);
  std::sort(tiers.begin(), tiers.end(), [](auto& a, auto& b) { return a.first > b.first; });
  double vmax = 1;
  for (const auto& p : r.policies)
    for (const auto& t : p.tiers) vmax = std::max(vmax, t.jct_s.p95);
  const double W = 760, H = 260, L = 60, B = 30, T = 24;
  const double group = (W - L - 10) / std::max<size_t>(1, tiers.size());
  const double bar = group * 0.8 / std::max<size_t>(1, r.policies.size());
  std::string svg = fmt::format(
      "<svg xmlns='http://www.w3.org/2000/svg' width='{0}' height='{1}' viewBox='0 0 {0} {1}'>"
      "<text x='{2}' y='16' font-size='14' font-weight='bold'>p95 job completion time by tier (max {3})</text>",
      W, H, L, Escape(HumanSeconds(vmax)));
  for (size_t g = 0; g < tiers.size(); ++g) {
    svg += fmt::format("<text x='{:.1f}' y='{}' font-size='11'>{}</text>", L + group * g + 4, H - 10,
                       Escape(tiers[g].second));
    for (size_t i = 0; i < r.policies.size(); ++i) {
      double v = 0;
      for (const auto& t : r.policies[i].tiers)
        if (t.priority == tiers[g].first) v = t.jct_s.p95;
      const double h = (H - T - B) * v / vmax;
      svg += fmt::format("<rect x='{:.1f}' y='{:.1f}' width='{:.1f}' height='{:.1f}' fill='{}'><title>{} {}: {}</title></rect>",
                         L + group * g + bar * i + 4, H - B - h, bar - 2, h, kColours[i % 6],
                         Escape(r.policies[i].policy), Escape(tiers[g].second), Escape(HumanSeconds(v)));
    }
  }
  return svg + "</svg>";
}

// One policy's team queues: each queue's share of the cluster's GPUs over time (solid),
// what it asked for (dashed, as a share too) and its nominal quota (dotted).
std::string QueueShareChart(const SimulationReport& r, const PolicyReport& p) {
  const double W = 760, H = 260, L = 60, B = 30, T = 24;
  const double gpus = std::max(1, r.cluster_gpus);
  double tmax = 1, vmax = 1e-9;
  for (const auto& s : p.timeline) {
    tmax = std::max(tmax, s.time);
    for (double g : s.queue_gpus) vmax = std::max(vmax, g / gpus);
  }
  for (const QueueReport& q : p.queues) vmax = std::max(vmax, q.nominal_gpus / gpus);
  vmax = std::min(1.0, std::max(vmax, 0.05));
  std::string svg = fmt::format(
      "<svg xmlns='http://www.w3.org/2000/svg' width='{0}' height='{1}' viewBox='0 0 {0} {1}'>"
      "<text x='{2}' y='16' font-size='14' font-weight='bold'>{3}: share of GPUs by queue (dashed: demand, dotted: "
      "nominal quota)</text>",
      W, H, L, Escape(p.policy));
  svg += fmt::format("<text x='{}' y='{}' font-size='11'>0</text><text x='{}' y='{}' font-size='11' "
                     "text-anchor='end'>{}</text>",
                     L, H - 10, W - 10, H - 10, Escape(HumanSeconds(tmax)));
  for (int k = 0; k <= 4; ++k) {
    const double y = T + (H - T - B) * (1 - k / 4.0);
    svg += fmt::format("<line x1='{}' y1='{:.1f}' x2='{}' y2='{:.1f}' stroke='#ddd'/>", L, y, W - 10, y);
    svg += fmt::format("<text x='{}' y='{:.1f}' font-size='11' text-anchor='end'>{:.0f}%</text>", L - 4, y + 4,
                       100 * vmax * k / 4);
  }
  auto y_of = [&](double v) { return T + (H - T - B) * (1 - std::min(v / gpus, vmax) / vmax); };
  for (size_t q = 0; q < p.queues.size(); ++q) {
    std::string used, wanted;
    for (const auto& s : p.timeline) {
      if (q >= s.queue_gpus.size()) continue;
      const double x = L + (W - L - 10) * s.time / tmax;
      used += fmt::format("{:.1f},{:.1f} ", x, y_of(s.queue_gpus[q]));
      wanted += fmt::format("{:.1f},{:.1f} ", x, y_of(s.queue_demand[q]));
    }
    const char* colour = kColours[q % 6];
    svg += fmt::format("<polyline fill='none' stroke='{}' stroke-width='1.5' points='{}'/>", colour, used);
    svg += fmt::format("<polyline fill='none' stroke='{}' stroke-width='1' stroke-dasharray='4 3' opacity='0.6' "
                       "points='{}'/>",
                       colour, wanted);
    const double nominal_y = y_of(p.queues[q].nominal_gpus);
    svg += fmt::format("<line x1='{}' y1='{:.1f}' x2='{}' y2='{:.1f}' stroke='{}' stroke-width='1' "
                       "stroke-dasharray='1 3'/>",
                       L, nominal_y, W - 10, nominal_y, colour);
    svg += fmt::format("<text x='{}' y='{}' font-size='11' fill='{}'>{}</text>", W - 150, T + 14 * (q + 1), colour,
                       Escape(p.queues[q].name));
  }
  return svg + "</svg>";
}

// Cost per policy and tier (--prices): GPU-hours held, their cost, the cost of lost work.
std::string CostTable(const SimulationReport& r) {
  if (!r.prices) return "";
  std::string html = fmt::format(
      "<h2>Cost ({})</h2><table border='1' cellpadding='4' style='border-collapse:collapse;font-size:13px'>"
      "<tr><th>policy</th><th>tier</th><th>GPU-hours held</th><th>cost</th><th>lost GPU-hours</th><th>cost of lost "
      "work</th></tr>",
      Escape(r.prices->currency));
  for (const auto& p : r.policies) {
    for (const auto& t : p.tiers)
      html += fmt::format("<tr><td>{}</td><td>{}</td><td>{:.1f}</td><td>{:.2f}</td><td>{:.1f}</td><td>{:.2f}</td></tr>",
                          Escape(p.policy), Escape(t.tier), t.gpu_hours, t.cost, t.lost_gpu_hours, t.lost_cost);
    html += fmt::format("<tr><td><b>{}</b></td><td>all</td><td></td><td><b>{:.2f}</b></td><td>{:.1f}</td><td><b>{:.2f}</b></td></tr>",
                        Escape(p.policy), p.cost, p.lost_gpu_hours, p.lost_cost);
  }
  return html + "</table>";
}

}  // namespace

std::string RenderHtml(const SimulationReport& r) {
  std::string html =
      "<!DOCTYPE html><html><head><meta charset='utf-8'><title>phalanx simulate</title><style>"
      "body{font-family:sans-serif;margin:24px;color:#222}pre{background:#f6f8fa;padding:12px;font-size:12px}"
      "</style></head><body>";
  html += fmt::format("<h1>phalanx simulate</h1><p>Cluster <b>{}</b> ({} nodes, {} GPUs); trace <b>{}</b> ({}, {} "
                      "jobs); seed {}.</p>",
                      Escape(r.cluster), r.cluster_nodes, r.cluster_gpus, Escape(r.trace), Escape(r.trace_format),
                      r.jobs, r.seed);
  html += LineChart(r, "GPUs busy with running jobs", "", [](const Sample& s) { return s.busy_gpus; });
  html += "<br>" + LineChart(r, "GPUs allocated (incl. idle members of partial gangs)", "",
                             [](const Sample& s) { return s.allocated_gpus; });
  html += "<br>" + LineChart(r, "Jobs waiting", "", [](const Sample& s) { return static_cast<double>(s.queued_jobs); });
  html += "<br>" + LineChart(r, "Fragmentation (FGD): fragmented / free GPUs", "",
                             [](const Sample& s) { return s.fragmentation_ratio; });
  html += "<br>" + TierBars(r);
  for (const auto& p : r.policies)
    if (!p.queues.empty()) html += "<br>" + QueueShareChart(r, p);
  html += CostTable(r);
  html += "<h2>Summary</h2><pre>" + Escape(RenderTable(r)) + "</pre></body></html>\n";
  return html;
}

}  // namespace phalanx::sim
