// Alibaba openb pod-list reader. Mapping (docs/simulator.md):
//   num_gpu 0 -> skipped (no GPU: outside the GPU ledger), counted in the notes;
//   num_gpu 1 with gpu_milli < 1000 -> a one-GPU share; else num_gpu whole GPUs, one pod;
//   gpu_spec with one model -> that pool; several or none -> any pool;
//   qos LS -> high, Guaranteed/Burstable -> standard, BE -> spot; no checkpoints;
//   submit = creation_time (gaps divided by time_scale); duration = deletion_time -
//   scheduled_time (creation_time when never scheduled).
#include <fmt/format.h>

#include "sim/model/tiers.h"
#include "sim/trace/csv_table.h"
#include "sim/trace/readers.h"

namespace phalanx::sim {

Result<Workload> ReadOpenbPods(const std::string& path, const ReaderOptions& options) {
  PHX_ASSIGN_OR_RETURN(CsvTable t, CsvTable::Open(path));
  PHX_ASSIGN_OR_RETURN(int c_name, t.RequireColumn("name"));
  PHX_ASSIGN_OR_RETURN(int c_num, t.RequireColumn("num_gpu"));
  PHX_ASSIGN_OR_RETURN(int c_milli, t.RequireColumn("gpu_milli"));
  const auto c_spec = t.Column("gpu_spec");
  const auto c_qos = t.Column("qos");
  const auto c_create = t.Column("creation_time");
  const auto c_delete = t.Column("deletion_time");
  const auto c_sched = t.Column("scheduled_time");
  Workload w;
  w.source = path;
  w.format = "openb";
  int skipped_cpu = 0, multi_spec = 0;
  while (t.Next()) {
    PHX_ASSIGN_OR_RETURN(int64_t num, t.Int(c_num));
    if (num < 0 || num > 64) return t.Error(c_num, "must be 0..64");
    if (num == 0) {
      ++skipped_cpu;
      continue;
    }
    Job j;
    j.line = t.line();
    j.name = std::string(t.Field(c_name));
    PHX_ASSIGN_OR_RETURN(int64_t milli, t.Int(c_milli));
    if (milli < 0 || milli > 1000) return t.Error(c_milli, "must be 0..1000");
    j.replicas = 1;
    j.gpus_per_replica = static_cast<int>(num);
    if (num == 1 && milli > 0 && milli < 1000) j.milli = static_cast<int>(milli);
    if (c_spec) {
      std::string_view spec = t.Field(*c_spec);
      if (!spec.empty() && spec.find('|') == std::string_view::npos) {
        j.pool = std::string(spec);
      } else if (!spec.empty()) {
        ++multi_spec;
      }
    }
    std::string_view qos = c_qos ? t.Field(*c_qos) : std::string_view("LS");
    j.priority = qos == "LS" ? kHighPriority : (qos == "BE" ? kSpotPriority : kStandardPriority);
    j.tier = TierName(j.priority);
    j.queue = std::string(qos);
    if (c_create && c_delete) {
      PHX_ASSIGN_OR_RETURN(double created, t.Double(*c_create));
      PHX_ASSIGN_OR_RETURN(double deleted, t.Double(*c_delete));
      double start = created;
      if (c_sched && !t.Field(*c_sched).empty()) {
        PHX_ASSIGN_OR_RETURN(double sched, t.Double(*c_sched));
        if (sched > 0) start = sched;
      }
      if (deleted < start) return t.Error(*c_delete, "deletion_time before the pod started (negative duration)");
      j.submit = created;
      j.duration = deleted - start;
    } else {
      // multigpu* lists have no times: arrival-only, in file order.
      j.submit = static_cast<double>(w.jobs.size());
      j.duration = 1e12;
    }
    w.jobs.push_back(std::move(j));
  }
  FinalizeWorkload(w);
  ScaleSubmitGaps(w, options.time_scale);
  if (options.max_jobs > 0 && static_cast<int64_t>(w.jobs.size()) > options.max_jobs)
    w.jobs.resize(static_cast<size_t>(options.max_jobs));
  w.notes.push_back(fmt::format("openb: {} CPU-only pods skipped; {} pods allowed several GPU models (any pool)",
                                skipped_cpu, multi_spec));
  w.notes.push_back("openb: qos LS -> high, BE -> spot, others standard; no checkpoints");
  return w;
}

Result<Workload> ReadTrace(const std::string& path, const std::string& format, const ReaderOptions& options) {
  if (format == "phalanx") return ReadPhalanxCsv(path, options);
  if (format == "philly") return ReadPhillyCsv(path, options);
  if (format == "openb") return ReadOpenbPods(path, options);
  return InvalidArgumentError(fmt::format("unknown trace format \"{}\" (phalanx | philly | openb)", format));
}

}  // namespace phalanx::sim
