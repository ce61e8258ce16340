// FGD (Weng et al., ATC'23) validation: replays the openb default pod list on the openb
// GPU-node cluster the way the FGD artifact does (arrival only, GPU request inflated to
// 130% of capacity, shuffled, seeds 42..51) with three scorers, and prints the GPU
// allocation curve next to the artifact's cached results for BestFit and FGD.
//
//   best-fit  the artifact's BestFit: min of 0.5 (free CPU - req)/max CPU + 0.5 (free GPU
//             - req)/max GPU over feasible nodes; shares go to the fullest GPU that fits.
//   fgd       FGD: the node and GPUs whose placement grows fragmentation least. Per task
//             type core/placement NodeFragmentationMilli, plus the "lacks CPU" case
//             (all free GPUs fragmented) evaluated here; task types = (CPU, GPUs, milli)
//             of the inflated list's GPU pods.
//   phalanx   core/placement ScoreNode (the extender's node score: bin packing on GPUs,
//             topology unknown here), highest score over feasible nodes.
// The ledger is core placement::ClusterState (fractional shares in milli-GPUs); CPU and
// memory, which Phalanx's ledger does not track, are a side table here so the same nodes
// are feasible as in the artifact. CPU-only pods are placed best-fit under best-fit and
// phalanx, by the fragmentation delta under fgd. Ties between equal scores are broken
// at random (seeded), as kube-scheduler does. Approximated: the artifact's inflation
// (TunePodsByNodeTotalResource): pods are sampled with replacement until the GPU
// request reaches 130% of capacity.
//
// Usage: sim_fgd_validation [--traces DIR] [--seeds N]   (DIR defaults to
// $PHALANX_SHARED_DIR/traces, else <source>/../shared/traces).
#include <algorithm>
#include <bit>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <tuple>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/placement/cluster_state.h"
#include "core/placement/fragmentation.h"
#include "core/placement/node_score.h"
#include "sim/trace/csv_table.h"

