#include "sim/engine/queue_tracker.h"

#include <algorithm>
#include <cmath>

namespace phalanx::sim {

QueueTracker::QueueTracker(const scheduling::QueueConfig& config, double capacity_gpus, double start)
    : resolver_(config), capacity_(capacity_gpus), start_(start) {
  if (!resolver_.enabled()) return;
  for (const scheduling::QueueSpec& q : config.queues) {
    if (!resolver_.IsLeaf(q.name)) continue;  // parents run no work of their own
    names_.push_back(q.name);
    double nominal = 0;
    for (const scheduling::PoolQuota& p : q.quotas) nominal += static_cast<double>(p.nominal) / scheduling::kMilliGpu;
    nominal_.push_back(nominal);
    weight_field_.push_back(q.weight);
  }
  double total_nominal = 0;
  for (double n : nominal_) total_nominal += n;
  weights_ = total_nominal > 0 ? nominal_ : weight_field_;
  const size_t n = names_.size();
  running_.assign(n, 0);
  demand_.assign(n, 0);
  jobs_.assign(n, 0);
  preemptions_.assign(n, 0);
  reclaimed_.assign(n, 0);
  usage_area_.assign(n, 0);
  below_time_.assign(n, 0);
  below_area_.assign(n, 0);
}

int QueueTracker::IndexOf(const std::string& queue) const {
  if (!enabled()) return -1;
  const std::string& name = resolver_.Resolve(queue);
  auto it = std::find(names_.begin(), names_.end(), name);
  return it == names_.end() ? -1 : static_cast<int>(it - names_.begin());
}

void QueueTracker::Preempted(int q, bool reclaim) {
  if (q < 0) return;
  ++preemptions_[static_cast<size_t>(q)];
  if (reclaim) ++reclaimed_[static_cast<size_t>(q)];
}

std::vector<double> QueueTracker::FairShares(const std::vector<double>& demand, const std::vector<double>& weights,
                                             double capacity) {
  std::vector<double> fair(demand.size(), 0);
  std::vector<bool> open(demand.size(), false);
  for (size_t i = 0; i < demand.size(); ++i) open[i] = demand[i] > 0;
  double left = capacity;
  for (;;) {
    double weight = 0;
    for (size_t i = 0; i < demand.size(); ++i)
      if (open[i]) weight += weights[i] > 0 ? weights[i] : 0;
    if (weight <= 0 || left <= 1e-9) break;
    bool capped = false;
    for (size_t i = 0; i < demand.size(); ++i) {
      if (!open[i]) continue;
      const double share = left * std::max(0.0, weights[i]) / weight;
      if (demand[i] - fair[i] <= share) {
        left -= demand[i] - fair[i];
        fair[i] = demand[i];
        open[i] = false;
        capped = true;
      }
    }
    if (capped) continue;
    for (size_t i = 0; i < demand.size(); ++i)
      if (open[i]) fair[i] += left * std::max(0.0, weights[i]) / weight;
    break;
  }
  return fair;
}

double QueueTracker::Jain(const std::vector<double>& x) {
  if (x.empty()) return 1;
  double sum = 0, sq = 0;
  for (double v : x) {
    sum += v;
    sq += v * v;
  }
  return sq > 0 ? sum * sum / (static_cast<double>(x.size()) * sq) : 1;
}

void QueueTracker::AddToWindow(size_t w, double dt, const std::vector<double>& fair) {
  const size_t n = names_.size();
  if (windows_.size() <= w) windows_.resize(w + 1, Window{std::vector<double>(n, 0), std::vector<double>(n, 0), std::vector<double>(n, 0)});
  Window& win = windows_[w];
  for (size_t i = 0; i < n; ++i) {
    win.usage[i] += running_[i] * dt;
    win.fair[i] += fair[i] * dt;
    if (demand_[i] > 1e-9) win.demand_time[i] += dt;
  }
}

void QueueTracker::Advance(double from, double to) {
  if (!enabled() || to <= from) return;
  const double dt = to - from;
  const size_t n = names_.size();
  int contending = 0;
  for (size_t i = 0; i < n; ++i) {
    usage_area_[i] += running_[i] * dt;
    const double entitled = std::min(demand_[i], nominal_[i]);
    if (running_[i] + 1e-9 < entitled) {
      below_time_[i] += dt;
      below_area_[i] += (entitled - running_[i]) * dt;
    }
    if (demand_[i] > 1e-9) ++contending;
  }
  // The fair share at this instant (demand is constant between two calls). A window's fair
  // share is its time average: water-filling the window's mean demand instead would
  // promise a queue whose demand crossed its share during the window more than any
  // schedule could give it (min(mean d, s) >= mean min(d, s)).
  const std::vector<double> fair = FairShares(demand_, weights_, capacity_);
  if (contending >= 2) {
    std::vector<double> x;
    for (size_t i = 0; i < n; ++i)
      if (demand_[i] > 1e-9 && fair[i] > 1e-9) x.push_back(running_[i] / fair[i]);
    jain_area_ += Jain(x) * dt;
    contended_time_ += dt;
  }
  // Split at window boundaries.
  double t = from;
  while (t < to) {
    const auto w = static_cast<size_t>(std::max(0.0, std::floor((t - start_) / kWindow)));
    const double edge = start_ + static_cast<double>(w + 1) * kWindow;
    const double until = std::min(to, edge);
    AddToWindow(w, until - t, fair);
    t = until;
  }
}

void QueueTracker::FillSample(Sample& s) const {
  if (!enabled()) return;
  s.queue_gpus = running_;
  s.queue_demand = demand_;
}

void QueueTracker::FillReport(PolicyReport& rep, double end) const {
  if (!enabled()) return;
  const size_t n = names_.size();
  const double span = std::max(1.0, end - start_);
  std::vector<double> worst(n, 0);
  FairnessReport& f = rep.fairness;
  for (size_t w = 0; w < windows_.size(); ++w) {
    const Window& win = windows_[w];
    const double length = std::min(kWindow, end - (start_ + static_cast<double>(w) * kWindow));
    if (length < kWindow * 0.999) continue;  // the last, partial window
    int contending = 0;
    for (size_t i = 0; i < n; ++i)
      if (win.demand_time[i] >= length * 0.999) ++contending;
    if (contending < 2) continue;
    ++f.windows;
    WindowReport wr;
    wr.start_hours = static_cast<double>(w) * kWindow / 3600;
    bool all_within = true;
    for (size_t i = 0; i < n; ++i) {
      const double usage = win.usage[i] / length, fair = win.fair[i] / length;
      if (win.demand_time[i] < length * 0.999 || fair <= 1e-9) continue;
      const double deviation = std::abs(usage - fair) / fair;
      wr.queues.push_back(WindowReport::Queue{names_[i], usage, fair, deviation});
      worst[i] = std::max(worst[i], deviation);
      f.worst_window_deviation = std::max(f.worst_window_deviation, deviation);
      all_within = all_within && deviation <= kTolerance;
    }
    if (all_within) ++f.windows_within_10pct;
    f.contended_windows.push_back(std::move(wr));
  }
  f.jain_index = contended_time_ > 0 ? jain_area_ / contended_time_ : 1;
  f.contended_hours = contended_time_ / 3600;
  for (size_t i = 0; i < n; ++i) {
    QueueReport q;
    q.name = names_[i];
    q.nominal_gpus = nominal_[i];
    q.weight = weight_field_[i];
    q.jobs = jobs_[i];
    q.gpu_hours = usage_area_[i] / 3600;
    q.mean_share = capacity_ > 0 ? usage_area_[i] / span / capacity_ : 0;
    q.hours_below_entitlement = below_time_[i] / 3600;
    q.gpu_hours_below_entitlement = below_area_[i] / 3600;
    q.preemptions = preemptions_[i];
    q.reclaimed = reclaimed_[i];
    q.worst_window_deviation = worst[i];
    f.reclaim_preemptions += reclaimed_[i];
    rep.queues.push_back(std::move(q));
  }
  f.reclaims_per_job = rep.jobs > 0 ? static_cast<double>(f.reclaim_preemptions) / rep.jobs : 0;
}

}  // namespace phalanx::sim
