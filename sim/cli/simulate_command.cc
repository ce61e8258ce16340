#include "sim/cli/simulate_command.h"

#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>

#include <unistd.h>

#include <fmt/format.h>

#include "core/cost/price_table.h"
#include "core/scheduling/policy_yaml.h"
#include "sim/engine/run.h"
#include "sim/report/writers.h"
#include "sim/trace/readers.h"

namespace phalanx::sim {
namespace {

struct SimulateFlags {
  std::string cluster;
  std::string trace;
  std::string format = "phalanx";
  std::string policies = "all";
  uint64_t seed = 1;
  double time_scale = 1;
  int64_t max_jobs = 0;
  double restart_overhead = 30;
  double checkpoint_flush = 60;
  std::string scheduling_policy;
  bool no_backfill = false;
  bool no_duration_hints = false;
  std::string hint_noise;
  bool no_queues = false;
  std::string report;
  std::string html;
  std::string jobs_csv;
  std::string prices;
  bool json = false;
  bool quiet = false;
};

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  return static_cast<bool>(out);
}

int RunSimulate(const SimulateFlags& f) {
  auto cluster = LoadClusterSpec(f.cluster);
  if (!cluster.ok()) {
    std::cerr << "phalanx simulate: " << cluster.status().message() << "\n";
    return 1;
  }
  if (f.no_queues) cluster->queues = {};
  ReaderOptions ro{.seed = f.seed, .time_scale = f.time_scale, .max_jobs = f.max_jobs};
  auto workload = ReadTrace(f.trace, f.format, ro);
  if (!workload.ok()) {
    std::cerr << "phalanx simulate: " << workload.status().message() << "\n";
    return 1;
  }
  auto names = ParsePolicyList(f.policies);
  if (!names.ok()) {
    std::cerr << "phalanx simulate: " << names.status().message() << "\n";
    return 2;
  }
  RunOptions opts;
  opts.policies = *names;
  opts.seed = f.seed;
  if (!f.scheduling_policy.empty()) {
    auto engine = scheduling::LoadEnginePolicyFile(f.scheduling_policy);
    if (!engine.ok()) {
      std::cerr << "phalanx simulate: " << engine.status().message() << "\n";
      return 2;
    }
    opts.policy.engine = *engine;
  }
  if (!f.prices.empty()) {
    std::ifstream in(f.prices, std::ios::binary);
    if (!in) {
      std::cerr << "phalanx simulate: --prices " << f.prices << ": cannot read the file\n";
      return 2;
    }
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto prices = cost::ParsePriceTableText(text);
    if (!prices.ok()) {
      std::cerr << "phalanx simulate: --prices " << f.prices << ": " << prices.status().message() << "\n";
      return 2;
    }
    opts.sim.prices = *prices;
  }
  if (f.no_backfill) opts.policy.engine.backfill = false;
  opts.policy.engine.restart_overhead_s = f.restart_overhead;
  opts.sim.graceful_notice_s = f.checkpoint_flush;
  if (!f.hint_noise.empty()) {
    if (f.no_duration_hints) {
      std::cerr << "phalanx simulate: --hint-noise and --no-duration-hints exclude each other (noisy hints or none)\n";
      return 2;
    }
    auto hints = ParseHintNoise(f.hint_noise, f.seed);
    if (!hints.ok()) {
      std::cerr << "phalanx simulate: " << hints.status().message() << "\n";
      return 2;
    }
    opts.policy.hints = *hints;
  }
  if (f.no_duration_hints) opts.policy.hints.mode = HintModel::Mode::kNone;
  opts.sim.restart_overhead_s = f.restart_overhead;
  opts.sim.job_results = !f.jobs_csv.empty();
  auto current = std::make_shared<std::string>();
  const bool progress = !f.quiet && isatty(STDERR_FILENO);
  if (progress) {
    opts.on_policy = [current](const std::string& name) { *current = name; };
    opts.sim.progress = [current](double frac) {
      const int width = 30;
      const int done = static_cast<int>(frac * width);
      std::cerr << fmt::format("\r{:<14}[{}{}] {:3.0f}%", *current, std::string(static_cast<size_t>(done), '#'),
                               std::string(static_cast<size_t>(width - done), ' '), frac * 100)
                << std::flush;
    };
  }
  auto report = RunSimulation(*cluster, *workload, opts);
  if (progress) std::cerr << "\r" << std::string(60, ' ') << "\r" << std::flush;
  if (!report.ok()) {
    std::cerr << "phalanx simulate: " << report.status().message() << "\n";
    return 1;
  }
  if (f.json) {
    std::cout << RenderJson(*report) << "\n";
  } else if (!f.quiet || (f.report.empty() && f.html.empty())) {
    std::cout << RenderTable(*report);
  }
  if (!f.report.empty() && !WriteFile(f.report, RenderJson(*report) + "\n")) {
    std::cerr << "phalanx simulate: cannot write " << f.report << "\n";
    return 1;
  }
  if (!f.html.empty() && !WriteFile(f.html, RenderHtml(*report))) {
    std::cerr << "phalanx simulate: cannot write " << f.html << "\n";
    return 1;
  }
  if (!f.jobs_csv.empty() && !WriteFile(f.jobs_csv, RenderJobsCsv(report->policies))) {
    std::cerr << "phalanx simulate: cannot write " << f.jobs_csv << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

void RegisterSimulateCommand(cli::CommandRegistry& registry) {
  auto flags = std::make_shared<SimulateFlags>();
  registry.Add(cli::Command{
      .name = "simulate",
      .description = "replay a GPU-cluster trace through the Phalanx scheduling core and baseline policies",
      .configure =
          [flags](CLI::App& app) {
            app.add_option("--cluster", flags->cluster, "cluster description (YAML, docs/cluster-description.md)")
                ->required();
            app.add_option("--trace", flags->trace, "workload trace (CSV)")->required();
            app.add_option("--trace-format", flags->format, "phalanx | philly | openb")
                ->check(CLI::IsMember({"phalanx", "philly", "openb"}));
            app.add_option("--policy", flags->policies,
                           "comma-separated: phalanx, k8s-default, gang-fifo, gang-binpack, or all");
            app.add_option("--seed", flags->seed, "seed of the tier/checkpoint rule for traces without them");
            app.add_option("--time-scale", flags->time_scale, "divide gaps between submit times by this")
                ->check(CLI::PositiveNumber);
            app.add_option("--max-jobs", flags->max_jobs, "replay only the first N jobs (0 = all)");
            app.add_option("--restart-overhead", flags->restart_overhead, "seconds from preemption to re-queue");
            app.add_option("--scheduling-policy", flags->scheduling_policy,
                           "phalanx: tier rules of the scheduling engine (YAML `scheduling:`, docs/algorithms.md)");
            app.add_option("--checkpoint-flush", flags->checkpoint_flush,
                           "seconds a job that checkpoints needs to save on notice (graceful preemption); 0 = none")
                ->check(CLI::NonNegativeNumber);
            app.add_flag("--no-backfill", flags->no_backfill,
                         "phalanx: the head of each pool blocks everything behind it (no backfill)");
            app.add_flag("--no-duration-hints", flags->no_duration_hints,
                         "phalanx: jobs give no run-time hint; the engine assumes the trace's active_deadline, "
                         "else its tier defaults");
            app.add_option("--hint-noise", flags->hint_noise,
                           "phalanx: users overestimate: each job's hint is its duration x U(LO,HI), seeded by --seed "
                           "(e.g. 1,3)");
            app.add_flag("--no-queues", flags->no_queues,
                         "ignore the cluster description's team queues (compare a run without them)");
            app.add_option("--prices", flags->prices,
                           "price table JSON (the chart's cost values, as the operator reads them): cost per tier, "
                           "per queue and of lost work (docs/simulator.md \"Cost\")");
            app.add_option("--report", flags->report, "write the JSON report to this file");
            app.add_option("--html", flags->html, "write a self-contained HTML report to this file");
            app.add_option("--jobs-csv", flags->jobs_csv,
                           "write one CSV row per job per policy to this file: its wait, start, finish, "
                           "preemptions, node group, outcome (docs/simulator.md \"Per-job results\")");
            app.add_flag("--json", flags->json, "print the JSON report on stdout instead of the table");
            app.add_flag("--quiet", flags->quiet, "no progress bar; no table when --report/--html are given");
          },
      .run = [flags] { return RunSimulate(*flags); }});
}

}  // namespace phalanx::sim
