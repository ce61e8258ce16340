// PriceTable: what one GPU-hour costs, per GPU model (the node label phalanx.io/gpu.product)
// and per tier. Read from the chart's `cost` values (a JSON file given to the operator with
// --price-table), by `phalanx report --prices` and by `phalanx simulate --prices`: one parser for all
// three. docs/operator.md "Utilisation and cost".
//
//   {"currency": "USD",
//    "gpuHourly": {"NVIDIA-H100-80GB-HBM3": 2.50, "NVIDIA-A100-SXM4-80GB": 1.60},
//    "defaultGpuHourly": 2.00,
//    "tierMultiplier": {"critical": 1.0, "high": 1.0, "standard": 1.0, "spot": 0.4}}
//
// Price of one GPU-second of a pod = gpuHourly[model] (or defaultGpuHourly for a model the
// table does not list, or a pod whose node is unknown) x tierMultiplier[tier] / 3600.
// MIG devices are priced as a fraction of their parent GPU: GpuEquivalents() below.
// Pure; value type.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/base/result.h"
#include "core/json/json.h"

namespace phalanx::cost {

// The four tiers of docs/architecture.md §2.1, in this order everywhere (tables, metrics).
inline constexpr std::string_view kTiers[] = {"critical", "high", "standard", "spot"};

struct PriceTable {
  std::string currency;                        // e.g. "USD"; never empty once parsed
  std::map<std::string, double> gpu_hourly;    // GPU model -> price of one GPU-hour
  double default_gpu_hourly = 0;               // models not in gpu_hourly
  std::map<std::string, double> tier_multiplier;  // tier -> factor; a tier not listed: 1.0

  // Price of one GPU-hour of `model` before the tier multiplier.
  double Base(std::string_view model) const;
  // Price of one GPU-hour of `model` in `tier`.
  double Hourly(std::string_view model, std::string_view tier) const;
};

// Strict: unknown keys, a negative or non-finite price, a non-number, an unknown tier or a
// missing currency are kInvalidArgument naming the field ("gpuHourly.NVIDIA-H100: must be a
// number >= 0, got string"). `path` prefixes the field names in messages.
Result<PriceTable> ParsePriceTable(const json::Json& doc, std::string_view path = "");
// Parses the text of a price-table file (JSON).
Result<PriceTable> ParsePriceTableText(std::string_view text, std::string_view path = "");
json::Json EncodePriceTable(const PriceTable& table);

// The tier of a pod: its priority class when it is one of the chart's (phalanx-critical,
// -high, -standard, -spot), otherwise the band of its priority as the extender sees it
// (>= 1,000,000 critical, >= 10,000 high, >= 1,000 standard, lower spot; docs/architecture.md §2.1);
// "standard" when neither is known.
std::string TierOf(std::string_view priority_class_name, std::optional<int32_t> priority);

// GPU-equivalents of one extended-resource quantity: nvidia.com/gpu counts 1 per device;
// nvidia.com/mig-<g>g.<mem>gb counts g/7 (a MIG device is priced as the share of its parent
// GPU's 7 compute slices it holds: 1g.10gb = 1/7, 3g.40gb = 3/7, 7g.80gb = 1). Other
// resources: 0. `count` is the resource quantity (devices).
double GpuEquivalents(std::string_view resource, int64_t count);

}  // namespace phalanx::cost
