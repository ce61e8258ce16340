#include "core/metrics/family.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/metrics/exposition.h"

namespace phalanx::metrics {
namespace {

// Pointers into a family's child map, copied under its mutex so values can be read and
// formatted without holding it (writers never take it; creators wait only for the copy).
template <typename T>
using ChildRefs = std::vector<std::pair<const std::vector<std::string>*, const T*>>;

// Per-scrape context of a family: the formatted bucket bounds, computed once per family
// rather than once per child.
struct FamilyContext {
  const FamilyBase& family;
  std::vector<std::string> le;  // histograms: one per bound, then "+Inf"
};

void AppendChild(std::string& out, const FamilyContext& ctx,
                 const std::vector<std::string>& values, const Counter& counter) {
  const FamilyBase& family = ctx.family;
  AppendSeries(out, family.name(), "", family.label_names(), values);
  AppendValue(out, counter.Value());
  out += '\n';
}

void AppendChild(std::string& out, const FamilyContext& ctx,
                 const std::vector<std::string>& values, const Gauge& gauge) {
  const FamilyBase& family = ctx.family;
  AppendSeries(out, family.name(), "", family.label_names(), values);
  AppendValue(out, gauge.Value());
  out += '\n';
}

void AppendChild(std::string& out, const FamilyContext& ctx,
                 const std::vector<std::string>& values, const Histogram& histogram) {
  const FamilyBase& family = ctx.family;
  const Histogram::Snapshot snap = histogram.Snap();
  for (size_t i = 0; i < snap.cumulative.size(); ++i) {
    AppendSeries(out, family.name(), "_bucket", family.label_names(), values, ctx.le[i]);
    AppendValue(out, snap.cumulative[i]);
    out += '\n';
  }
  AppendSeries(out, family.name(), "_sum", family.label_names(), values);
  AppendValue(out, snap.sum);
  out += '\n';
  AppendSeries(out, family.name(), "_count", family.label_names(), values);
  AppendValue(out, snap.count);
  out += '\n';
}

}  // namespace

std::string_view MetricTypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter: return "counter";
    case MetricType::kGauge: return "gauge";
    case MetricType::kHistogram: return "histogram";
  }
  return "untyped";
}

Status FamilyBase::CheckArity(const std::vector<std::string>& values) const {
  if (values.size() == label_names_.size()) return OkStatus();
  return InvalidArgumentError(fmt::format(
      "metric {}: got {} label value(s) [{}] for {} label name(s) [{}]", name_, values.size(),
      fmt::join(values, ","), label_names_.size(), fmt::join(label_names_, ",")));
}

template <typename T>
void Family<T>::AppendText(std::string& out) const {
  ChildRefs<T> refs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    refs.reserve(children_.size());
    for (const auto& [values, child] : children_) refs.emplace_back(&values, child.get());
  }
  if (refs.empty()) return;
  FamilyContext ctx{*this, {}};
  if constexpr (std::is_same_v<T, Histogram>) {
    for (double bound : bucket_bounds()) ctx.le.push_back(FormatValue(bound));
    ctx.le.push_back("+Inf");
  }
  AppendHeader(out, name(), help(), MetricTypeName(type()));
  for (const auto& [values, child] : refs) AppendChild(out, ctx, *values, *child);
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

}  // namespace phalanx::metrics
