// Link: how two GPUs of one node reach each other, in nvidia-smi's `topo -m` vocabulary.
//
// A link is either NVLink (a bonded set of N links, token "NV<N>") or a PCIe path level:
//   PIX   through at most one PCIe switch
//   PXB   through several PCIe switches, without the host bridge
//   PHB   through a PCIe host bridge (the CPU root complex)
//   NODE  between host bridges of one NUMA node
//   SYS   across NUMA nodes (the SMP interconnect: UPI, xGMI, ...)
// and "X" is a GPU's link to itself (the matrix diagonal only).
//
// Bandwidths are nominal per-direction figures used to rank GPU sets, not measurements
// (docs/contracts/gpu-topology.md §Bandwidth). PCIe figures assume Gen4 x16 (≈ 25 GB/s
// effective); NVLink bandwidth = link count × the GPUs' per-link rate.
//
// Value type; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/base/result.h"

namespace phalanx::topology {

enum class LinkKind : uint8_t {
  kSelf,    // "X": the diagonal
  kNvlink,  // "NV<n>"
  kPix,
  kPxb,
  kPhb,
  kNode,
  kSys,
};

// Largest "NV<n>" accepted. NVSwitch GPUs report 18 today; the cap only rejects garbage.
inline constexpr int kMaxNvlinksPerPair = 64;

// Nominal effective PCIe bandwidth per direction, GB/s, for each level (Gen4 x16 ≈ 25 GB/s
// effective through one switch; each extra hop through bridges, host bridges and the
// SMP interconnect costs peer-to-peer throughput, and P2P across sockets often falls
// back to staging through host memory).
inline constexpr double kPixGbps = 25.0;
inline constexpr double kPxbGbps = 22.0;
inline constexpr double kPhbGbps = 20.0;
inline constexpr double kNodeGbps = 16.0;
inline constexpr double kSysGbps = 10.0;
// Per-link NVLink rate assumed when a GPU does not say (NVLink 2, 3 and 4 all run
// 25 GB/s per link per direction).
inline constexpr double kDefaultNvlinkGbpsPerLink = 25.0;

class Link {
 public:
  // The diagonal.
  static constexpr Link Self() { return Link(LinkKind::kSelf, 0); }
  // `count` bonded NVLinks; 1 <= count <= kMaxNvlinksPerPair (asserted).
  static Link Nvlink(int count);
  // A PCIe level; `kind` must be one of kPix..kSys (asserted).
  static Link Pcie(LinkKind kind);

  // Default: the weakest real link, so an unset matrix cell never looks better than it is.
  constexpr Link() = default;

  LinkKind kind() const { return kind_; }
  // Number of bonded NVLinks; 0 unless kind() == kNvlink.
  int nvlinks() const { return nvlinks_; }
  bool is_nvlink() const { return kind_ == LinkKind::kNvlink; }
  bool is_self() const { return kind_ == LinkKind::kSelf; }

  // "X", "NV18", "PIX", "PXB", "PHB", "NODE", "SYS".
  std::string Token() const;

  friend bool operator==(const Link&, const Link&) = default;

 private:
  constexpr Link(LinkKind kind, int nvlinks) : kind_(kind), nvlinks_(nvlinks) {}

  LinkKind kind_ = LinkKind::kSys;
  int nvlinks_ = 0;
};

// Parses a matrix token. InvalidArgument with a message naming the token (no path: the
// caller prefixes its JSON path), e.g. `unknown link token "NV0"`.
Result<Link> ParseLinkToken(std::string_view token);

// Nominal per-direction GB/s of a PCIe level (the k*Gbps constants above); 0 for kSelf
// and kNvlink, whose bandwidth depends on the GPUs (see NodeTopology::Bandwidth).
double PcieBandwidth(LinkKind kind);

// Per-link per-direction GB/s for an NVLink version as NVML reports it
// (nvmlDeviceGetNvLinkVersion: 1 = P100 20, 2 = V100 25, 3 = A100 25, 4 = H100 25,
// 5 = B200 50); 0 for an unknown version. Consumer NVLink bridges (e.g. RTX A6000,
// 14.0625 GB/s per link) run slower than their version suggests: writers that know the
// product should publish the real rate.
double NvlinkGbpsPerLinkForVersion(int nvlink_version);

}  // namespace phalanx::topology
