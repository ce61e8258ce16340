// The filter and prioritize verbs (DESIGN §2.5): per-node fit and score from the ledger;
// gang members are pinned to their planned node.
#include "extender/extender.h"

#include <array>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "core/placement/node_score.h"
#include "extender/mig_filter.h"
#include "extender/extender_internal.h"

namespace phalanx::extender {

using namespace internal;  // NOLINT: this component's own helpers

// --- filter --------------------------------------------------------------------------------

void Extender::RememberPod(const PodInfo& pod) {
  std::lock_guard lock(summaries_mu_);
  if (seen_pods_.size() >= kMaxRememberedPods) seen_pods_.clear();
  seen_pods_[pod.uid] = pod;
}

void Extender::RecordFilterSummary(const PodInfo& pod, const FilterResult& r) {
  std::map<std::string_view, int> reasons;
  for (const auto& [node, why] : r.failed) reasons[why]++;
  for (const auto& [node, why] : r.unresolvable) reasons[why]++;
  std::string text = fmt::format("last filter: {} of {} candidate nodes fit", r.passed.size(),
                                 r.passed.size() + r.failed.size() + r.unresolvable.size());
  int shown = 0;
  for (const auto& [why, count] : reasons) {
    if (shown++ == 5) break;
    text += fmt::format("; {} node(s): {}", count, why);
  }
  std::lock_guard lock(summaries_mu_);
  if (filter_summaries_.size() >= kMaxRememberedPods) filter_summaries_.clear();
  filter_summaries_[pod.Key()] = std::move(text);
}

FilterResult Extender::Filter(const FilterArgs& args) {
  FilterResult r;
  r.full_nodes = args.full_nodes;
  if (args.full_nodes) {
    // Nodes the ledger has not seen yet (no informer in embedded mode): learn them.
    std::unique_lock lock(mu_);
    for (std::string_view raw : args.raw_nodes) {
      auto doc = json::Parse(raw);
      if (!doc.ok()) continue;
      auto node = ParseNode(*doc);
      if (node.ok() && !ledger_.FindNode(node->name)) (void)ledger_.UpsertNode(*node);
    }
  }
  auto pass = [&](size_t i) {
    r.passed.push_back(args.node_names[i]);
    if (args.full_nodes && i < args.raw_nodes.size()) r.passed_raw.push_back(args.raw_nodes[i]);
  };
  if (RequestsMig(args.pod)) {  // nvidia.com/mig-<profile>: extender/mig_filter.h
    RememberPod(args.pod);
    std::shared_lock lock(mu_);
    FilterResult m = FilterMig(ledger_, args);
    lock.unlock();
    if (m.passed.empty()) RecordFilterSummary(args.pod, m);
    return m;
  }
  if (args.pod.gpus <= 0) {  // not a managed resource: nothing for us to judge
    for (size_t i = 0; i < args.node_names.size(); ++i) pass(i);
    return r;
  }
  RememberPod(args.pod);
  if (args.pod.IsGangMember()) {
    FilterResult g = FilterGang(args);
    RecordFilterSummary(args.pod, g);
    return g;
  }
  const placement::PodRequest request = RequestOf(args.pod);
  std::shared_lock lock(mu_);
  const auto& state = ledger_.state();
  // Most failing nodes share a handful of reasons: format each distinct one once.
  std::map<std::array<int, 8>, std::string> messages;
  for (size_t i = 0; i < args.node_names.size(); ++i) {
    const std::string_view name = args.node_names[i];
    auto idx = state.FindNode(NodeName(name));
    if (!idx) {
      r.unresolvable.emplace_back(name, "node has no GPUs known to phalanx (no nvidia.com/gpu, or not yet synced)");
      continue;
    }
    const placement::Feasibility f = placement::CheckFeasibility(state, *idx, request);
    if (f.fits()) {
      pass(i);
      continue;
    }
    const std::array<int, 8> key = {static_cast<int>(f.reason), f.requested, f.free, f.preemptible,
                                    f.reserved, f.healthy, f.capacity, state.node(*idx).pool};
    auto [it, fresh] = messages.try_emplace(key);
    if (fresh) it->second = placement::FormatFeasibility(f, kGpuResource);
    (f.resolvable_by_preemption() ? r.failed : r.unresolvable).emplace_back(name, it->second);
  }
  lock.unlock();
  if (r.passed.empty()) RecordFilterSummary(args.pod, r);
  return r;
}

FilterResult Extender::FilterGang(const FilterArgs& args) {
  FilterResult r;
  r.full_nodes = args.full_nodes;
  const PodInfo& pod = args.pod;
  const GangKey key = pod.Gang();
  const MonotonicTime now = clock_.Now();
  std::unique_lock lock(mu_);
  if (!ledger_.FindPod(pod.uid)) ledger_.UpsertPod(pod, now);  // embedded mode: learn it here
  GangRecord* g = ledger_.MutableGang(key);
  auto fail_all = [&](const std::string& why, bool resolvable) {
    for (std::string_view n : args.node_names) (resolvable ? r.failed : r.unresolvable).emplace_back(n, why);
    return r;
  };
  if (!g) return fail_all(fmt::format("pod {} is not a live member of gang {}", pod.Key(), key.str()), false);
  if (const PodRecord* rec = ledger_.FindPod(pod.uid); rec && IsCommittedUnbound(*rec)) {
    // Committed (devices annotated) but its Binding failed: only its node, whatever the plan.
    const std::string why = fmt::format("gang {}: pod {} is committed to node {}", key.str(), pod.Key(), rec->node.str());
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
    if (!leadership_.IsLeader()) {
      return fail_all(fmt::format("gang {} is not admitted yet; the active extender (Lease phalanx-extender) plans it",
                                  key.str()),
                      false);
    }
    std::string why = TryPlan(*g, now);
    if (!why.empty()) return fail_all(why, true);
  }
  std::set<std::string_view> input(args.node_names.begin(), args.node_names.end());
  auto ordinal = ledger_.AssignMember(key, pod.uid, [&](const NodeName& n) { return input.contains(n.str()); });
  if (!ordinal) {
    return fail_all(fmt::format("gang {}: every planned member slot is taken by other pods", key.str()), false);
  }
  const std::string& planned = g->plan->members[static_cast<size_t>(*ordinal)].node.str();
  const std::string why = fmt::format("gang {} member {} is planned on node {}", key.str(), *ordinal, planned);
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

// --- prioritize ----------------------------------------------------------------------------

std::vector<HostScore> Extender::Prioritize(const FilterArgs& args) {
  std::vector<HostScore> out;
  out.reserve(args.node_names.size());
  std::shared_lock lock(mu_);
  const auto& state = ledger_.state();
  if (RequestsMig(args.pod)) return PrioritizeMig(ledger_, args);
  if (args.pod.gpus <= 0) {
    for (std::string_view n : args.node_names) out.push_back({n, 0});
    return out;
  }
  if (args.pod.IsGangMember()) {
    const GangRecord* g = ledger_.FindGang(args.pod.Gang());
    std::string_view planned;
    if (g && g->plan) {
      if (auto it = g->assignment.find(args.pod.uid); it != g->assignment.end()) {
        planned = g->plan->members[static_cast<size_t>(it->second)].node.str();
      }
    }
    for (std::string_view n : args.node_names) out.push_back({n, n == planned ? 10 : 0});
    return out;
  }
  const placement::PodRequest request = RequestOf(args.pod);
  for (std::string_view n : args.node_names) {
    int score = 0;
    if (auto idx = state.FindNode(NodeName(n))) {
      auto s = placement::ScoreNode(state, *idx, request, config_.weights);
      if (s.ok()) score = std::clamp(s->Rounded(), 0, 10);
    }
    out.push_back({n, score});
  }
  return out;
}

}  // namespace phalanx::extender
