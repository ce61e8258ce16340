// ClusterState: nodes and the incremental indexes (holdings are in
// cluster_state_holdings.cc).
#include "core/placement/cluster_state.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cassert>

#include <fmt/format.h>

namespace phalanx::placement {
namespace {

template <typename T>
void SwapRemove(std::vector<T>& v, size_t pos) {
  v[pos] = std::move(v.back());
  v.pop_back();
}

}  // namespace

int GpuCount(GpuMask mask) { return std::popcount(mask); }

std::vector<int> GpuList(GpuMask mask) {
  std::vector<int> out;
  out.reserve(static_cast<size_t>(std::popcount(mask)));
  while (mask) {
    out.push_back(std::countr_zero(mask));
    mask &= mask - 1;
  }
  return out;
}

GpuMask AllGpus(int n) {
  if (n <= 0) return 0;
  return n >= 64 ? ~GpuMask{0} : (GpuMask{1} << n) - 1;
}

const DomainPoolSlice* DomainInfo::Slice(PoolId pool) const {
  for (const DomainPoolSlice& s : by_pool)
    if (s.pool == pool) return &s;
  return nullptr;
}

uint64_t StateStamp::Next() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

ClusterState::ClusterState(std::vector<std::string> levels)
    : levels_(std::move(levels)), domains_(levels_.size()), domain_ids_(levels_.size()) {}

ClusterState::ClusterState(const ClusterState& other)
    : levels_(other.levels_),
      nodes_(other.nodes_),
      slots_(other.slots_),
      live_(other.live_),
      free_slots_(other.free_slots_),
      by_name_(other.by_name_),
      name_index_(other.name_index_),
      pods_(other.pods_),
      plans_(other.plans_),
      pools_(other.pools_),
      pool_ids_(other.pool_ids_),
      domains_(other.domains_),
      domain_ids_(other.domain_ids_),
      free_gpus_(other.free_gpus_),
      total_gpus_(other.total_gpus_),
      stamp_(other.stamp_) {
  RebindPods();
}

ClusterState& ClusterState::operator=(const ClusterState& other) {
  if (this != &other) {
    ClusterState copy(other);
    *this = std::move(copy);
  }
  return *this;
}

// Moving an unordered_map keeps its elements in place, so NodeState::pods stays valid.
ClusterState::ClusterState(ClusterState&&) noexcept = default;
ClusterState& ClusterState::operator=(ClusterState&&) noexcept = default;
ClusterState::~ClusterState() = default;

void ClusterState::RebindPods() {
  for (NodeState& n : nodes_) n.pods.clear();
  for (const auto& [uid, alloc] : pods_) nodes_[static_cast<size_t>(alloc.node)].pods.push_back(&alloc);
}

int ClusterState::LevelIndex(std::string_view key) const {
  for (size_t i = 0; i < levels_.size(); ++i)
    if (levels_[i] == key) return static_cast<int>(i);
  return -1;
}

Status ClusterState::ValidateSpec(const NodeSpec& spec) const {
  if (spec.name.empty()) return InvalidArgumentError("node name is empty");
  if (spec.gpu_count < 0 || spec.gpu_count > kMaxGpusPerNode) {
    return InvalidArgumentError(fmt::format("node {}: {} GPUs; supported: 0..{}", spec.name.str(),
                                            spec.gpu_count, kMaxGpusPerNode));
  }
  if (spec.healthy & ~AllGpus(spec.gpu_count)) {
    return InvalidArgumentError(fmt::format("node {}: healthy mask has GPUs beyond its {} GPUs",
                                            spec.name.str(), spec.gpu_count));
  }
  if (spec.mig & ~AllGpus(spec.gpu_count)) {
    return InvalidArgumentError(fmt::format("node {}: MIG mask has GPUs beyond its {} GPUs",
                                            spec.name.str(), spec.gpu_count));
  }
  if (spec.bandwidth && spec.bandwidth->size() != spec.gpu_count) {
    return InvalidArgumentError(fmt::format("node {}: topology matrix is {}x{} for {} GPUs", spec.name.str(),
                                            spec.bandwidth->size(), spec.bandwidth->size(), spec.gpu_count));
  }
  if (spec.domains.size() > levels_.size()) {
    return InvalidArgumentError(fmt::format("node {}: {} domain values for {} configured levels",
                                            spec.name.str(), spec.domains.size(), levels_.size()));
  }
  return OkStatus();
}

PoolId ClusterState::InternPool(const std::string& name) {
  auto [it, inserted] = pool_ids_.try_emplace(name, static_cast<PoolId>(pools_.size()));
  if (inserted) {
    pools_.emplace_back();
    pools_.back().name = name;
  }
  return it->second;
}

DomainId ClusterState::InternDomain(int level, const std::string& value) {
  auto& ids = domain_ids_[static_cast<size_t>(level)];
  auto& list = domains_[static_cast<size_t>(level)];
  auto [it, inserted] = ids.try_emplace(value, static_cast<DomainId>(list.size()));
  if (inserted) {
    list.emplace_back();
    list.back().level = level;
    list.back().value = value;
  }
  return it->second;
}

DomainPoolSlice& ClusterState::SliceFor(int level, DomainId id, PoolId pool) {
  DomainInfo& d = domains_[static_cast<size_t>(level)][static_cast<size_t>(id)];
  for (DomainPoolSlice& s : d.by_pool)
    if (s.pool == pool) return s;
  d.by_pool.emplace_back();
  d.by_pool.back().pool = pool;
  return d.by_pool.back();
}

void ClusterState::AddCounts(NodeIndex i) {
  NodeState& n = nodes_[static_cast<size_t>(i)];
  SlotIndex& slot = slots_[static_cast<size_t>(i)];
  n.free = n.spec.schedulable ? (WholeGpus(n.spec) & ~(n.allocated | n.shared | n.reserved)) : 0;
  const int f = std::popcount(n.free);
  const int t = n.spec.schedulable ? std::popcount(WholeGpus(n.spec)) : 0;
  slot.indexed_free = f;
  slot.indexed_total = t;
  free_gpus_ += f;
  total_gpus_ += t;
  PoolInfo& pool = pools_[static_cast<size_t>(n.pool)];
  pool.free_gpus += f;
  pool.total_gpus += t;
  auto& bucket = pool.buckets[static_cast<size_t>(f)];
  slot.bucket_pos = static_cast<int32_t>(bucket.size());
  bucket.push_back(i);
  for (size_t l = 0; l < levels_.size(); ++l) {
    if (n.domains[l] == kNoDomain) continue;
    DomainPoolSlice& s = SliceFor(static_cast<int>(l), n.domains[l], n.pool);
    s.free_gpus += f;
    s.total_gpus += t;
    ++s.free_hist[static_cast<size_t>(f)];
  }
}

void ClusterState::RemoveCounts(NodeIndex i) {
  NodeState& n = nodes_[static_cast<size_t>(i)];
  SlotIndex& slot = slots_[static_cast<size_t>(i)];
  const int f = slot.indexed_free;
  const int t = slot.indexed_total;
  free_gpus_ -= f;
  total_gpus_ -= t;
  PoolInfo& pool = pools_[static_cast<size_t>(n.pool)];
  pool.free_gpus -= f;
  pool.total_gpus -= t;
  auto& bucket = pool.buckets[static_cast<size_t>(f)];
  const auto pos = static_cast<size_t>(slot.bucket_pos);
  assert(pos < bucket.size() && bucket[pos] == i);
  slots_[static_cast<size_t>(bucket.back())].bucket_pos = static_cast<int32_t>(pos);
  SwapRemove(bucket, pos);
  slot.bucket_pos = -1;
  for (size_t l = 0; l < levels_.size(); ++l) {
    if (n.domains[l] == kNoDomain) continue;
    DomainPoolSlice& s = SliceFor(static_cast<int>(l), n.domains[l], n.pool);
    s.free_gpus -= f;
    s.total_gpus -= t;
    --s.free_hist[static_cast<size_t>(f)];
  }
  slot.indexed_free = slot.indexed_total = 0;
}

void ClusterState::Recount(NodeIndex i) {
  RemoveCounts(i);
  AddCounts(i);
}

void ClusterState::Attach(NodeIndex i) {
  NodeState& n = nodes_[static_cast<size_t>(i)];
  SlotIndex& slot = slots_[static_cast<size_t>(i)];
  n.pool = InternPool(n.spec.pool);
  PoolInfo& pool = pools_[static_cast<size_t>(n.pool)];
  slot.pool_pos = static_cast<int32_t>(pool.nodes.size());
  pool.nodes.push_back(i);
  n.domains.assign(levels_.size(), kNoDomain);
  slot.domain_pos.assign(levels_.size(), -1);
  for (size_t l = 0; l < levels_.size(); ++l) {
    if (l >= n.spec.domains.size() || n.spec.domains[l].empty()) continue;
    const DomainId id = InternDomain(static_cast<int>(l), n.spec.domains[l]);
    n.domains[l] = id;
    DomainInfo& d = domains_[l][static_cast<size_t>(id)];
    slot.domain_pos[l] = static_cast<int32_t>(d.nodes.size());
    d.nodes.push_back(i);
    ++SliceFor(static_cast<int>(l), id, n.pool).nodes;
  }
  AddCounts(i);
}

void ClusterState::Detach(NodeIndex i) {
  RemoveCounts(i);
  NodeState& n = nodes_[static_cast<size_t>(i)];
  SlotIndex& slot = slots_[static_cast<size_t>(i)];
  PoolInfo& pool = pools_[static_cast<size_t>(n.pool)];
  const auto ppos = static_cast<size_t>(slot.pool_pos);
  slots_[static_cast<size_t>(pool.nodes.back())].pool_pos = static_cast<int32_t>(ppos);
  SwapRemove(pool.nodes, ppos);
  for (size_t l = 0; l < levels_.size(); ++l) {
    if (n.domains[l] == kNoDomain) continue;
    DomainInfo& d = domains_[l][static_cast<size_t>(n.domains[l])];
    const auto dpos = static_cast<size_t>(slot.domain_pos[l]);
    slots_[static_cast<size_t>(d.nodes.back())].domain_pos[l] = static_cast<int32_t>(dpos);
    SwapRemove(d.nodes, dpos);
    --SliceFor(static_cast<int>(l), n.domains[l], n.pool).nodes;
  }
  slot.pool_pos = -1;
  n.domains.clear();
  n.pool = kNoPool;
}

Result<NodeIndex> ClusterState::AddNode(NodeSpec spec) {
  stamp_.Renew();
  PHX_RETURN_IF_ERROR(ValidateSpec(spec));
  if (by_name_.contains(spec.name)) {
    return AlreadyExistsError(fmt::format("node {} already exists", spec.name.str()));
  }
  NodeIndex i;
  if (!free_slots_.empty()) {
    i = free_slots_.back();
    free_slots_.pop_back();
    nodes_[static_cast<size_t>(i)] = NodeState{};
    slots_[static_cast<size_t>(i)] = SlotIndex{};
  } else {
    i = static_cast<NodeIndex>(nodes_.size());
    nodes_.emplace_back();
    slots_.emplace_back();
  }
  by_name_.emplace(spec.name, i);
  name_index_.Insert(spec.name.str(), i);
  nodes_[static_cast<size_t>(i)].spec = std::move(spec);
  slots_[static_cast<size_t>(i)].live_pos = static_cast<int32_t>(live_.size());
  live_.push_back(i);
  Attach(i);
  return i;
}

Status ClusterState::UpdateNode(NodeSpec spec) {
  stamp_.Renew();
  PHX_RETURN_IF_ERROR(ValidateSpec(spec));
  auto it = by_name_.find(spec.name);
  if (it == by_name_.end()) return NotFoundError(fmt::format("node {} not found", spec.name.str()));
  const NodeIndex i = it->second;
  NodeState& n = nodes_[static_cast<size_t>(i)];
  const GpuMask held = n.allocated | n.shared | n.reserved;
  if (held & ~AllGpus(spec.gpu_count)) {
    return FailedPreconditionError(fmt::format(
        "node {}: {} GPUs would drop held GPUs; remove and re-add the node", spec.name.str(), spec.gpu_count));
  }
  Detach(i);
  n.spec = std::move(spec);
  Attach(i);
  return OkStatus();
}

Result<NodeRemoval> ClusterState::RemoveNode(const NodeName& name) {
  stamp_.Renew();
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return NotFoundError(fmt::format("node {} not found", name.str()));
  const NodeIndex i = it->second;
  NodeRemoval removal;
  for (const PodAllocation* p : nodes_[static_cast<size_t>(i)].pods) removal.pods.push_back(p->pod);
  for (const PodUid& pod : removal.pods) pods_.erase(pod);
  nodes_[static_cast<size_t>(i)].pods.clear();
  Retier(nodes_[static_cast<size_t>(i)]);
  nodes_[static_cast<size_t>(i)].allocated = nodes_[static_cast<size_t>(i)].shared = 0;
  nodes_[static_cast<size_t>(i)].share_milli.fill(0);
  for (const auto& [key, r] : plans_) {
    for (size_t m = 0; m < r.members.size(); ++m) {
      if (!r.committed[m] && r.members[m].node == name) {
        removal.plans.push_back(key);
        break;
      }
    }
  }
  for (const GangKey& plan : removal.plans) PHX_RETURN_IF_ERROR(Unreserve(plan));
  Detach(i);
  SlotIndex& slot = slots_[static_cast<size_t>(i)];
  const auto lpos = static_cast<size_t>(slot.live_pos);
  slots_[static_cast<size_t>(live_.back())].live_pos = static_cast<int32_t>(lpos);
  SwapRemove(live_, lpos);
  slot.live_pos = -1;
  name_index_.Erase(name.str(), [this](int32_t n) -> std::string_view { return nodes_[static_cast<size_t>(n)].spec.name.str(); });
  by_name_.erase(it);
  nodes_[static_cast<size_t>(i)] = NodeState{};
  free_slots_.push_back(i);
  return removal;
}

std::optional<NodeIndex> ClusterState::FindNode(const NodeName& name) const {
  return FindNode(std::string_view(name.str()));
}

std::optional<NodeIndex> ClusterState::FindNode(std::string_view name) const {
  return name_index_.FindWith(name, [this](int32_t i) -> std::string_view {
    return nodes_[static_cast<size_t>(i)].spec.name.str();
  });
}

void ClusterState::FindNodes(std::span<const std::string_view> names, std::span<NodeIndex> out) const {
  name_index_.FindMany(
      names, out, [this](int32_t i) -> std::string_view { return nodes_[static_cast<size_t>(i)].spec.name.str(); },
      [this](int32_t i) {
        // The name object, and its characters where they live outside it (over 15 bytes).
        const std::string& name = nodes_[static_cast<size_t>(i)].spec.name.str();
        __builtin_prefetch(&name);
        __builtin_prefetch(name.data());
      });
}

PoolId ClusterState::FindPool(std::string_view pool) const {
  auto it = pool_ids_.find(std::string(pool));
  return it == pool_ids_.end() ? kNoPool : it->second;
}

DomainId ClusterState::FindDomain(int level, std::string_view value) const {
  if (level < 0 || level >= static_cast<int>(levels_.size())) return kNoDomain;
  const auto& ids = domain_ids_[static_cast<size_t>(level)];
  auto it = ids.find(std::string(value));
  return it == ids.end() ? kNoDomain : it->second;
}

int ClusterState::DomainCount(int level) const {
  return static_cast<int>(domains_[static_cast<size_t>(level)].size());
}

const DomainInfo& ClusterState::domain(int level, DomainId id) const {
  return domains_[static_cast<size_t>(level)][static_cast<size_t>(id)];
}

int ClusterState::FreeMilli(NodeIndex node, int gpu) const {
  const NodeState& n = nodes_[static_cast<size_t>(node)];
  const GpuMask bit = GpuMask{1} << gpu;
  if (!n.spec.schedulable || !(WholeGpus(n.spec) & bit) || (n.allocated & bit) || (n.reserved & bit)) return 0;
  return kMilliPerGpu - n.share_milli[static_cast<size_t>(gpu)];
}

}  // namespace phalanx::placement
