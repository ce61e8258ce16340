// Usage accounting of one TrainingJob: GPU-seconds, idle GPU-seconds and their cost, from the
// pods' GPU-holding intervals (docs/operator.md "Utilisation and cost").
//
// A pod holds GPUs from status.startTime (kubelet admitted it and allocated its devices) until
// its containers have all terminated (the latest finishedAt), or until now while any runs —
// a pod being deleted holds them until then too. Its GPUs are the GPU-equivalents its
// containers request (MIG devices as fractions, cost/price_table.h). It is idle from its
// phalanx.io/idle-since annotation (written by the device plugin) while the annotation is set.
//
// One step counts the interval (accounted_until, now] of every pod it saw holding GPUs before and
// moves accounted_until to now. The status remembers what it counted for each pod (`pods`), so the
// operator's view of the pods may lag without the total drifting: a pod seen for the first time is
// counted from its start (never before `since`); a pod seen ended is counted to its finishedAt, even
// past now (kubelet's clock), and never again; a pod counted as holding but seen ended before
// accounted_until gives back what was counted past its end (its watch lagged). The first sight of
// a pod's idle period is back-filled from its idle-since (never before `since`): the status
// remembers which idle periods it has seen (`idlePods`). Pure; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "operator/api/observed_pod.h"
#include "operator/api/training_job.h"
#include "operator/cost/price_table.h"

namespace phalanx::op {

inline constexpr std::string_view kAnnotationIdleSince = "phalanx.io/idle-since";

struct UsageDelta {
  double gpu_seconds = 0;
  double idle_gpu_seconds = 0;
  double cost = 0;
  double idle_cost = 0;
  bool empty() const { return gpu_seconds == 0 && idle_gpu_seconds == 0 && cost == 0 && idle_cost == 0; }
};

struct UsageStep {
  UsageStatus usage;     // the status after this step
  UsageDelta added;      // what this step added
  std::string tier;      // the job's tier (metrics label)
  bool holding = false;  // some pod still holds GPUs: usage keeps growing
  bool idle_set_changed = false;  // a pod became idle or busy, or went away while idle
  bool currency_changed = false;  // the price table's currency differs: cost restarted from 0
  double idle_gpus = 0;  // GPU-equivalents of the pods idle now
};

// `prev`: the status's usage (absent: accounting begins now). `prices`: null = no cost.
UsageStep AccountUsage(const std::optional<UsageStatus>& prev, const std::vector<ObservedPod>& pods,
                       std::string_view priority_class_name, const PriceTable* prices, SystemTime now);

}  // namespace phalanx::op
