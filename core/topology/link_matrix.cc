#include "core/topology/link_matrix.h"

namespace phalanx::topology {

LinkMatrix::LinkMatrix(int gpu_count) : n_(gpu_count < 0 ? 0 : gpu_count) {
  assert(gpu_count >= 0);
  cells_.assign(static_cast<size_t>(n_) * n_, Link::Pcie(LinkKind::kSys));
  for (int i = 0; i < n_; ++i) cells_[static_cast<size_t>(i) * n_ + i] = Link::Self();
}

void LinkMatrix::Set(int i, int j, Link link) {
  assert(i >= 0 && i < n_ && j >= 0 && j < n_ && i != j && !link.is_self());
  if (i < 0 || i >= n_ || j < 0 || j >= n_ || i == j || link.is_self()) return;
  cells_[static_cast<size_t>(i) * n_ + j] = link;
  cells_[static_cast<size_t>(j) * n_ + i] = link;
}

bool LinkMatrix::IsNvlinkAllToAll() const {
  if (n_ < 2) return false;
  const Link& first = at(0, 1);
  if (!first.is_nvlink()) return false;
  for (int i = 0; i < n_; ++i) {
    for (int j = i + 1; j < n_; ++j) {
      if (at(i, j) != first) return false;
    }
  }
  return true;
}

}  // namespace phalanx::topology
