// The node annotation phalanx.io/gpu-topology (core/topology/topology_codec.h). Contract beyond not
// crashing: every topology it accepts encodes, and decodes back to itself (the codec's promise).
#include "core/topology/topology_codec.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace topology = phalanx::topology;
  auto decoded = topology::DecodeTopology(phalanx::fuzz::AsText(data, size));
  if (!decoded.ok()) return 0;
  auto encoded = topology::EncodeTopology(*decoded);
  FUZZ_CHECK(encoded.ok(), encoded.status().message());
  auto again = topology::DecodeTopology(*encoded);
  FUZZ_CHECK(again.ok(), again.status().message());
  FUZZ_CHECK(*again == *decoded, *encoded);
  return 0;
}