namespace phalanx::sim {
namespace {

using placement::ClusterState;
using placement::GpuMask;
using placement::NodeIndex;

struct NodeRow {
  std::string name, model;
  int64_t cpu = 0, mem = 0;
  int gpus = 0;
};
struct PodRow {
  int64_t cpu = 0, mem = 0;
  int gpus = 0, milli = 0;  // milli per GPU
  std::vector<std::string> models;  // allowed; empty = any
  int64_t GpuMilli() const { return static_cast<int64_t>(gpus) * milli; }
};

Result<std::vector<NodeRow>> ReadNodes(const std::string& path) {
  PHX_ASSIGN_OR_RETURN(CsvTable t, CsvTable::Open(path));
  PHX_ASSIGN_OR_RETURN(int c_sn, t.RequireColumn("sn"));
  PHX_ASSIGN_OR_RETURN(int c_cpu, t.RequireColumn("cpu_milli"));
  PHX_ASSIGN_OR_RETURN(int c_mem, t.RequireColumn("memory_mib"));
  PHX_ASSIGN_OR_RETURN(int c_gpu, t.RequireColumn("gpu"));
  PHX_ASSIGN_OR_RETURN(int c_model, t.RequireColumn("model"));
  std::vector<NodeRow> out;
  while (t.Next()) {
    NodeRow n;
    n.name = std::string(t.Field(c_sn));
    PHX_ASSIGN_OR_RETURN(n.cpu, t.Int(c_cpu));
    PHX_ASSIGN_OR_RETURN(n.mem, t.Int(c_mem));
    PHX_ASSIGN_OR_RETURN(int64_t g, t.Int(c_gpu));
    n.gpus = static_cast<int>(g);
    n.model = std::string(t.Field(c_model));
    out.push_back(std::move(n));
  }
  return out;
}

Result<std::vector<PodRow>> ReadPods(const std::string& path) {
  PHX_ASSIGN_OR_RETURN(CsvTable t, CsvTable::Open(path));
  PHX_ASSIGN_OR_RETURN(int c_cpu, t.RequireColumn("cpu_milli"));
  PHX_ASSIGN_OR_RETURN(int c_mem, t.RequireColumn("memory_mib"));
  PHX_ASSIGN_OR_RETURN(int c_num, t.RequireColumn("num_gpu"));
  PHX_ASSIGN_OR_RETURN(int c_milli, t.RequireColumn("gpu_milli"));
  const auto c_spec = t.Column("gpu_spec");
  std::vector<PodRow> out;
  while (t.Next()) {
    PodRow p;
    PHX_ASSIGN_OR_RETURN(p.cpu, t.Int(c_cpu));
    PHX_ASSIGN_OR_RETURN(p.mem, t.Int(c_mem));
    PHX_ASSIGN_OR_RETURN(int64_t num, t.Int(c_num));
    PHX_ASSIGN_OR_RETURN(int64_t milli, t.Int(c_milli));
    p.gpus = static_cast<int>(num);
    p.milli = p.gpus == 0 ? 0 : (p.gpus > 1 ? 1000 : static_cast<int>(milli == 0 ? 1000 : milli));
    if (c_spec) {
      std::string spec(t.Field(*c_spec));
      size_t start = 0;
      while (!spec.empty() && start <= spec.size()) {
        size_t bar = spec.find('|', start);
        p.models.push_back(spec.substr(start, bar == std::string::npos ? std::string::npos : bar - start));
        if (bar == std::string::npos) break;
        start = bar + 1;
      }
    }
    out.push_back(std::move(p));
  }
  return out;
}

enum class Scorer { kBestFit, kFgd, kPhalanx };

// FGD's task types carry a CPU demand: on a node without that much free CPU the task
// cannot use any GPU, so all of the node's free GPU capacity counts as fragmented for
// it (the "lacks CPU" case core/placement leaves out, its ledger having no CPU).
struct CpuShape {
  int64_t cpu = 0;
  placement::TaskShape gpu;
};

double CpuAwareFragmentation(std::span<const int> free, int64_t cpu_free, std::span<const CpuShape> shapes) {
  int total = 0;
  for (int f : free) total += f;
  double frag = 0;
  for (const CpuShape& s : shapes)
    frag += s.gpu.popularity * (cpu_free < s.cpu ? total : placement::NodeFragmentationMilli(free, s.gpu));
  return frag;
}

double CpuAwareDelta(std::span<const int> free, int64_t cpu_free, GpuMask gpus, const PodRow& p,
                     std::span<const CpuShape> shapes) {
  std::vector<int> after(free.begin(), free.end());
  for (size_t g = 0; g < after.size(); ++g)
    if (gpus & (GpuMask{1} << g)) after[g] = std::max(0, after[g] - p.milli);
  return CpuAwareFragmentation(after, cpu_free - p.cpu, shapes) - CpuAwareFragmentation(free, cpu_free, shapes);
}

struct Replay {
  ClusterState state{std::vector<std::string>{}};
  std::vector<NodeRow> nodes;
  std::vector<int64_t> cpu_free, mem_free;
  std::vector<std::vector<int>> free_milli;  // per node, per GPU
  int64_t max_cpu = 1, max_gpu_milli = 1;
  int64_t allocated_milli = 0;
  int pod_seq = 0;
};

bool ModelOk(const PodRow& p, const NodeRow& n) {
  return p.models.empty() || std::find(p.models.begin(), p.models.end(), n.model) != p.models.end();
}

void Refresh(Replay& r, NodeIndex n) {
  for (int g = 0; g < r.nodes[static_cast<size_t>(n)].gpus; ++g)
    r.free_milli[static_cast<size_t>(n)][static_cast<size_t>(g)] = r.state.FreeMilli(n, g);
}

// The GPU choice for a pod on a node: a one-bit mask for a share (fullest GPU that fits),
// the lowest free whole GPUs otherwise. 0 if it does not fit.
GpuMask BestFitGpus(const Replay& r, NodeIndex n, const PodRow& p) {
  const auto& free = r.free_milli[static_cast<size_t>(n)];
  if (p.gpus == 1 && p.milli < 1000) {
    int best = -1;
    for (size_t g = 0; g < free.size(); ++g)
      if (free[g] >= p.milli && (best < 0 || free[g] < free[static_cast<size_t>(best)])) best = static_cast<int>(g);
    return best < 0 ? 0 : GpuMask{1} << best;
  }
  GpuMask out = 0;
  int got = 0;
  for (size_t g = 0; g < free.size() && got < p.gpus; ++g)
    if (free[g] == 1000) {
      out |= GpuMask{1} << g;
      ++got;
    }
  return got == p.gpus ? out : 0;
}

double BestFitScore(const Replay& r, NodeIndex n, const PodRow& p) {  // lower is better
  int64_t gpu_free = 0;
  for (int f : r.free_milli[static_cast<size_t>(n)]) gpu_free += f;
  return 0.5 * static_cast<double>(r.cpu_free[static_cast<size_t>(n)] - p.cpu) / static_cast<double>(r.max_cpu) +
         0.5 * static_cast<double>(gpu_free - p.GpuMilli()) / static_cast<double>(r.max_gpu_milli);
}

void Place(Replay& r, NodeIndex n, const PodRow& p, GpuMask gpus) {
  const size_t i = static_cast<size_t>(n);
  r.cpu_free[i] -= p.cpu;
  r.mem_free[i] -= p.mem;
  if (p.gpus == 0) return;
  const PodUid pod(fmt::format("p{}", r.pod_seq++));
  const NodeName& name = r.state.node(n).spec.name;
  Status s = p.milli < 1000 ? r.state.AllocateShare(pod, name, std::countr_zero(gpus), p.milli)
                            : r.state.Allocate(pod, name, gpus);
  if (!s.ok()) {
    fmt::print(stderr, "internal error: {}\n", s.ToString());
    std::exit(1);
  }
  r.allocated_milli += p.GpuMilli();
  Refresh(r, n);
}

void Schedule(Replay& r, const PodRow& p, Scorer scorer, std::span<const CpuShape> shapes, std::mt19937_64& rng) {
  int ties = 0;
  NodeIndex best = placement::kNoNode;
  GpuMask best_gpus = 0;
  double best_score = 0;
  const bool share = p.gpus == 1 && p.milli < 1000;
  for (NodeIndex n = 0; n < static_cast<NodeIndex>(r.nodes.size()); ++n) {
    const size_t i = static_cast<size_t>(n);
    if (r.cpu_free[i] < p.cpu || r.mem_free[i] < p.mem) continue;
    if (p.gpus > 0 && (r.nodes[i].gpus < p.gpus || !ModelOk(p, r.nodes[i]))) continue;
    GpuMask gpus = 0;
    if (p.gpus > 0) {
      gpus = BestFitGpus(r, n, p);
      if (gpus == 0) continue;
    }
    double score = 0;  // lower is better
    if (scorer == Scorer::kBestFit || (p.gpus == 0 && scorer == Scorer::kPhalanx)) {
      // The artifact's integer score (0..100, truncated); equal scores tie.
      score = -std::floor((1.0 - BestFitScore(r, n, p)) * 100);
    } else if (scorer == Scorer::kFgd) {
      const auto& free = r.free_milli[i];
      if (share) {  // every GPU that fits: keep the one growing fragmentation least
        double best_delta = 0;
        for (size_t g = 0; g < free.size(); ++g) {
          if (free[g] < p.milli) continue;
          const double d = CpuAwareDelta(free, r.cpu_free[i], GpuMask{1} << g, p, shapes);
          if (!gpus || d < best_delta) {
            best_delta = d;
            gpus = GpuMask{1} << g;
          }
        }
        score = best_delta;
      } else {
        score = CpuAwareDelta(free, r.cpu_free[i], gpus, p, shapes);
      }
    } else {
      placement::PodRequest req{.gpus = p.gpus, .milli = p.milli};
      auto sc = placement::ScoreNode(r.state, n, req);
      if (!sc.ok()) continue;
      score = -sc->total;
      gpus = sc->gpus;
    }
    // Ties: uniformly at random among the best (kube-scheduler's selectHost).
    if (best == placement::kNoNode || score < best_score) {
      best = n;
      best_score = score;
      best_gpus = gpus;
      ties = 1;
    } else if (score == best_score && std::uniform_int_distribution<int>(0, ties++)(rng) == 0) {
      best = n;
      best_gpus = gpus;
    }
  }
  if (best != placement::kNoNode) Place(r, best, p, best_gpus);
}

// Allocation ratio (%) at each arrived load 0..130 (% of cluster GPU capacity).
std::vector<double> RunOnce(const std::vector<NodeRow>& nodes, const std::vector<PodRow>& pods, uint64_t seed,
                            Scorer scorer) {
  Replay r;
  r.nodes = nodes;
  int64_t capacity = 0;
  for (const NodeRow& n : nodes) {
    placement::NodeSpec spec;
    spec.name = NodeName(n.name);
    spec.pool = n.model;
    spec.gpu_count = n.gpus;
    spec.healthy = placement::AllGpus(n.gpus);
    (void)r.state.AddNode(std::move(spec));
    r.cpu_free.push_back(n.cpu);
    r.mem_free.push_back(n.mem);
    r.free_milli.emplace_back(static_cast<size_t>(n.gpus), 1000);
    r.max_cpu = std::max(r.max_cpu, n.cpu);
    r.max_gpu_milli = std::max<int64_t>(r.max_gpu_milli, n.gpus * 1000);
    capacity += n.gpus * 1000;
  }
  // Inflate to 130% of the GPU capacity by sampling with replacement, then shuffle.
  std::mt19937_64 rng(seed);
  std::vector<PodRow> list = pods;
  int64_t requested = 0;
  for (const PodRow& p : list) requested += p.GpuMilli();
  std::uniform_int_distribution<size_t> pick(0, pods.size() - 1);
  while (requested < capacity * 13 / 10) {
    list.push_back(pods[pick(rng)]);
    requested += list.back().GpuMilli();
  }
  std::shuffle(list.begin(), list.end(), rng);
  std::map<std::tuple<int64_t, int, int>, double> mix;
  for (const PodRow& p : list)
    if (p.gpus > 0) mix[{p.cpu, p.gpus, p.milli}] += 1.0 / static_cast<double>(list.size());
  std::vector<CpuShape> shapes;
  for (const auto& [k, v] : mix)
    shapes.push_back({std::get<0>(k), {.gpus = std::get<1>(k), .milli = std::get<2>(k), .popularity = v}});

  std::vector<double> curve(131, 0);
  int64_t arrived = 0;
  size_t next = 0;
  for (const PodRow& p : list) {
    arrived += p.GpuMilli();
    Schedule(r, p, scorer, shapes, rng);
    while (next <= 130 && arrived * 100 >= static_cast<int64_t>(next) * capacity) {
      curve[next++] = 100.0 * static_cast<double>(r.allocated_milli) / static_cast<double>(capacity);
    }
  }
  while (next <= 130) curve[next++] = 100.0 * static_cast<double>(r.allocated_milli) / static_cast<double>(capacity);
  return curve;
}

// Mean of the artifact's allocation curves for one policy on the default list.
Result<std::vector<double>> Expected(const std::string& path, const std::string& policy) {
  PHX_ASSIGN_OR_RETURN(CsvTable t, CsvTable::Open(path));
  PHX_ASSIGN_OR_RETURN(int c_w, t.RequireColumn("workload"));
  PHX_ASSIGN_OR_RETURN(int c_p, t.RequireColumn("sc_policy"));
  std::vector<double> sum(131, 0);
  int n = 0;
  while (t.Next()) {
    if (t.Field(c_w) != "openb_pod_list_default" || t.Field(c_p) != policy) continue;
    for (int k = 0; k <= 130; ++k) {
      PHX_ASSIGN_OR_RETURN(int col, t.RequireColumn(std::to_string(k)));
      PHX_ASSIGN_OR_RETURN(double v, t.Double(col));
      sum[static_cast<size_t>(k)] += v;
    }
    ++n;
  }
  for (double& v : sum) v /= std::max(1, n);
  return sum;
}

int Main(int argc, char** argv) {
  std::filesystem::path traces;
  if (const char* env = std::getenv("PHALANX_SHARED_DIR")) traces = std::filesystem::path(env) / "traces";
  else traces = std::filesystem::path(PHALANX_SOURCE_DIR) / ".." / "shared" / "traces";
  int seeds = 10;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--traces") traces = argv[i + 1];
    else if (a == "--seeds") seeds = std::atoi(argv[i + 1]);
  }
  const auto openb = traces / "alibaba-gpu-v2023-openb";
  const auto expected_path = traces / "fgd-simulator-expected-results/analysis_allo_discrete.csv";
  if (!std::filesystem::exists(openb) || !std::filesystem::exists(expected_path)) {
    fmt::print("FGD validation skipped: {} or {} is absent (set PHALANX_SHARED_DIR or --traces).\n", openb.string(),
               expected_path.string());
    return 0;
  }
  auto nodes = ReadNodes((openb / "openb_node_list_gpu_node.csv").string());
  auto pods = ReadPods((openb / "openb_pod_list_default.csv").string());
  auto best_fit_ref = Expected(expected_path.string(), "05-BestFit");
  auto fgd_ref = Expected(expected_path.string(), "06-FGD");
  if (!nodes.ok() || !pods.ok() || !best_fit_ref.ok() || !fgd_ref.ok()) {
    fmt::print(stderr, "cannot read inputs\n");
    return 1;
  }
  const std::vector<std::pair<std::string, Scorer>> scorers = {
      {"best-fit", Scorer::kBestFit}, {"fgd", Scorer::kFgd}, {"phalanx", Scorer::kPhalanx}};
  std::map<std::string, std::vector<double>> mean;
  for (const auto& [name, scorer] : scorers) {
    std::vector<double> sum(131, 0);
    const auto t0 = std::chrono::steady_clock::now();
    for (int s = 0; s < seeds; ++s) {
      auto c = RunOnce(*nodes, *pods, 42 + static_cast<uint64_t>(s), scorer);
      for (size_t k = 0; k < sum.size(); ++k) sum[k] += c[k] / seeds;
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    fmt::print(stderr, "{}: {} seeds in {:.1f} s\n", name, seeds, secs);
    mean[name] = sum;
  }
  fmt::print("GPU allocation (% of {} GPUs) vs arrived GPU request (% of capacity), openb default pod list, "
             "mean of {} seeds\n\n",
             6212, seeds);
  fmt::print("| arrived | artifact BestFit | artifact FGD | best-fit (ours) | fgd (ours) | phalanx (ours) |\n");
  fmt::print("|---:|---:|---:|---:|---:|---:|\n");
  for (int k : {50, 80, 90, 100, 110, 120, 130}) {
    const size_t i = static_cast<size_t>(k);
    fmt::print("| {}% | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} |\n", k, (*best_fit_ref)[i], (*fgd_ref)[i],
               mean["best-fit"][i], mean["fgd"][i], mean["phalanx"][i]);
  }
  return 0;
}

}  // namespace
}  // namespace phalanx::sim

int main(int argc, char** argv) { return phalanx::sim::Main(argc, argv); }
