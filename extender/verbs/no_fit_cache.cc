#include "extender/verbs/no_fit_cache.h"

namespace phalanx::extender::internal {
namespace {

// Everything CheckFeasibility reads from the request.
bool SameRequest(const placement::PodRequest& a, const placement::PodRequest& b) {
  return a.gpus == b.gpus && a.milli == b.milli && a.priority == b.priority && a.pool == b.pool &&
         a.own_plan == b.own_plan;
}

}  // namespace

std::shared_ptr<const NoFitCache::Answer> NoFitCache::Find(const placement::ClusterState& state,
                                                           const placement::PodRequest& request,
                                                           std::span<const placement::NodeIndex> nodes) const {
  std::shared_ptr<const Answer> answer;
  {
    std::lock_guard lock(mu_);
    for (const auto& slot : slots_) {
      if (slot && slot->stamp == state.stamp() && SameRequest(slot->request, request)) {
        answer = slot;
        break;
      }
    }
  }
  if (!answer || nodes.size() != answer->candidates) return nullptr;
  // As many names as the kept set, each in it, none twice: the same set.
  std::vector<uint8_t> seen(answer->candidate.size(), 0);
  for (const placement::NodeIndex idx : nodes) {
    if (idx < 0 || static_cast<size_t>(idx) >= seen.size()) return nullptr;
    const auto i = static_cast<size_t>(idx);
    if (!answer->candidate[i] || seen[i]) return nullptr;
    seen[i] = 1;
  }
  return answer;
}

std::shared_ptr<NoFitCache::Answer> NoFitCache::Begin(const placement::ClusterState& state,
                                                      const placement::PodRequest& request,
                                                      std::span<const placement::NodeIndex> nodes) {
  auto answer = std::make_shared<Answer>();
  answer->stamp = state.stamp();
  answer->request = request;
  answer->candidate.assign(static_cast<size_t>(state.NodeSlots()), 0);
  for (const placement::NodeIndex idx : nodes) {
    if (idx < 0) return nullptr;
    uint8_t& in = answer->candidate[static_cast<size_t>(idx)];
    if (in) return nullptr;
    in = 1;
  }
  answer->candidates = nodes.size();
  return answer;
}

void NoFitCache::Keep(std::shared_ptr<const Answer> answer) {
  std::lock_guard lock(mu_);
  // An answer for an older state can never be found again: its slot goes first.
  for (auto& slot : slots_) {
    if (!slot || slot->stamp != answer->stamp) {
      slot = std::move(answer);
      return;
    }
  }
  slots_[next_] = std::move(answer);
  next_ = (next_ + 1) % kSlots;
}

}  // namespace phalanx::extender::internal
