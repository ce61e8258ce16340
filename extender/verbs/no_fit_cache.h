// NoFitCache: the whole-GPU filter's recent answers in which no candidate fits (issue 23 item 2).
//
// On a full cluster every pending pod of one shape gets the same answer: all candidates refused,
// each for one of a handful of shared reasons, and kube-scheduler asks again for each such pod
// (and for the same pod after each backoff) with the same nodes in another order (its filter
// workers append feasible nodes concurrently). Judging 5,000 nodes and encoding the 215 KB reply
// was about half of such a request's server CPU (bench/RESULTS.md). An answer is kept with all
// it was derived from: the ledger's ClusterState::stamp() (renewed by every change to it), the
// pod's request, and the set of candidate nodes. It is reused only when all three are equal, so
// it is the reply a fresh judgement would give, byte for byte but for the order of the map's keys
// (kube-scheduler decodes them into a Go map). Thread-safe; internal to verbs/.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/placement/cluster_state.h"
#include "core/placement/node_score.h"

namespace phalanx::extender::internal {

class NoFitCache {
 public:
  struct Answer {
    uint64_t stamp = 0;
    placement::PodRequest request;
    std::vector<uint8_t> candidate;  // per node slot of that state: 1 = among the candidates
    size_t candidates = 0;
    std::string reply;                                 // the encoded ExtenderFilterResult
    std::vector<std::pair<std::string, int>> summary;  // `phalanx explain`: text, nodes
  };

  // The kept answer for this state, request and candidate set (`nodes`: the request's names
  // resolved, ResolveNames), or null. Ledger lock held (shared).
  std::shared_ptr<const Answer> Find(const placement::ClusterState& state, const placement::PodRequest& request,
                                     std::span<const placement::NodeIndex> nodes) const;

  // A new answer for the state the caller judged, with its candidate set filled in; null when
  // the candidates cannot be kept as a set (a name unknown to the ledger, or one twice). Ledger
  // lock held; the caller fills `reply` and `summary` (lock no longer needed) and Keeps it.
  static std::shared_ptr<Answer> Begin(const placement::ClusterState& state, const placement::PodRequest& request,
                                       std::span<const placement::NodeIndex> nodes);
  void Keep(std::shared_ptr<const Answer> answer);

 private:
  // A few request shapes at once (8-GPU and 4-GPU pods waiting side by side); each is ~45 bytes
  // per candidate.
  static constexpr size_t kSlots = 4;
  mutable std::mutex mu_;
  std::array<std::shared_ptr<const Answer>, kSlots> slots_;
  size_t next_ = 0;
};

}  // namespace phalanx::extender::internal
