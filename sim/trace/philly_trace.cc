// Philly (Pollux-preprocessed) reader. Mapping (docs/simulator.md):
//   num_gpus <= 8  -> one member of num_gpus GPUs (a single pod);
//   num_gpus  > 8  -> a gang of ceil(num_gpus / 8) members of ceil(num_gpus / members)
//                     GPUs (32 -> 4 x 8, 12 -> 2 x 6);
//   submit         -> seconds after the earliest timestamp, gaps divided by time_scale;
//   cluster (VC)   -> queue; tier and checkpoint interval by the seeded rule.
#include <algorithm>
#include <cstdio>
#include <ctime>

#include <fmt/format.h>

#include "sim/model/tiers.h"
#include "sim/trace/csv_table.h"
#include "sim/trace/readers.h"

namespace phalanx::sim {
namespace {

// "2017-10-09 07:01:55" -> seconds since the epoch (UTC).
bool ParseTimestamp(std::string_view s, int64_t& out) {
  int y, mo, d, h, mi, se;
  std::string buf(s);
  if (std::sscanf(buf.c_str(), "%d-%d-%d %d:%d:%d", &y, &mo, &d, &h, &mi, &se) != 6) return false;
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = se;
  out = static_cast<int64_t>(timegm(&tm));
  return true;
}

}  // namespace

void AssignSeededTierAndCheckpoint(Job& j, uint64_t seed, uint64_t index) {
  const double u = SeededUnit(seed, index, 1);
  j.priority = u < 0.10 ? kHighPriority : (u < 0.80 ? kStandardPriority : kSpotPriority);
  j.tier = TierName(j.priority);
  j.checkpoint_interval = SeededUnit(seed, index, 2) < 0.75 ? 1800 : 0;
}

Result<Workload> ReadPhillyCsv(const std::string& path, const ReaderOptions& options) {
  PHX_ASSIGN_OR_RETURN(CsvTable t, CsvTable::Open(path));
  PHX_ASSIGN_OR_RETURN(int c_ts, t.RequireColumn("timestamp"));
  PHX_ASSIGN_OR_RETURN(int c_duration, t.RequireColumn("duration"));
  PHX_ASSIGN_OR_RETURN(int c_gpus, t.RequireColumn("num_gpus"));
  const auto c_cluster = t.Column("cluster");
  Workload w;
  w.source = path;
  w.format = "philly";
  std::vector<int64_t> stamps;
  while (t.Next()) {
    Job j;
    j.line = t.line();
    int64_t ts = 0;
    if (!ParseTimestamp(t.Field(c_ts), ts)) return t.Error(c_ts, fmt::format("bad timestamp \"{}\"", t.Field(c_ts)));
    PHX_ASSIGN_OR_RETURN(j.duration, t.Double(c_duration));
    if (j.duration < 0) return t.Error(c_duration, "negative duration");
    PHX_ASSIGN_OR_RETURN(int64_t n, t.Int(c_gpus));
    // The Phalanx CSV's bound (100000 replicas) in 8-GPU members; more overflows the replica count.
    if (n < 1 || n > 800000) return t.Error(c_gpus, "must be 1..800000");
    if (n <= 8) {
      j.replicas = 1;
      j.gpus_per_replica = static_cast<int>(n);
    } else {
      j.replicas = static_cast<int>((n + 7) / 8);
      j.gpus_per_replica = static_cast<int>((n + j.replicas - 1) / j.replicas);
    }
    if (c_cluster) j.queue = std::string(t.Field(*c_cluster));
    j.name = fmt::format("philly-{}", j.line);
    j.submit = static_cast<double>(ts);
    w.jobs.push_back(std::move(j));
  }
  if (w.jobs.empty()) return InvalidArgumentError(fmt::format("{}: no jobs", path));
  FinalizeWorkload(w);
  const double t0 = w.jobs.front().submit;
  const double scale = options.time_scale > 0 ? options.time_scale : 1;
  for (Job& j : w.jobs) {
    j.submit = (j.submit - t0) / scale;
    AssignSeededTierAndCheckpoint(j, options.seed, static_cast<uint64_t>(j.line));
  }
  if (options.max_jobs > 0 && static_cast<int64_t>(w.jobs.size()) > options.max_jobs)
    w.jobs.resize(static_cast<size_t>(options.max_jobs));
  w.notes.push_back("philly: jobs > 8 GPUs are gangs of ceil(n/8) members; <= 8 GPUs one pod");
  w.notes.push_back(fmt::format("philly: tiers 10% high / 70% standard / 20% spot, 75% checkpoint every 1800 s (seed {})",
                                options.seed));
  if (scale != 1) w.notes.push_back(fmt::format("philly: submit gaps divided by {:g}", scale));
  return w;
}

}  // namespace phalanx::sim
