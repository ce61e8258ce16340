// `phalanx report`: GPU-hours, idle GPU-hours and cost per TrainingJob, per namespace (team) and
// per queue (label phalanx.io/queue), read from each job's status.usage (the operator accounts
// it: docs/operator.md "Utilisation and cost"); or, with --from-sim, a simulator report priced
// with the chart's price table. Table by default, --json for machines.
//   phalanx report                           # all namespaces, current kubeconfig context
//   phalanx report -n team-a --json
//   phalanx report --from-sim report.json --prices prices.json --gpu-model NVIDIA-H100-80GB-HBM3
//   phalanx report --from-sim priced.json      # priced by `phalanx simulate --prices`: its own table
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/report/sim_cost.h"
#include "cli/report/usage_report.h"
#include "core/base/version.h"
#include "core/kube/client.h"
#include "core/kube/config.h"
#include "core/kube/resource.h"
#include "core/cost/price_table.h"

namespace phalanx::cli {
namespace {

struct ReportFlags {
  std::string kubeconfig;
  std::string ns;  // "" = all namespaces
  bool json = false;
  std::string from_sim;
  std::string prices;
  std::string gpu_model;
};

int Error(const std::string& message, int code = 1) {
  std::cerr << "phalanx report: " << message << "\n";
  return code;
}

Result<std::string> ReadText(const std::string& path) {
  if (path == "-") {
    std::stringstream s;
    s << std::cin.rdbuf();
    return s.str();
  }
  std::ifstream in(path);
  if (!in) return NotFoundError(fmt::format("{}: cannot read the file", path));
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int ReportFromSim(const ReportFlags& f) {
  auto text = ReadText(f.from_sim);
  if (!text.ok()) return Error(fmt::format("--from-sim {}", text.status().message()));
  auto doc = json::Parse(*text);
  if (!doc.ok()) return Error(fmt::format("--from-sim {}: not JSON: {}", f.from_sim, doc.status().message()));
  // Without --prices, the table the simulator priced the run with (`phalanx simulate --prices`).
  Result<cost::PriceTable> prices = InvalidArgumentError("no price table");
  if (!f.prices.empty()) {
    auto price_text = ReadText(f.prices);
    if (!price_text.ok()) return Error(fmt::format("--prices {}", price_text.status().message()));
    prices = cost::ParsePriceTableText(*price_text);
    if (!prices.ok()) return Error(fmt::format("--prices {}: {}", f.prices, prices.status().message()));
  } else if (const json::Json* embedded = doc->is_object() ? json::Member(*doc, "prices") : nullptr) {
    prices = cost::ParsePriceTable(*embedded, "prices");
    if (!prices.ok()) return Error(fmt::format("--from-sim {}: {}", f.from_sim, prices.status().message()));
  } else {
    return Error(
        "--from-sim needs --prices FILE (the chart's price table: the operator's prices.json) unless the report was "
        "priced by `phalanx simulate --prices`",
        2);
  }
  auto priced = PriceSimReport(*doc, *prices, f.gpu_model);
  if (!priced.ok()) return Error(fmt::format("--from-sim {}: {}", f.from_sim, priced.status().message()));
  if (f.json) {
    std::cout << json::Dump(RenderSimCostJson(*priced), 2) << "\n";
  } else {
    std::cout << RenderSimCostTable(*priced);
  }
  return 0;
}

int ReportFromCluster(const ReportFlags& f) {
  if (!f.prices.empty() || !f.gpu_model.empty()) {
    return Error("--prices and --gpu-model go with --from-sim (a cluster's jobs are priced by the operator)", 2);
  }
  auto config = kube::ResolveConfig(f.kubeconfig);
  if (!config.ok()) return Error(std::string(config.status().message()));
  kube::ClientOptions options;
  options.user_agent = fmt::format("phalanx-report/{}", kVersion);
  auto client = kube::KubeClient::Create(*config, options);
  if (!client.ok()) return Error(std::string(client.status().message()));
  auto list = (*client)->ListAll(kube::resources::kTrainingJobs, f.ns);
  if (!list.ok()) {
    return Error(fmt::format("cannot list TrainingJobs{}: {}", f.ns.empty() ? "" : " in " + f.ns,
                             list.status().ToString()));
  }
  auto report = BuildUsageReport(*list);
  if (!report.ok()) return Error(std::string(report.status().message()));
  if (f.json) {
    std::cout << json::Dump(RenderUsageJson(*report), 2) << "\n";
  } else {
    std::cout << RenderUsageTable(*report);
  }
  return 0;
}

}  // namespace

void RegisterReportCommand(CommandRegistry& registry) {
  auto flags = std::make_shared<ReportFlags>();
  registry.Add({
      .name = "report",
      .description = "GPU-hours, idle GPU-hours and cost per TrainingJob, namespace and queue (or of a simulator report)",
      .configure =
          [flags](CLI::App& app) {
            app.add_option("--kubeconfig", flags->kubeconfig, "Kubeconfig (default: $KUBECONFIG, in-cluster, ~/.kube/config)");
            app.add_option("-n,--namespace", flags->ns, "Only TrainingJobs in this namespace (default: all)");
            app.add_flag("--json", flags->json, "Print JSON instead of tables");
            app.add_option("--from-sim", flags->from_sim,
                           "Price a simulator report (phalanx simulate --report FILE or --json) instead of reading the cluster; - = stdin");
            app.add_option("--prices", flags->prices, "Price table JSON for --from-sim (the chart's cost values, as the operator reads them; default: the table the report was priced with by phalanx simulate --prices)");
            app.add_option("--gpu-model", flags->gpu_model,
                           "GPU model to price the simulated cluster's GPUs as (a gpuHourly key; default: defaultGpuHourly)");
          },
      .run = [flags] { return flags->from_sim.empty() ? ReportFromCluster(*flags) : ReportFromSim(*flags); },
  });
}

}  // namespace phalanx::cli
