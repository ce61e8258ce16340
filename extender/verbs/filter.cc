// The filter verb (filter_verb.h, docs/architecture.md §2.5): per-node fit from the ledger; gang
// members are pinned to their planned node.
#include "extender/verbs/filter_verb.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/placement/node_score.h"
#include "extender/extender_internal.h"
#include "extender/mig/mig_filter.h"
#include "extender/verbs/node_lookup.h"

namespace phalanx::extender {

using namespace internal;  // NOLINT: this component's own helpers

// --- filter --------------------------------------------------------------------------------

namespace {

// Everything FormatFeasibility reads, packed: compared once per failing node, so three word
// compares rather than a memcmp call. Node counts are 0..kMilliPerGpu, within 16 bits;
// `requested` is the same for every node of one request, so truncating it cannot merge two.
struct ReasonKey {
  uint64_t a = 0, b = 0, c = 0;
  bool operator==(const ReasonKey& o) const { return a == o.a && b == o.b && c == o.c; }
};

ReasonKey ReasonKeyOf(const placement::Feasibility& f, placement::PoolId pool) {
  auto u16 = [](int v) { return static_cast<uint64_t>(static_cast<uint16_t>(v)); };
  return {u16(static_cast<int>(f.reason)) | u16(f.requested) << 16 | u16(f.free) << 32 | u16(f.preemptible) << 48,
          u16(f.reserved) | u16(f.healthy) << 16 | u16(f.capacity) << 32,
          static_cast<uint64_t>(static_cast<uint32_t>(pool))};
}

// What the reply says of a node that does not fit: one text per kind of refusal, the same
// for every node refused that way. kube-scheduler counts nodes per distinct text in its
// FailedScheduling event ("0/5000 nodes are available: 5000 Insufficient nvidia.com/gpu."),
// and whether preemption may help is said by the map the node is in (FailedNodes or
// FailedAndUnresolvableNodes), not by the words. Each node's numbers (free, held, reserved)
// are in `phalanx explain` (RecordFilterSummary): on a full cluster of 5,000 nodes the
// detailed text was ~85 bytes per node, a 0.5 MB reply (bench/RESULTS.md, Extender).
const std::string& WireReason(placement::UnfitReason reason) {
  using placement::UnfitReason;
  // Static: FailReason::Static shares them with no reference count.
  static const std::string kUnschedulable = "node is unschedulable (cordoned)";
  static const std::string kWrongPool = "node's GPU product is not the one the pod needs";
  static const std::string kTooFew = "Insufficient nvidia.com/gpu (node has fewer GPUs)";
  static const std::string kUnhealthy = "Insufficient nvidia.com/gpu (unhealthy GPUs)";
  static const std::string kReserved = "Insufficient nvidia.com/gpu (reserved by gang plans)";
  static const std::string kInUse = "Insufficient nvidia.com/gpu";
  static const std::string kLowerTiers = "Insufficient nvidia.com/gpu (held by lower tiers)";
  switch (reason) {
    case UnfitReason::kFits: break;
    case UnfitReason::kNodeUnschedulable: return kUnschedulable;
    case UnfitReason::kWrongPool: return kWrongPool;
    case UnfitReason::kTooFewGpus: return kTooFew;
    case UnfitReason::kUnhealthyGpus: return kUnhealthy;
    case UnfitReason::kReservedByPlans: return kReserved;
    case UnfitReason::kInUseByHigherTiers: return kInUse;
    case UnfitReason::kInUseByLowerTiers: return kLowerTiers;
  }
  return kInUse;
}

// Starts loading the node the loop will judge `kAhead` candidates from now.
constexpr size_t kAhead = 4;
void PrefetchNode(const placement::ClusterState& state, const std::vector<placement::NodeIndex>& nodes,
                  size_t i) {
  if (i + kAhead >= nodes.size() || nodes[i + kAhead] < 0) return;
  const char* node = reinterpret_cast<const char*>(&state.node(nodes[i + kAhead]));
  for (size_t line = 0; line < sizeof(placement::NodeState); line += 64) __builtin_prefetch(node + line);
}

constexpr size_t kUnfitReasons = static_cast<size_t>(placement::UnfitReason::kInUseByLowerTiers) + 1;
const std::string& UnknownNodeReason() {
  static const std::string text = "node has no GPUs known to phalanx (no nvidia.com/gpu, or not yet synced)";
  return text;
}

}  // namespace

void FilterVerb::RecordFilterSummary(const PodInfo& pod, const FilterResult& r) {
  // Count by shared reason first (a handful for thousands of nodes), then order by text.
  std::vector<std::pair<FailReason, int>> by_id;
  for (const auto* entries : {&r.failed, &r.unresolvable}) {
    for (const auto& entry : *entries) {
      const FailReason& why = entry.second;  // not a structured binding: clang 14 (make fuzz) cannot capture one
      auto it = std::find_if(by_id.begin(), by_id.end(), [&](const auto& e) { return e.first.id() == why.id(); });
      if (it == by_id.end()) by_id.emplace_back(why, 1);
      else ++it->second;
    }
  }
  std::vector<std::pair<std::string_view, int>> counts;
  for (const auto& [why, count] : by_id) counts.emplace_back(why.str(), count);
  RecordFilterSummary(pod, r.passed.size(), r.passed.size() + r.failed.size() + r.unresolvable.size(), counts);
}

void FilterVerb::RecordFilterSummary(const PodInfo& pod, size_t passed, size_t candidates,
                                   const std::vector<std::pair<std::string_view, int>>& counts) {
  std::map<std::string_view, int> reasons;
  for (const auto& [why, count] : counts) reasons[why] += count;
  std::string text = fmt::format("last filter: {} of {} candidate nodes fit", passed, candidates);
  int shown = 0;
  for (const auto& [why, count] : reasons) {
    if (shown++ == 5) break;
    text += fmt::format("; {} node(s): {}", count, why);
  }
  h_.memory.RecordFilterSummary(pod.Key(), std::move(text));
}

FilterResult FilterVerb::Filter(const FilterArgs& args) {
  FilterResult r;
  r.full_nodes = args.full_nodes;
  if (args.full_nodes) {
    // Nodes the ledger has not seen yet (no informer in embedded mode): learn them.
    std::unique_lock lock(h_.mu);
    for (std::string_view raw : args.raw_nodes) {
      auto doc = json::Parse(raw);
      if (!doc.ok()) continue;
      auto node = ParseNode(*doc);
      if (node.ok() && !h_.ledger.FindNode(node->name)) (void)h_.ledger.UpsertNode(*node);
    }
  }
  auto pass = [&](size_t i) {
    r.passed.push_back(args.node_names[i]);
    if (args.full_nodes && i < args.raw_nodes.size()) r.passed_raw.push_back(args.raw_nodes[i]);
  };
  if (RequestsMig(args.pod)) {  // nvidia.com/mig-<profile>: extender/mig/mig_filter.h
    h_.memory.RememberPod(args.pod);
    PoolRefusals refused;  // by its team queue's quota (mig_queues.cc)
    if (admission_.QueuesOn()) {
      std::unique_lock exclusive(h_.mu);  // the locking rule (extender.h): the engine read without the admission lock
      refused = admission_.MigQuotaRefusals(args.pod);
    }
    std::shared_lock lock(h_.mu);
    FilterResult m = FilterMig(h_.ledger, args, refused);
    lock.unlock();
    if (m.passed.empty()) RecordFilterSummary(args.pod, m);
    return m;
  }
  if (args.pod.gpus <= 0) {  // not a managed resource: nothing for us to judge
    for (size_t i = 0; i < args.node_names.size(); ++i) pass(i);
    return r;
  }
  h_.memory.RememberPod(args.pod);
  if (args.pod.IsGangMember()) {
    FilterResult g = FilterGang(args);
    RecordFilterSummary(args.pod, g);
    return g;
  }
  const placement::PodRequest request = RequestOf(args.pod);
  r.passed.reserve(args.node_names.size());  // most pass on a cluster with room: no regrowth
  std::shared_lock lock(h_.mu);
  const auto& state = h_.ledger.state();
  // Most failing nodes share a handful of distinct answers (ReasonKey): each is looked up once
  // per node, its detailed text formatted once for `phalanx explain`, and the reply's text
  // (WireReason) is one shared string per kind of refusal: a full cluster costs a lookup
  // and a reference per node, not a string.
  struct Distinct {
    ReasonKey key;
    placement::Feasibility feasibility;
    int nodes = 0;
  };
  std::vector<Distinct> distinct;
  std::array<std::optional<FailReason>, kUnfitReasons> wire;
  std::optional<FailReason> unknown;
  const std::vector<placement::NodeIndex> nodes = ResolveNames(state, args.node_names);
  const bool keep_no_fit = args.reply_only && !args.full_nodes;
  if (keep_no_fit) {
    if (auto answer = no_fit_.Find(state, request, nodes)) {
      lock.unlock();
      r.encoded = std::shared_ptr<const std::string>(answer, &answer->reply);  // keeps the answer alive
      std::vector<std::pair<std::string_view, int>> counts(answer->summary.begin(), answer->summary.end());
      RecordFilterSummary(args.pod, 0, args.node_names.size(), counts);
      return r;
    }
  }
  for (size_t i = 0; i < args.node_names.size(); ++i) {
    const std::string_view name = args.node_names[i];
    PrefetchNode(state, nodes, i);
    const placement::NodeIndex idx = nodes[i];
    if (idx < 0) {
      if (!unknown) unknown = FailReason::Static(UnknownNodeReason());
      r.unresolvable.emplace_back(name, *unknown);
      continue;
    }
    const placement::Feasibility f = placement::CheckFeasibility(state, idx, request);
    if (f.fits()) {
      pass(i);
      continue;
    }
    const ReasonKey key = ReasonKeyOf(f, state.node(idx).pool);
    auto it = std::find_if(distinct.begin(), distinct.end(), [&](const Distinct& d) { return d.key == key; });
    if (it == distinct.end()) it = distinct.insert(distinct.end(), Distinct{key, f, 0});
    ++it->nodes;
    auto& why = wire[static_cast<size_t>(f.reason)];
    if (!why) why = FailReason::Static(WireReason(f.reason));
    auto& out = f.resolvable_by_preemption() ? r.failed : r.unresolvable;
    if (out.empty()) out.reserve(args.node_names.size() - i);  // a full cluster fails them all: no regrowth
    out.emplace_back(name, *why);
  }
  // The summary keeps each node's numbers: the distinct answers, formatted once each, under
  // the lock (a Feasibility views its node's pool name in the ledger).
  std::vector<std::string> texts;
  std::shared_ptr<internal::NoFitCache::Answer> answer;
  if (r.passed.empty()) {
    texts.reserve(distinct.size());
    for (const Distinct& d : distinct) texts.push_back(placement::FormatFeasibility(d.feasibility, kGpuResource));
    if (keep_no_fit && !unknown) answer = internal::NoFitCache::Begin(state, request, nodes);
  }
  lock.unlock();
  if (r.passed.empty()) {
    std::vector<std::pair<std::string_view, int>> counts;
    int judged = 0;
    for (size_t k = 0; k < distinct.size(); ++k) {
      counts.emplace_back(texts[k], distinct[k].nodes);
      judged += distinct[k].nodes;
    }
    const int unknown_nodes = static_cast<int>(r.unresolvable.size() + r.failed.size()) - judged;
    if (unknown_nodes > 0) counts.emplace_back(UnknownNodeReason(), unknown_nodes);
    RecordFilterSummary(args.pod, 0, args.node_names.size(), counts);
    if (answer) {  // encoded once: for this reply and for the next requests it answers
      answer->reply = EncodeFilterResult(r);
      for (const auto& [text, nodes_refused] : counts) answer->summary.emplace_back(text, nodes_refused);
      r.encoded = std::shared_ptr<const std::string>(answer, &answer->reply);
      no_fit_.Keep(std::move(answer));
    }
  }
  return r;
}

FilterResult FilterVerb::FilterGang(const FilterArgs& args) {
  FilterResult r;
  r.full_nodes = args.full_nodes;
  const PodInfo& pod = args.pod;
  const GangKey key = pod.Gang();
  const MonotonicTime now = h_.clock.Now();
  std::unique_lock lock(h_.mu);
  if (!h_.ledger.FindPod(pod.uid)) h_.ledger.UpsertPod(pod, now);  // embedded mode: learn it here
  GangRecord* g = h_.ledger.MutableGang(key);
  auto fail_all = [&](std::string text, bool resolvable) {
    const FailReason why(std::move(text));
    for (std::string_view n : args.node_names) (resolvable ? r.failed : r.unresolvable).emplace_back(n, why);
    return r;
  };
  if (!g) return fail_all(fmt::format("pod {} is not a live member of gang {}", pod.Key(), key.str()), false);
  if (const PodRecord* rec = h_.ledger.FindPod(pod.uid); rec && IsCommittedUnbound(*rec)) {
    // Committed (devices annotated) but its Binding failed: only its node, whatever the plan.
    const FailReason why(fmt::format("gang {}: pod {} is committed to node {}", key.str(), pod.Key(), rec->node.str()));
    for (size_t i = 0; i < args.node_names.size(); ++i) {
      if (args.node_names[i] == rec->node.str()) {
        r.passed.push_back(args.node_names[i]);
        if (args.full_nodes && i < args.raw_nodes.size()) r.passed_raw.push_back(args.raw_nodes[i]);
      } else {
        r.unresolvable.emplace_back(args.node_names[i], why);
      }
    }
    return r;
  }
  if (!g->plan) {
    if (!h_.leadership.IsLeader()) {
      return fail_all(fmt::format("gang {} is not admitted yet; the active extender (Lease phalanx-extender) plans it",
                                  key.str()),
                      false);
    }
    bool over_quota = false;
    std::string why = admission_.TryPlan(*g, now, &over_quota);
    // Over its queue's quota it fits on the nodes: kube-scheduler's preemption cannot help.
    if (!why.empty()) return fail_all(why, !over_quota);
  }
  std::set<std::string_view> input(args.node_names.begin(), args.node_names.end());
  auto ordinal = h_.ledger.AssignMember(key, pod.uid, [&](const NodeName& n) { return input.contains(n.str()); });
  if (!ordinal) {
    return fail_all(fmt::format("gang {}: every planned member slot is taken by other pods", key.str()), false);
  }
  const std::string& planned = g->plan->members[static_cast<size_t>(*ordinal)].node.str();
  const FailReason why(fmt::format("gang {} member {} is planned on node {}", key.str(), *ordinal, planned));
  for (size_t i = 0; i < args.node_names.size(); ++i) {
    if (args.node_names[i] == planned) {
      r.passed.push_back(args.node_names[i]);
      if (args.full_nodes && i < args.raw_nodes.size()) r.passed_raw.push_back(args.raw_nodes[i]);
    } else {
      r.unresolvable.emplace_back(args.node_names[i], why);
    }
  }
  return r;
}

}  // namespace phalanx::extender
