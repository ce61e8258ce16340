// The GPU price table file (core/cost/price_table.h). Contract beyond not crashing: a table it
// accepts encodes and parses back to the same table.
#include "core/cost/price_table.h"
#include "core/json/json.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace cost = phalanx::cost;
  auto table = cost::ParsePriceTableText(phalanx::fuzz::AsText(data, size));
  if (!table.ok()) return 0;
  const phalanx::json::Json encoded = cost::EncodePriceTable(*table);
  auto again = cost::ParsePriceTable(encoded);
  FUZZ_CHECK(again.ok(), again.status().message());
  FUZZ_CHECK(again->currency == table->currency && again->gpu_hourly == table->gpu_hourly &&
                 again->default_gpu_hourly == table->default_gpu_hourly &&
                 again->tier_multiplier == table->tier_multiplier,
             phalanx::json::Dump(encoded));
  return 0;
}
