// Distinct identifier types so a node name cannot be passed where a GPU UUID is expected.
#pragma once

#include <compare>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>

namespace phalanx {

template <typename Tag>
class StrongId {
 public:
  StrongId() = default;
  explicit StrongId(std::string value) : value_(std::move(value)) {}
  explicit StrongId(std::string_view value) : value_(value) {}
  explicit StrongId(const char* value) : value_(value) {}

  const std::string& str() const { return value_; }
  bool empty() const { return value_.empty(); }

  friend auto operator<=>(const StrongId&, const StrongId&) = default;
  friend bool operator==(const StrongId&, const StrongId&) = default;
  friend std::ostream& operator<<(std::ostream& os, const StrongId& id) { return os << id.value_; }

 private:
  std::string value_;
};

struct NodeNameTag {};
struct PodUidTag {};
struct GpuUuidTag {};
struct GangKeyTag {};

using NodeName = StrongId<NodeNameTag>;
using PodUid = StrongId<PodUidTag>;
using GpuUuid = StrongId<GpuUuidTag>;
// "<namespace>/<gang name>"
using GangKey = StrongId<GangKeyTag>;

}  // namespace phalanx

template <typename Tag>
struct std::hash<phalanx::StrongId<Tag>> {
  size_t operator()(const phalanx::StrongId<Tag>& id) const noexcept {
    return std::hash<std::string>()(id.str());
  }
};
