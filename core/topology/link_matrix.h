// LinkMatrix: the pairwise links between the N GPUs of one node (nvidia-smi `topo -m`).
//
// Invariants, kept by construction: N×N; the diagonal is Link::Self() and no other cell
// is; symmetric (Set writes both (i, j) and (j, i)). A new matrix has SYS off the
// diagonal (the weakest link, so a forgotten cell never looks better than it is).
//
// Value type, cheap to copy for the node sizes in use (N <= kMaxGpus = 64);
// thread-compatible.
#pragma once

#include <cassert>
#include <vector>

#include "core/topology/link.h"

namespace phalanx::topology {

class LinkMatrix {
 public:
  LinkMatrix() = default;  // 0 GPUs
  explicit LinkMatrix(int gpu_count);

  int size() const { return n_; }

  // 0 <= i, j < size() (asserted).
  const Link& at(int i, int j) const {
    assert(i >= 0 && i < n_ && j >= 0 && j < n_);
    return cells_[static_cast<size_t>(i) * n_ + j];
  }

  // Sets the link between GPUs i != j in both directions. A self link or i == j is a
  // programming error (asserted; ignored in release builds so the invariants hold).
  void Set(int i, int j, Link link);

  // True when every pair of distinct GPUs is joined by the same number of NVLinks: an
  // NVSwitch system (or a full NVLink mesh), where any subset of GPUs forms a ring whose
  // bottleneck is one pair's NVLink bandwidth. Placement treats such nodes as
  // all-to-all. False for fewer than 2 GPUs.
  bool IsNvlinkAllToAll() const;

  friend bool operator==(const LinkMatrix&, const LinkMatrix&) = default;

 private:
  int n_ = 0;
  std::vector<Link> cells_;  // row-major n_ × n_
};

}  // namespace phalanx::topology
