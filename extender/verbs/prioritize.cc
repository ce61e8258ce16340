// The prioritize verb (filter_verb.h, docs/architecture.md §2.5): topology + bin-packing (+
// locality) score from the ledger; a gang member's planned node scores 10.
#include <algorithm>
#include <string_view>
#include <vector>

#include "core/placement/node_score.h"
#include "extender/extender_internal.h"
#include "extender/mig/mig_filter.h"
#include "extender/verbs/filter_verb.h"
#include "extender/verbs/node_lookup.h"

namespace phalanx::extender {

using namespace internal;  // NOLINT: this component's own helpers

std::vector<HostScore> PrioritizeVerb::Prioritize(const FilterArgs& args) {
  std::vector<HostScore> out;
  out.reserve(args.node_names.size());
  std::shared_lock lock(h_.mu);
  const auto& state = h_.ledger.state();
  if (RequestsMig(args.pod)) return PrioritizeMig(h_.ledger, args);
  if (args.pod.gpus <= 0) {
    for (std::string_view n : args.node_names) out.push_back({n, 0});
    return out;
  }
  if (args.pod.IsGangMember()) {
    const GangRecord* g = h_.ledger.FindGang(args.pod.Gang());
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
  const std::vector<placement::NodeIndex> nodes = ResolveNames(state, args.node_names);
  // Batch scoring (placement::ScoreNodes): nodes alike in topology and free GPUs are scored
  // once; unknown nodes and nodes the pod does not fit score 0.
  const auto scores = placement::ScoreNodes(state, nodes, request, h_.config.weights);
  for (size_t i = 0; i < args.node_names.size(); ++i) {
    out.push_back({args.node_names[i], scores[i] ? std::clamp(scores[i]->Rounded(), 0, 10) : 0});
  }
  return out;
}

}  // namespace phalanx::extender
