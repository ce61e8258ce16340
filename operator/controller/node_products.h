// NodeProducts: the phalanx.io/gpu.product label of a node, for pricing a pod's GPU-hours
// (operator/cost/price_table.h). Read with GET nodes/<name> the first time a node is asked
// for and cached for `ttl` to 1.5 `ttl` (a node's GPU model does not change while it lives): no node watch,
// whose traffic at thousands of nodes (gpu-state updates) would dwarf what the operator needs.
// A failed read ("" = the table's default price) is retried after `retry`. Thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "core/base/clock.h"
#include "core/kube/client.h"

namespace phalanx::op {

inline constexpr std::string_view kLabelGpuProduct = "phalanx.io/gpu.product";

class NodeProducts {
 public:
  NodeProducts(kube::KubeClient& client, const Clock& clock, Duration ttl = std::chrono::hours(1),
               Duration retry = std::chrono::minutes(1))
      : client_(client), clock_(clock), ttl_(ttl), retry_(retry) {}

  // "" when the node has no such label, is gone, or cannot be read.
  std::string Product(const std::string& node);
  size_t reads() const {
    std::lock_guard lock(mu_);
    return reads_;
  }

 private:
  struct Entry {
    std::string product;
    std::chrono::steady_clock::time_point expires;
  };
  kube::KubeClient& client_;
  const Clock& clock_;
  const Duration ttl_, retry_;
  mutable std::mutex mu_;
  std::map<std::string, Entry> cache_;  // guarded by mu_
  size_t reads_ = 0;                    // guarded by mu_
};

}  // namespace phalanx::op
