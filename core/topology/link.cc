#include "core/topology/link.h"

#include <fmt/format.h>

#include <cassert>
#include <charconv>

namespace phalanx::topology {

Link Link::Nvlink(int count) {
  assert(count >= 1 && count <= kMaxNvlinksPerPair);
  return Link(LinkKind::kNvlink, count);
}

Link Link::Pcie(LinkKind kind) {
  assert(kind != LinkKind::kSelf && kind != LinkKind::kNvlink);
  return Link(kind, 0);
}

std::string Link::Token() const {
  switch (kind_) {
    case LinkKind::kSelf:
      return "X";
    case LinkKind::kNvlink:
      return fmt::format("NV{}", nvlinks_);
    case LinkKind::kPix:
      return "PIX";
    case LinkKind::kPxb:
      return "PXB";
    case LinkKind::kPhb:
      return "PHB";
    case LinkKind::kNode:
      return "NODE";
    case LinkKind::kSys:
      return "SYS";
  }
  return "?";
}

Result<Link> ParseLinkToken(std::string_view token) {
  if (token == "X") return Link::Self();
  if (token == "PIX") return Link::Pcie(LinkKind::kPix);
  if (token == "PXB") return Link::Pcie(LinkKind::kPxb);
  if (token == "PHB") return Link::Pcie(LinkKind::kPhb);
  if (token == "NODE") return Link::Pcie(LinkKind::kNode);
  if (token == "SYS") return Link::Pcie(LinkKind::kSys);
  if (token.size() > 2 && token.substr(0, 2) == "NV") {
    std::string_view digits = token.substr(2);
    // Canonical decimal only ("NV018" or "NV+4" would not round-trip byte for byte).
    if (digits[0] != '0' && digits.size() <= 2) {
      int count = 0;
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), count);
      if (ec == std::errc() && end == digits.data() + digits.size() && count >= 1 &&
          count <= kMaxNvlinksPerPair) {
        return Link::Nvlink(count);
      }
    }
  }
  return InvalidArgumentError(
      fmt::format("unknown link token \"{}\" (expected X, NV<1..{}>, PIX, PXB, PHB, NODE or SYS)",
                  token.substr(0, 32), kMaxNvlinksPerPair));
}

double PcieBandwidth(LinkKind kind) {
  switch (kind) {
    case LinkKind::kPix:
      return kPixGbps;
    case LinkKind::kPxb:
      return kPxbGbps;
    case LinkKind::kPhb:
      return kPhbGbps;
    case LinkKind::kNode:
      return kNodeGbps;
    case LinkKind::kSys:
      return kSysGbps;
    case LinkKind::kSelf:
    case LinkKind::kNvlink:
      return 0.0;
  }
  return 0.0;
}

double NvlinkGbpsPerLinkForVersion(int nvlink_version) {
  switch (nvlink_version) {
    case 1:
      return 20.0;
    case 2:
    case 3:
    case 4:
      return 25.0;
    case 5:
      return 50.0;
    default:
      return 0.0;
  }
}

}  // namespace phalanx::topology
