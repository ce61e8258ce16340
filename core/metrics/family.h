// Family: one metric name with its help, type and label names, and its children (one
// per distinct tuple of label values), e.g. phalanx_extender_requests_total{verb,result}.
//
// Invariants: label names are fixed at registration; children are created on first use
// and never removed, so the Counter&/Gauge&/Histogram& handed out stay valid for the
// Registry's lifetime and callers cache them (STYLE §2.5: one metrics struct per
// component, built at startup). A family without label names has its single child from
// the start, so it is exposed (as 0) before the first event.
// Thread-safe: WithLabels() takes the family mutex (creation path, not the hot path);
// exposition copies the child pointers under the same mutex and reads values without it.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/base/result.h"
#include "core/metrics/counter.h"
#include "core/metrics/gauge.h"
#include "core/metrics/histogram.h"

namespace phalanx::metrics {

enum class MetricType { kCounter, kGauge, kHistogram };

// "counter", "gauge", "histogram": the # TYPE keyword.
std::string_view MetricTypeName(MetricType type);

class FamilyBase {
 public:
  virtual ~FamilyBase() = default;
  FamilyBase(const FamilyBase&) = delete;
  FamilyBase& operator=(const FamilyBase&) = delete;

  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  MetricType type() const { return type_; }
  const std::vector<std::string>& label_names() const { return label_names_; }
  // Empty except for histograms.
  const std::vector<double>& bucket_bounds() const { return bucket_bounds_; }

  // Appends the family in text format 0.0.4 (HELP, TYPE, samples); nothing when it has
  // no children yet.
  virtual void AppendText(std::string& out) const = 0;

 protected:
  FamilyBase(std::string name, std::string help, MetricType type,
             std::vector<std::string> label_names, std::vector<double> bucket_bounds)
      : name_(std::move(name)),
        help_(std::move(help)),
        type_(type),
        label_names_(std::move(label_names)),
        bucket_bounds_(std::move(bucket_bounds)) {}

  // kInvalidArgument unless `values` has one entry per label name.
  Status CheckArity(const std::vector<std::string>& values) const;

 private:
  const std::string name_;
  const std::string help_;
  const MetricType type_;
  const std::vector<std::string> label_names_;
  const std::vector<double> bucket_bounds_;
};

template <typename T>
class Family final : public FamilyBase {
 public:
  static constexpr MetricType kType = std::is_same_v<T, Counter> ? MetricType::kCounter
                                      : std::is_same_v<T, Gauge> ? MetricType::kGauge
                                                                 : MetricType::kHistogram;

  // Built by the Registry from validated arguments.
  Family(std::string name, std::string help, std::vector<std::string> label_names,
         std::vector<double> bucket_bounds = {})
      : FamilyBase(std::move(name), std::move(help), kType, std::move(label_names),
                   std::move(bucket_bounds)) {
    if (this->label_names().empty()) children_.emplace(std::vector<std::string>{}, NewChild());
  }

  // The child for `label_values` (one per label name, in declaration order), created on
  // first use. Never null; valid for the Registry's lifetime. kInvalidArgument on a wrong
  // number of values.
  Result<T*> WithLabels(const std::vector<std::string>& label_values) {
    PHX_RETURN_IF_ERROR(CheckArity(label_values));
    std::lock_guard<std::mutex> lock(mu_);
    auto it = children_.find(label_values);
    if (it == children_.end()) it = children_.emplace(label_values, NewChild()).first;
    return it->second.get();
  }

  void AppendText(std::string& out) const override;

 private:
  std::unique_ptr<T> NewChild() const {
    if constexpr (std::is_same_v<T, Histogram>) {
      return std::make_unique<T>(bucket_bounds());
    } else {
      return std::make_unique<T>();
    }
  }

  mutable std::mutex mu_;
  // Ordered by label values: the deterministic child order of the exposition. Map nodes
  // never move, so keys and children can be read after the mutex is released.
  std::map<std::vector<std::string>, std::unique_ptr<T>> children_;  // guarded by mu_
};

using CounterFamily = Family<Counter>;
using GaugeFamily = Family<Gauge>;
using HistogramFamily = Family<Histogram>;

extern template class Family<Counter>;
extern template class Family<Gauge>;
extern template class Family<Histogram>;

}  // namespace phalanx::metrics
