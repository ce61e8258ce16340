#include "operator/controller/node_products.h"

#include <functional>

#include "core/kube/resource.h"

namespace phalanx::op {

std::string NodeProducts::Product(const std::string& node) {
  if (node.empty()) return "";
  const auto now = clock_.Now();
  {
    std::lock_guard lock(mu_);
    auto it = cache_.find(node);
    if (it != cache_.end() && now < it->second.expires) return it->second.product;
  }
  // Read outside the lock: two workers may read the same node once each, never block each other.
  auto got = client_.Get(kube::resources::kNodes, "", node);
  Entry e{"", now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(retry_)};
  if (got.ok()) {
    // Spread re-reads over [ttl, 1.5 ttl) by node name, so the nodes first read together at start
    // (thousands after a restart) are not all read again in the same minute an hour later.
    const auto spread = ttl_ * static_cast<int64_t>(std::hash<std::string>{}(node) % 512) / 1024;
    e.expires = now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(ttl_ + spread);
    const json::Json* meta = json::Member(*got, "metadata");
    const json::Json* labels = meta != nullptr ? json::Member(*meta, "labels") : nullptr;
    const json::Json* product = labels != nullptr ? json::Member(*labels, kLabelGpuProduct) : nullptr;
    if (product != nullptr && product->is_string()) e.product = product->get<std::string>();
  }
  std::lock_guard lock(mu_);
  ++reads_;
  cache_[node] = e;
  return e.product;
}

}  // namespace phalanx::op
