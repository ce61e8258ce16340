// `phalanx topology`: a node's GPU topology as a table like `nvidia-smi topo -m`, plus MIG
// slices and the best GPU set for each request size (the device plugin's choice).
// Source: a `phalanx.io/gpu-topology` annotation document (--file, "-" = stdin), e.g.
//   kubectl get node gpu-1 -o jsonpath='{.metadata.annotations.phalanx\.io/gpu-topology}' | phalanx topology --file -
// or this machine through NVML (--nvml-library PATH, default the driver's libnvidia-ml.so.1
// when --file is not given; the device plugin's binding and mapping, so it shows exactly what
// the plugin would publish).
#include <bit>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include <fmt/format.h>

#include "cli/commands.h"
#include "core/placement/device_set.h"
#include "core/placement/topology_bandwidth.h"
#include "core/topology/render_matrix.h"
#include "core/topology/topology_codec.h"
#include "device-plugin/plugin/node_topology_reader.h"

namespace phalanx::cli {
namespace {

// What the NVIDIA driver installs on every GPU node (the device plugin's default too).
constexpr const char* kSystemNvmlLibrary = "libnvidia-ml.so.1";

struct TopologyFlags {
  std::string file;
  std::string nvml_library;
  bool json = false;
};

Result<std::string> ReadInput(const std::string& path) {
  if (path == "-") {
    return std::string(std::istreambuf_iterator<char>(std::cin), {});
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(fmt::format("cannot open {}", path));
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// For k = 1..N: the set the device plugin would pick on an idle node and its ring speed.
std::string RenderBestSets(const topology::NodeTopology& node) {
  placement::BandwidthMatrix bw = placement::BandwidthFromTopology(node);
  const int n = bw.size();
  // Whole-GPU requests can use healthy GPUs that are not partitioned into MIG slices.
  const placement::GpuMask whole = placement::WholeGpuMask(node);
  const int usable = std::popcount(whole);
  std::string out = fmt::format(
      "Best whole-GPU sets on an idle node ({} of {} GPUs usable; ring all-reduce bottleneck):\n", usable, n);
  for (int k = 1; k <= usable; ++k) {
    auto choice = placement::ChooseDeviceSet(bw, {.count = k, .available = whole});
    if (!choice.ok()) {
      out += fmt::format("  {:>2} GPUs: {}\n", k, choice.status().ToString());
      continue;
    }
    std::string ring = k == 1 ? "-" : fmt::format("{:g} GB/s", choice->ring_bandwidth_gbps);
    out += fmt::format("  {:>2} GPUs: [{}]  ring {}\n", k, fmt::join(choice->gpus, ","), ring);
  }
  return out;
}

Result<topology::NodeTopology> LoadTopology(const TopologyFlags& flags) {
  if (flags.file.empty() && flags.nvml_library.empty()) {
    // No source named: this machine through the system's NVML, so `phalanx topology` just
    // works on a GPU node; elsewhere say what to do instead.
    auto node = device_plugin::ReadNodeTopology(kSystemNvmlLibrary);
    if (!node.ok()) {
      return node.status().WithContext(fmt::format(
          "no --file given and this machine's NVML ({}) is not usable; run on a GPU node with the NVIDIA "
          "driver, pass --nvml-library PATH, or --file a phalanx.io/gpu-topology document",
          kSystemNvmlLibrary));
    }
    return node;
  }
  if (!flags.nvml_library.empty()) {
    auto node = device_plugin::ReadNodeTopology(flags.nvml_library);
    if (!node.ok()) return node.status().WithContext(fmt::format("--nvml-library {}", flags.nvml_library));
    return node;
  }
  PHX_ASSIGN_OR_RETURN(std::string text, ReadInput(flags.file));
  auto node = topology::DecodeTopology(text);
  if (!node.ok()) return node.status().WithContext(flags.file);
  return node;
}

int RunTopology(const TopologyFlags& flags) {
  auto node = LoadTopology(flags);
  if (!node.ok()) {
    std::cerr << "phalanx topology: " << node.status().message() << "\n";
    return 1;
  }
  if (flags.json) {
    std::cout << *topology::EncodeTopology(*node) << "\n";
    return 0;
  }
  std::cout << topology::RenderMatrix(*node) << "\n" << RenderBestSets(*node);
  return 0;
}

}  // namespace

void RegisterTopologyCommand(CommandRegistry& registry) {
  auto flags = std::make_shared<TopologyFlags>();
  registry.Add({
      .name = "topology",
      .description = "Show a node's GPU topology (links, NUMA, MIG) and the best GPU sets",
      .configure =
          [flags](CLI::App& app) {
            auto* file = app.add_option("--file", flags->file,
                                        "A phalanx.io/gpu-topology annotation document ('-' reads stdin)");
            auto* nvml = app.add_option("--nvml-library", flags->nvml_library,
                                        "Read this machine through this NVML library (default without --file: libnvidia-ml.so.1)");
            file->excludes(nvml);
            app.add_flag("--json", flags->json, "Print the validated document as JSON instead of tables");
          },
      .run = [flags] { return RunTopology(*flags); },
  });
}

}  // namespace phalanx::cli
