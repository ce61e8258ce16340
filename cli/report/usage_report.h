// `phalanx report` from the API server: each TrainingJob's status.usage (docs/operator.md
// "Utilisation and cost") as rows, summed per namespace (team) and per queue (label
// phalanx.io/queue, when jobs carry it), rendered as a table or JSON. Pure; thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "core/base/result.h"
#include "core/json/json.h"

namespace phalanx::cli {

inline constexpr const char* kQueueLabel = "phalanx.io/queue";

struct JobUsageRow {
  std::string ns, name, queue, tier, phase;
  double gpu_hours = 0, idle_gpu_hours = 0, cost = 0, idle_cost = 0;
  std::string currency;  // "" when the operator runs without a price table
  bool has_usage = false;  // status.usage present (an operator with accounting saw the job)
};

struct UsageTotal {
  std::string key;       // namespace or queue
  std::string currency;  // totals never add different currencies
  int jobs = 0;
  double gpu_hours = 0, idle_gpu_hours = 0, cost = 0, idle_cost = 0;
};

struct UsageReport {
  std::vector<JobUsageRow> jobs;        // sorted by namespace, name
  std::vector<UsageTotal> namespaces;   // sorted by key, currency
  std::vector<UsageTotal> queues;       // empty when no job has a queue label
  UsageTotal total;                     // key "*"; currency "" when jobs disagree (see mixed)
  bool mixed_currencies = false;
};

// `list`: a TrainingJobList (items[]). kInvalidArgument naming the item and field when a
// status.usage field has the wrong type ("items[3] (ml/llama): status.usage.gpuSeconds: expected
// number, got string"). Jobs without status.usage are listed with zeros (has_usage false).
Result<UsageReport> BuildUsageReport(const json::Json& list);

std::string RenderUsageTable(const UsageReport& report);
json::Json RenderUsageJson(const UsageReport& report);

// Fixed-width text table: header row, then rows; numbers right-aligned. Shared with sim_cost.
std::string FormatTable(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                        const std::vector<bool>& right_aligned);
std::string Money(double v);   // "1234.56"
std::string Hours(double v);   // "12.3"

}  // namespace phalanx::cli
