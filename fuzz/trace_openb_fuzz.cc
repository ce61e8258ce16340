// A openb trace file for `phalanx simulate` (sim/trace/readers.h ReadOpenbPods). The reader takes a path:
// the input goes through a file of this process's own. Contract: jobs come back sorted by submit
// time with sane sizes.
#include "fuzz/fuzz_util.h"
#include "sim/trace/readers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto workload = phalanx::sim::ReadOpenbPods(phalanx::fuzz::WriteTempFile(phalanx::fuzz::AsText(data, size)));
  if (!workload.ok()) return 0;
  for (size_t i = 0; i < workload->jobs.size(); ++i) {
    const auto& job = workload->jobs[i];
    FUZZ_CHECK(job.replicas >= 1 && job.gpus_per_replica >= 0, "job size out of range");
    FUZZ_CHECK(i == 0 || workload->jobs[i - 1].submit <= job.submit, "jobs not sorted by submit time");
  }
  return 0;
}
