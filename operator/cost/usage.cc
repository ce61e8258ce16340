#include "operator/cost/usage.h"

#include <algorithm>

#include "operator/api/time_format.h"

namespace phalanx::op {

namespace {

// When the pod stopped holding GPUs; nullopt while it still holds them. A pod that ended
// without a recorded finishedAt yields its start (nothing more to count).
std::optional<SystemTime> HeldUntil(const ObservedPod& pod, SystemTime start) {
  bool any_running = false, all_terminated = !pod.containers.empty();
  std::optional<SystemTime> last;
  for (const ObservedContainer& c : pod.containers) {
    any_running = any_running || c.running;
    all_terminated = all_terminated && c.terminated;
    if (c.finished_at && (!last || *c.finished_at > *last)) last = c.finished_at;
  }
  if (any_running) return std::nullopt;
  if (pod.terminal() || all_terminated) return last ? std::max(*last, start) : start;
  return std::nullopt;
}

// Seconds of [a1, a2] ∩ [b1, b2].
double Overlap(SystemTime a1, SystemTime a2, SystemTime b1, SystemTime b2) {
  return std::max(0.0, SecondsBetween(std::max(a1, b1), std::min(a2, b2)));
}

}  // namespace

UsageStep AccountUsage(const std::optional<UsageStatus>& prev, const std::vector<ObservedPod>& pods,
                       std::string_view priority_class_name, const PriceTable* prices, SystemTime now) {
  const SystemTime t = TruncateToSeconds(now);  // status times have second precision
  UsageStep step;
  if (prev) {
    step.usage = *prev;
  } else {
    step.usage.since = t;
    step.usage.accounted_until = t;
  }
  UsageStatus& u = step.usage;
  if (prices != nullptr && u.currency != prices->currency) {
    step.currency_changed = !u.currency.empty();
    u.cost = 0;
    u.idle_cost = 0;
    u.currency = prices->currency;
  }
  const SystemTime from = u.accounted_until;
  const SystemTime to = std::max(t, from);  // a clock that went back counts nothing
  std::map<std::string, std::string> idle_now;
  // Statuses written before `pods` existed counted every visible pod up to accounted_until.
  const bool tracked = prev && prev->pods.has_value();
  std::map<std::string, std::string> pods_now;
  step.tier = TierOf(priority_class_name, std::nullopt);
  bool tier_from_pod = false;
  static const std::string kIdleKey(kAnnotationIdleSince);
  std::optional<int32_t> tier_priority;  // the pods of a job share a priority: one lookup
  std::string tier;
  for (const ObservedPod& pod : pods) {
    if (!pod.start_time || pod.gpus <= 0) continue;
    if (tier.empty() || pod.priority != tier_priority) {
      tier = TierOf(priority_class_name, pod.priority);
      tier_priority = pod.priority;
    }
    if (!tier_from_pod) {
      step.tier = tier;
      tier_from_pod = true;
    }
    const SystemTime start = *pod.start_time;
    const std::optional<SystemTime> until = HeldUntil(pod, start);
    const SystemTime end = until.value_or(to);
    if (!until) step.holding = true;
    const double per_second = prices != nullptr ? prices->Hourly(pod.gpu_product, tier) / 3600.0 : 0;

    // What this pod was counted for before: nothing (new), up to `from` (holding), all (released).
    const std::string* before = nullptr;
    if (tracked) {
      auto it = prev->pods->find(pod.name);
      if (it != prev->pods->end()) before = &it->second;
    }
    const bool counted_holding = before != nullptr && *before == kUsagePodHolding;
    const bool counted_released = before != nullptr && *before == kUsagePodReleased;
    pods_now[pod.name] = std::string(until ? kUsagePodReleased : kUsagePodHolding);
    // To its end, even past `to` (kubelet's clock may run ahead of ours), or to now.
    const SystemTime upper = until ? std::max(*until, to) : to;
    double held = 0;
    if (counted_released && until) {
      // Counted to its end already.
    } else if (!tracked || counted_holding || counted_released) {
      // Counted up to `from`: the rest of its interval; when its end is before `from` (our view
      // of it lagged), what was counted past that end is given back — only for a pod the status
      // says it counted as holding (a status without `pods` may have counted it to its end).
      held = pod.gpus * Overlap(from, upper, start, end);
      if (until && *until < from && counted_holding) {
        held -= pod.gpus * SecondsBetween(std::max({*until, start, u.since}), from);
      }
    } else {
      // First seen: from its start (not before accounting began).
      held = pod.gpus * Overlap(u.since, upper, start, end);
    }
    step.added.gpu_seconds += held;
    step.added.cost += held * per_second;

    auto ann = pod.annotations.find(kIdleKey);
    if (ann == pod.annotations.end()) continue;
    auto idle_since = ParseRfc3339(ann->second);
    if (!idle_since.ok()) continue;  // the device plugin's to fix; never guessed
    idle_now[pod.name] = ann->second;
    if (!until) step.idle_gpus += pod.gpus;
    // A period seen before counts from accounted_until; a new one from its beginning.
    const SystemTime idle_from = prev && prev->idle_pods.count(pod.name) ? from : u.since;
    const double idle = pod.gpus * Overlap(idle_from, to, std::max(*idle_since, start), end);
    step.added.idle_gpu_seconds += idle;
    step.added.idle_cost += idle * per_second;
  }
  step.idle_set_changed = idle_now.size() != u.idle_pods.size() ||
                          !std::equal(idle_now.begin(), idle_now.end(), u.idle_pods.begin(),
                                      [](const auto& a, const auto& b) { return a.first == b.first; });
  u.gpu_seconds += step.added.gpu_seconds;
  u.idle_gpu_seconds += step.added.idle_gpu_seconds;
  u.cost += step.added.cost;
  u.idle_cost += step.added.idle_cost;
  u.accounted_until = to;
  u.idle_pods = std::move(idle_now);
  u.pods = std::move(pods_now);
  return step;
}

}  // namespace phalanx::op
