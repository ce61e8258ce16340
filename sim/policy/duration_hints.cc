#include "sim/policy/duration_hints.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "core/base/mix.h"

namespace phalanx::sim {
namespace {

std::optional<double> ParseNumber(std::string_view s) {
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace

double HintModel::FactorOf(JobId id) const {
  if (mode != Mode::kNoisy) return 1;
  const double u = static_cast<double>(SplitMix64(seed * 0x100000001b3ULL ^ static_cast<uint64_t>(id)) >> 11) * 0x1.0p-53;
  return lo + (hi - lo) * u;
}

std::optional<double> HintModel::HintFor(const Job& job, double remaining) const {
  switch (mode) {
    case Mode::kExact:
      return remaining;
    case Mode::kNoisy:
      return remaining * FactorOf(job.id);
    case Mode::kNone:
      if (job.active_deadline > 0) return std::max(1.0, job.active_deadline - (job.duration - remaining));
      return std::nullopt;
  }
  return std::nullopt;
}

Result<HintModel> ParseHintNoise(const std::string& text, uint64_t seed) {
  const size_t comma = text.find(',');
  auto bad = [&](std::string_view why) {
    return InvalidArgumentError(fmt::format("--hint-noise \"{}\": {}", text, why));
  };
  if (comma == std::string::npos) return bad("expected LO,HI (e.g. 1,3: hint = duration x U(1,3))");
  const auto lo = ParseNumber(std::string_view(text).substr(0, comma));
  const auto hi = ParseNumber(std::string_view(text).substr(comma + 1));
  if (!lo || !hi) return bad("LO and HI must be numbers");
  if (*lo < 1) return bad("LO must be >= 1 (users overestimate; --no-duration-hints models no hint)");
  if (*hi < *lo) return bad("HI must be >= LO");
  if (*hi > 100) return bad("HI must be <= 100");
  return HintModel{.mode = HintModel::Mode::kNoisy, .lo = *lo, .hi = *hi, .seed = seed};
}

}  // namespace phalanx::sim
