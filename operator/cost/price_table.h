// The operator's names for the shared price table (core/cost/price_table.h): the operator,
// `phalanx report` and `phalanx simulate` read prices with one parser.
#pragma once

#include "core/cost/price_table.h"

namespace phalanx::op {

using cost::EncodePriceTable;
using cost::GpuEquivalents;
using cost::kTiers;
using cost::ParsePriceTable;
using cost::ParsePriceTableText;
using cost::PriceTable;
using cost::TierOf;

}  // namespace phalanx::op
