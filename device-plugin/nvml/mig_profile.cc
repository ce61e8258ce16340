#include "device-plugin/nvml/mig_profile.h"

#include <fmt/format.h>

namespace phalanx::nvml {

uint64_t MigMemoryGb(uint64_t mig_memory_mib, uint64_t gpu_memory_mib) {
  if (gpu_memory_mib == 0) return 0;
  // Integer form of the formula in the header, so names never depend on float rounding.
  const uint64_t eighths = (8 * mig_memory_mib + gpu_memory_mib - 1) / gpu_memory_mib;
  const uint64_t gpu_gb = (gpu_memory_mib + 1023) / 1024;
  // round(eighths * gpu_gb / 8), halves rounded up.
  return (2 * eighths * gpu_gb + 8) / 16;
}

std::string MigProfileName(const MigProfileSpec& spec, uint64_t gpu_memory_mib) {
  return fmt::format("{}g.{}gb{}", spec.slices, MigMemoryGb(spec.memory_mib, gpu_memory_mib),
                     spec.media_extensions ? "+me" : "");
}

}  // namespace phalanx::nvml
