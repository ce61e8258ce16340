#include "core/cost/price_table.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

namespace phalanx::cost {

namespace {

using json::Json;

std::string Field(std::string_view path, std::string_view key) {
  return path.empty() ? std::string(key) : json::JoinPath(path, key);
}

Result<double> Price(const Json& value, const std::string& field) {
  if (!value.is_number()) {
    return InvalidArgumentError(fmt::format("{}: must be a number >= 0, got {}", field, json::TypeName(value)));
  }
  const double v = value.get<double>();
  if (!std::isfinite(v) || v < 0) return InvalidArgumentError(fmt::format("{}: must be a number >= 0, got {}", field, v));
  return v;
}

bool KnownTier(std::string_view tier) {
  return std::find(std::begin(kTiers), std::end(kTiers), tier) != std::end(kTiers);
}

}  // namespace

double PriceTable::Base(std::string_view model) const {
  auto it = gpu_hourly.find(std::string(model));
  return it == gpu_hourly.end() ? default_gpu_hourly : it->second;
}

double PriceTable::Hourly(std::string_view model, std::string_view tier) const {
  const double base = Base(model);
  auto m = tier_multiplier.find(std::string(tier));
  return base * (m == tier_multiplier.end() ? 1.0 : m->second);
}

Result<PriceTable> ParsePriceTable(const Json& doc, std::string_view path) {
  const std::string where = path.empty() ? "price table" : std::string(path);
  if (!doc.is_object()) return InvalidArgumentError(fmt::format("{}: expected object, got {}", where, json::TypeName(doc)));
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const std::string& k = it.key();
    if (k != "currency" && k != "gpuHourly" && k != "defaultGpuHourly" && k != "tierMultiplier") {
      return InvalidArgumentError(fmt::format(
          "{}: unknown field (known: currency, gpuHourly, defaultGpuHourly, tierMultiplier)", Field(path, k)));
    }
  }
  PriceTable t;
  auto cur = doc.find("currency");
  if (cur == doc.end() || !cur->is_string() || cur->get<std::string>().empty()) {
    return InvalidArgumentError(fmt::format("{}: required, a non-empty string such as \"USD\"", Field(path, "currency")));
  }
  t.currency = cur->get<std::string>();
  if (auto h = doc.find("gpuHourly"); h != doc.end() && !h->is_null()) {
    if (!h->is_object()) {
      return InvalidArgumentError(fmt::format("{}: expected object, got {}", Field(path, "gpuHourly"), json::TypeName(*h)));
    }
    for (auto it = h->begin(); it != h->end(); ++it) {
      if (it.key().empty()) return InvalidArgumentError(fmt::format("{}: empty GPU model name", Field(path, "gpuHourly")));
      PHX_ASSIGN_OR_RETURN(double p, Price(*it, Field(Field(path, "gpuHourly"), it.key())));
      t.gpu_hourly[it.key()] = p;
    }
  }
  auto d = doc.find("defaultGpuHourly");
  if (d == doc.end()) {
    return InvalidArgumentError(
        fmt::format("{}: required (the price of a GPU model gpuHourly does not list)", Field(path, "defaultGpuHourly")));
  }
  PHX_ASSIGN_OR_RETURN(t.default_gpu_hourly, Price(*d, Field(path, "defaultGpuHourly")));
  if (auto m = doc.find("tierMultiplier"); m != doc.end() && !m->is_null()) {
    if (!m->is_object()) {
      return InvalidArgumentError(
          fmt::format("{}: expected object, got {}", Field(path, "tierMultiplier"), json::TypeName(*m)));
    }
    for (auto it = m->begin(); it != m->end(); ++it) {
      const std::string field = Field(Field(path, "tierMultiplier"), it.key());
      if (!KnownTier(it.key())) {
        return InvalidArgumentError(fmt::format("{}: unknown tier (known: critical, high, standard, spot)", field));
      }
      PHX_ASSIGN_OR_RETURN(double f, Price(*it, field));
      t.tier_multiplier[it.key()] = f;
    }
  }
  return t;
}

Result<PriceTable> ParsePriceTableText(std::string_view text, std::string_view path) {
  auto doc = json::Parse(text);
  if (!doc.ok()) return doc.status().WithContext(path.empty() ? "price table" : std::string(path));
  return ParsePriceTable(*doc, path);
}

Json EncodePriceTable(const PriceTable& t) {
  Json out = {{"currency", t.currency}, {"defaultGpuHourly", t.default_gpu_hourly}};
  out["gpuHourly"] = Json::object();
  for (const auto& [k, v] : t.gpu_hourly) out["gpuHourly"][k] = v;
  out["tierMultiplier"] = Json::object();
  for (const auto& [k, v] : t.tier_multiplier) out["tierMultiplier"][k] = v;
  return out;
}

std::string TierOf(std::string_view priority_class_name, std::optional<int32_t> priority) {
  constexpr std::string_view kPrefix = "phalanx-";
  if (priority_class_name.starts_with(kPrefix)) {
    std::string_view rest = priority_class_name.substr(kPrefix.size());
    if (KnownTier(rest)) return std::string(rest);
  }
  if (!priority) return "standard";
  if (*priority >= 1'000'000) return "critical";
  if (*priority >= 10'000) return "high";
  if (*priority >= 1'000) return "standard";
  return "spot";
}

double GpuEquivalents(std::string_view resource, int64_t count) {
  if (count <= 0) return 0;
  if (resource == "nvidia.com/gpu") return static_cast<double>(count);
  constexpr std::string_view kMig = "nvidia.com/mig-";
  if (!resource.starts_with(kMig)) return 0;
  std::string_view profile = resource.substr(kMig.size());  // "<g>g.<mem>gb"
  int slices = 0;
  auto [p, ec] = std::from_chars(profile.data(), profile.data() + profile.size(), slices);
  if (ec != std::errc() || p == profile.data() + profile.size() || *p != 'g' || slices <= 0 || slices > 7) return 0;
  return static_cast<double>(count) * slices / 7.0;
}

}  // namespace phalanx::cost
