// Test fixtures for core/placement: fluent node builders (STYLE §2.6,
// `MakeNode("n1").Gpus(8).NvSwitch().Rack("r1").Build()`), standard machine shapes and
// mask helpers. Header-only; test code only.
#pragma once

#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "core/placement/cluster_state.h"

namespace phalanx::placement::testing {

inline const std::string kHostname = "kubernetes.io/hostname";
inline const std::string kNvlinkDomain = "phalanx.io/nvlink-domain";
inline const std::string kRack = "topology.kubernetes.io/rack";
inline const std::string kZone = "topology.kubernetes.io/zone";
// The levels every test state uses, lowest first.
inline std::vector<std::string> StandardLevels() { return {kHostname, kNvlinkDomain, kRack, kZone}; }

constexpr double kNvSwitchGbps = 450;
constexpr double kNv4Gbps = 100;
constexpr double kSysGbps = 10;

inline GpuMask Mask(std::initializer_list<int> gpus) {
  GpuMask m = 0;
  for (int g : gpus) m |= GpuMask{1} << g;
  return m;
}

// All-to-all NVSwitch box, one shared matrix per size (as the ledger shares them).
inline std::shared_ptr<const BandwidthMatrix> NvSwitchMatrix(int n) {
  auto bw = std::make_shared<BandwidthMatrix>(n);
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) bw->Set(i, j, kNvSwitchGbps);
  return bw;
}

// 4 GPUs: NVLink bridges 0-1 and 2-3, everything else across the SMP interconnect.
inline std::shared_ptr<const BandwidthMatrix> PcieFourMatrix() {
  auto bw = std::make_shared<BandwidthMatrix>(4);
  bw->Set(0, 1, kNv4Gbps);
  bw->Set(2, 3, kNv4Gbps);
  for (int a : {0, 1})
    for (int b : {2, 3}) bw->Set(a, b, kSysGbps);
  return bw;
}

class NodeBuilder {
 public:
  explicit NodeBuilder(std::string name) {
    spec_.name = NodeName(name);
    spec_.domains.assign(4, "");
    spec_.domains[0] = std::move(name);
    Gpus(8);
  }
  NodeBuilder& Gpus(int n) {
    spec_.gpu_count = n;
    spec_.healthy = AllGpus(n);
    if (spec_.bandwidth && spec_.bandwidth->size() != n) spec_.bandwidth.reset();
    return *this;
  }
  NodeBuilder& NvSwitch() {
    spec_.bandwidth = NvSwitchMatrix(spec_.gpu_count);
    return *this;
  }
  NodeBuilder& PcieFour() {
    spec_.gpu_count = 4;
    spec_.healthy = AllGpus(4);
    spec_.bandwidth = PcieFourMatrix();
    return *this;
  }
  NodeBuilder& Topology(std::shared_ptr<const BandwidthMatrix> bw) {
    spec_.bandwidth = std::move(bw);
    return *this;
  }
  NodeBuilder& Pool(std::string pool) {
    spec_.pool = std::move(pool);
    return *this;
  }
  NodeBuilder& NvlinkDomain(std::string d) {
    spec_.domains[1] = std::move(d);
    return *this;
  }
  NodeBuilder& Rack(std::string r) {
    spec_.domains[2] = std::move(r);
    return *this;
  }
  NodeBuilder& Zone(std::string z) {
    spec_.domains[3] = std::move(z);
    return *this;
  }
  NodeBuilder& Unhealthy(std::initializer_list<int> gpus) {
    spec_.healthy &= ~Mask(gpus);
    return *this;
  }
  NodeBuilder& Cordoned() {
    spec_.schedulable = false;
    return *this;
  }
  NodeSpec Build() const { return spec_; }

 private:
  NodeSpec spec_;
};

// "<prefix><i>" (appending avoids a g++ 12 -Wrestrict false positive of "x" + string).
inline std::string Numbered(std::string_view prefix, long i) {
  std::string s(prefix);
  s += std::to_string(i);
  return s;
}

inline NodeBuilder MakeNode(std::string name) { return NodeBuilder(std::move(name)); }

// Adds `n` NVSwitch nodes "<prefix>0".."<prefix>n-1" of `gpus` GPUs in `rack`.
inline void AddRack(ClusterState& state, const std::string& prefix, int n, const std::string& rack, int gpus = 8,
                    const std::string& pool = "H100") {
  for (int i = 0; i < n; ++i) {
    auto r = state.AddNode(MakeNode(Numbered(prefix, i)).Gpus(gpus).NvSwitch().Rack(rack).Pool(pool).Build());
    ASSERT_TRUE(r.ok()) << r.status();
  }
}

inline NodeIndex Idx(const ClusterState& state, const std::string& name) { return *state.FindNode(NodeName(name)); }

}  // namespace phalanx::placement::testing
