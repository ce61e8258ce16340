// The Phalanx CSV format (docs/simulator.md): one job per row, columns by header name.
#include <fmt/format.h>

#include "core/placement/mig.h"
#include "sim/model/tiers.h"
#include "sim/trace/csv_table.h"
#include "sim/trace/readers.h"

namespace phalanx::sim {

Result<Workload> ReadPhalanxCsv(const std::string& path, const ReaderOptions& options) {
  PHX_ASSIGN_OR_RETURN(CsvTable t, CsvTable::Open(path));
  PHX_ASSIGN_OR_RETURN(int c_submit, t.RequireColumn("submit_time"));
  PHX_ASSIGN_OR_RETURN(int c_duration, t.RequireColumn("duration"));
  PHX_ASSIGN_OR_RETURN(int c_replicas, t.RequireColumn("replicas"));
  PHX_ASSIGN_OR_RETURN(int c_gpus, t.RequireColumn("gpus_per_replica"));
  const auto c_tier = t.Column("tier");
  const auto c_queue = t.Column("queue");
  const auto c_ckpt = t.Column("checkpoint_interval");
  const auto c_name = t.Column("name");
  const auto c_milli = t.Column("gpu_milli");
  const auto c_pool = t.Column("pool");
  const auto c_mig = t.Column("mig_profile");
  const auto c_deadline = t.Column("active_deadline");
  Workload w;
  w.source = path;
  w.format = "phalanx";
  while (t.Next()) {
    Job j;
    j.line = t.line();
    PHX_ASSIGN_OR_RETURN(j.submit, t.Double(c_submit));
    PHX_ASSIGN_OR_RETURN(j.duration, t.Double(c_duration));
    PHX_ASSIGN_OR_RETURN(int64_t replicas, t.Int(c_replicas));
    PHX_ASSIGN_OR_RETURN(int64_t gpus, t.Int(c_gpus));
    if (j.submit < 0) return t.Error(c_submit, "negative submit time");
    if (j.duration < 0) return t.Error(c_duration, "negative duration");
    if (replicas < 1 || replicas > 100000) return t.Error(c_replicas, "must be 1..100000");
    if (gpus < 1 || gpus > 64) return t.Error(c_gpus, "must be 1..64");
    j.replicas = static_cast<int>(replicas);
    j.gpus_per_replica = static_cast<int>(gpus);
    if (c_tier && !t.Field(*c_tier).empty()) {
      std::string_view tier = t.Field(*c_tier);
      if (auto p = TierPriority(tier)) {
        j.priority = *p;
      } else {
        PHX_ASSIGN_OR_RETURN(int64_t prio, t.Int(*c_tier));
        j.priority = static_cast<int>(prio);
      }
      j.tier = TierName(j.priority);
    }
    if (c_queue) j.queue = std::string(t.Field(*c_queue));
    if (c_ckpt && !t.Field(*c_ckpt).empty()) {
      PHX_ASSIGN_OR_RETURN(j.checkpoint_interval, t.Double(*c_ckpt));
      if (j.checkpoint_interval < 0) return t.Error(*c_ckpt, "negative checkpoint interval");
    }
    if (c_name && !t.Field(*c_name).empty()) j.name = std::string(t.Field(*c_name));
    if (j.name.empty()) j.name = fmt::format("job-{}", j.line);
    if (c_milli && !t.Field(*c_milli).empty()) {
      PHX_ASSIGN_OR_RETURN(int64_t milli, t.Int(*c_milli));
      if (milli < 1 || milli > 1000) return t.Error(*c_milli, "must be 1..1000");
      if (milli < 1000 && (j.replicas != 1 || j.gpus_per_replica != 1))
        return t.Error(*c_milli, "a GPU share (< 1000) needs replicas=1 and gpus_per_replica=1");
      j.milli = static_cast<int>(milli);
    }
    if (c_pool && !t.Field(*c_pool).empty()) j.pool = std::string(t.Field(*c_pool));
    if (c_deadline && !t.Field(*c_deadline).empty()) {
      PHX_ASSIGN_OR_RETURN(j.active_deadline, t.Double(*c_deadline));
      if (!(j.active_deadline > 0)) return t.Error(*c_deadline, "must be > 0 seconds (empty = none)");
    }
    if (c_mig && !t.Field(*c_mig).empty()) {
      j.mig_profile = std::string(t.Field(*c_mig));
      if (!placement::MigComputeSlices(j.mig_profile))
        return t.Error(*c_mig, fmt::format("\"{}\" is not a MIG profile (like 1g.10gb or 3g.40gb)", j.mig_profile));
      if (j.replicas != 1) return t.Error(*c_mig, "a MIG job is one pod: needs replicas=1 (gpus_per_replica = MIG devices)");
      if (j.IsShare()) return t.Error(*c_mig, "a MIG job cannot also be a GPU share (gpu_milli)");
    }
    w.jobs.push_back(std::move(j));
    if (options.max_jobs > 0 && static_cast<int64_t>(w.jobs.size()) >= options.max_jobs) break;
  }
  FinalizeWorkload(w);
  ScaleSubmitGaps(w, options.time_scale);
  return w;
}

}  // namespace phalanx::sim
