#include "core/topology/render_matrix.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace phalanx::topology {
namespace {

using Table = std::vector<std::vector<std::string>>;

// Left-aligned columns two spaces apart, each row indented by two; the last cell of a
// row is not padded so lines carry no trailing spaces.
void AppendTable(std::string& out, const Table& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  for (const auto& row : rows) {
    std::string line = "  ";
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line.append(widths[c] - row[c].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line;
    out += '\n';
  }
}

std::string OrDash(const std::string& s) { return s.empty() ? "-" : s; }

void AppendGpus(std::string& out, const NodeTopology& t) {
  Table rows = {{"GPU", "UUID", "Product", "Memory", "NUMA", "PCI bus id", "NVLink rate", "MIG", "Health"}};
  for (const Gpu& gpu : t.gpus) {
    rows.push_back({
        fmt::format("{}", gpu.index),
        gpu.uuid.str(),
        gpu.product,
        fmt::format("{} MiB", gpu.memory_mib),
        gpu.numa_node ? fmt::format("{}", *gpu.numa_node) : "N/A",
        OrDash(gpu.pci_bus_id),
        gpu.nvlink_gbps_per_link > 0 ? fmt::format("{} GB/s", gpu.nvlink_gbps_per_link) : "-",
        gpu.mig_enabled ? "on" : "off",
        gpu.health == Health::kHealthy ? "Healthy" : fmt::format("Unhealthy ({})", OrDash(gpu.health_reason)),
    });
  }
  out += "GPUs:\n";
  AppendTable(out, rows);
}

std::vector<std::string> GpuHeader(const NodeTopology& t) {
  std::vector<std::string> header = {""};
  for (int j = 0; j < t.gpu_count(); ++j) header.push_back(fmt::format("GPU{}", j));
  return header;
}

void AppendLinks(std::string& out, const NodeTopology& t) {
  Table rows = {GpuHeader(t)};
  rows[0].push_back("NUMA Affinity");
  for (int i = 0; i < t.gpu_count(); ++i) {
    std::vector<std::string> row = {fmt::format("GPU{}", i)};
    for (int j = 0; j < t.links.size(); ++j) row.push_back(t.links.at(i, j).Token());
    const Gpu& gpu = t.gpus[static_cast<size_t>(i)];
    row.push_back(gpu.numa_node ? fmt::format("{}", *gpu.numa_node) : "N/A");
    rows.push_back(std::move(row));
  }
  out += "\nLinks:\n";
  AppendTable(out, rows);
}

void AppendBandwidth(std::string& out, const NodeTopology& t) {
  Table rows = {GpuHeader(t)};
  for (int i = 0; i < t.gpu_count(); ++i) {
    std::vector<std::string> row = {fmt::format("GPU{}", i)};
    for (int j = 0; j < t.links.size(); ++j) {
      row.push_back(i == j ? "-" : fmt::format("{}", t.Bandwidth(i, j)));
    }
    rows.push_back(std::move(row));
  }
  out += fmt::format("\nBandwidth (GB/s per direction, nominal; NVLink all-to-all: {}):\n",
                     t.IsNvlinkAllToAll() ? "yes" : "no");
  AppendTable(out, rows);
}

void AppendLegend(std::string& out) {
  out += "\nLegend:\n";
  AppendTable(
      out,
      {
          {"X", "=", "the GPU itself"},
          {"NV#", "=", "a bond of # NVLinks (# x the per-link rate of the slower GPU)"},
          {"PIX", "=", fmt::format("PCIe through at most one switch ({} GB/s)", kPixGbps)},
          {"PXB", "=", fmt::format("PCIe through several switches, not a host bridge ({} GB/s)", kPxbGbps)},
          {"PHB", "=", fmt::format("PCIe through a CPU host bridge ({} GB/s)", kPhbGbps)},
          {"NODE", "=", fmt::format("PCIe between host bridges of one NUMA node ({} GB/s)", kNodeGbps)},
          {"SYS", "=", fmt::format("PCIe and the interconnect between NUMA nodes ({} GB/s)", kSysGbps)},
      });
}

void AppendMig(std::string& out, const NodeTopology& t) {
  if (t.MigDeviceCount() == 0) {
    out += "\nMIG devices: none\n";
    return;
  }
  Table rows = {{"GPU", "Profile", "GI", "CI", "Slices", "Memory", "UUID"}};
  for (const Gpu& gpu : t.gpus) {
    for (const MigDevice& mig : gpu.mig_devices) {
      rows.push_back({
          fmt::format("{}", gpu.index),
          mig.profile,
          fmt::format("{}", mig.gpu_instance_id),
          fmt::format("{}", mig.compute_instance_id),
          fmt::format("{}-{}", mig.placement_start, mig.placement_start + mig.placement_size - 1),
          fmt::format("{} MiB", mig.memory_mib),
          mig.uuid.str(),
      });
    }
  }
  out += "\nMIG devices:\n";
  AppendTable(out, rows);
}

}  // namespace

std::string RenderMatrix(const NodeTopology& t) {
  std::string out = fmt::format("Node: {} GPUs, driver {}, CUDA {}, NVLink domain {}\n\n", t.gpu_count(),
                                OrDash(t.driver_version), OrDash(t.cuda_version), OrDash(t.nvlink_domain));
  AppendGpus(out, t);
  // Render what we can of an invalid model (mismatched matrix) rather than reading past it.
  if (t.links.size() == t.gpu_count()) {
    AppendLinks(out, t);
    AppendBandwidth(out, t);
  } else {
    out +=
        fmt::format("\nLinks: matrix is {}x{} for {} GPUs\n", t.links.size(), t.links.size(), t.gpu_count());
  }
  AppendLegend(out);
  AppendMig(out, t);
  return out;
}

}  // namespace phalanx::topology
