// The body the three trace-reader fuzz targets share: the readers take a path, so the input goes
// through a file of this process's own. Contract: a workload that reads comes back sorted by
// submit time with sane job sizes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_util.h"
#include "sim/trace/readers.h"

namespace phalanx::fuzz {

template <typename Reader>
int FuzzTraceReader(Reader read, const uint8_t* data, size_t size) {
  auto workload = read(WriteTempFile(AsText(data, size)), sim::ReaderOptions{});
  if (!workload.ok()) return 0;
  for (size_t i = 0; i < workload->jobs.size(); ++i) {
    const auto& job = workload->jobs[i];
    FUZZ_CHECK(job.replicas >= 1 && job.gpus_per_replica >= 0, "job size out of range");
    FUZZ_CHECK(i == 0 || workload->jobs[i - 1].submit <= job.submit, "jobs not sorted by submit time");
  }
  return 0;
}

}  // namespace phalanx::fuzz
