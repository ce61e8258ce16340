#include "core/metrics/registry.h"

#include <set>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/metrics/buckets.h"
#include "core/metrics/metric_names.h"

namespace phalanx::metrics {
namespace {

Status ValidateShape(std::string_view name, const std::vector<std::string>& label_names,
                     MetricType type) {
  PHX_RETURN_IF_ERROR(ValidateMetricName(name));
  std::set<std::string_view> seen;
  for (const std::string& label : label_names) {
    PHX_RETURN_IF_ERROR(ValidateLabelName(label).WithContext(fmt::format("metric {}", name)));
    if (!seen.insert(label).second) {
      return InvalidArgumentError(fmt::format("metric {}: duplicate label name {}", name, label));
    }
    // "le" carries the bucket bound of every _bucket series.
    if (type == MetricType::kHistogram && label == "le") {
      return InvalidArgumentError(
          fmt::format("metric {}: label name \"le\" is reserved for histogram buckets", name));
    }
  }
  return OkStatus();
}

// The sample names a family writes.
std::vector<std::string> SeriesNames(const FamilyBase& family) {
  if (family.type() == MetricType::kHistogram) {
    return {family.name() + "_bucket", family.name() + "_sum", family.name() + "_count"};
  }
  return {family.name()};
}

std::string DescribeShape(const FamilyBase& f) {
  std::string out = fmt::format("{} with labels [{}]", MetricTypeName(f.type()),
                                fmt::join(f.label_names(), ","));
  if (f.type() == MetricType::kHistogram) {
    out += fmt::format(" and buckets [{}]", fmt::join(f.bucket_bounds(), ","));
  }
  return out;
}

bool SameShape(const FamilyBase& a, const FamilyBase& b) {
  return a.type() == b.type() && a.help() == b.help() && a.label_names() == b.label_names() &&
         a.bucket_bounds() == b.bucket_bounds();
}

}  // namespace

Result<FamilyBase*> Registry::Register(std::unique_ptr<FamilyBase> candidate) {
  std::lock_guard<std::mutex> lock(mu_);
  auto same_name = families_.find(candidate->name());
  if (same_name != families_.end()) {
    const FamilyBase& existing = *same_name->second;
    if (SameShape(existing, *candidate)) return same_name->second.get();
    if (existing.type() != candidate->type() ||
        existing.label_names() != candidate->label_names() ||
        existing.bucket_bounds() != candidate->bucket_bounds()) {
      return AlreadyExistsError(fmt::format("metric {} already registered as {}, not as {}",
                                            candidate->name(), DescribeShape(existing),
                                            DescribeShape(*candidate)));
    }
    // Only the help differs: still two owners describing one series differently.
    return AlreadyExistsError(
        fmt::format("metric {} already registered with help \"{}\", not \"{}\"",
                    candidate->name(), existing.help(), candidate->help()));
  }
  // A counter "x_count" next to a histogram "x" would write two series of the same name.
  const std::vector<std::string> mine = SeriesNames(*candidate);
  for (const auto& [name, family] : families_) {
    for (const std::string& theirs : SeriesNames(*family)) {
      for (const std::string& series : mine) {
        if (series == theirs) {
          return AlreadyExistsError(
              fmt::format("metric {}: series {} collides with {} {}", candidate->name(), series,
                          MetricTypeName(family->type()), name));
        }
      }
    }
  }
  FamilyBase* raw = candidate.get();
  families_.emplace(raw->name(), std::move(candidate));
  return raw;
}

Result<CounterFamily*> Registry::AddCounter(std::string_view name, std::string_view help,
                                            std::vector<std::string> label_names) {
  PHX_RETURN_IF_ERROR(ValidateShape(name, label_names, MetricType::kCounter));
  PHX_ASSIGN_OR_RETURN(FamilyBase * family,
                       Register(std::make_unique<CounterFamily>(
                           std::string(name), std::string(help), std::move(label_names))));
  return static_cast<CounterFamily*>(family);  // Register() matched the type
}

Result<GaugeFamily*> Registry::AddGauge(std::string_view name, std::string_view help,
                                        std::vector<std::string> label_names) {
  PHX_RETURN_IF_ERROR(ValidateShape(name, label_names, MetricType::kGauge));
  PHX_ASSIGN_OR_RETURN(FamilyBase * family,
                       Register(std::make_unique<GaugeFamily>(
                           std::string(name), std::string(help), std::move(label_names))));
  return static_cast<GaugeFamily*>(family);
}

Result<HistogramFamily*> Registry::AddHistogram(std::string_view name, std::string_view help,
                                                std::vector<std::string> label_names,
                                                std::vector<double> bucket_bounds) {
  PHX_RETURN_IF_ERROR(ValidateShape(name, label_names, MetricType::kHistogram));
  auto bounds = NormalizeBuckets(std::move(bucket_bounds));
  if (!bounds.ok()) return bounds.status().WithContext(fmt::format("metric {}", name));
  PHX_ASSIGN_OR_RETURN(
      FamilyBase * family,
      Register(std::make_unique<HistogramFamily>(std::string(name), std::string(help),
                                                 std::move(label_names), std::move(*bounds))));
  return static_cast<HistogramFamily*>(family);
}

void Registry::AppendExposition(std::string& out) const {
  std::vector<const FamilyBase*> families;
  {
    std::lock_guard<std::mutex> lock(mu_);
    families.reserve(families_.size());
    for (const auto& [name, family] : families_) families.push_back(family.get());
  }
  for (const FamilyBase* family : families) family->AppendText(out);
}

std::string Registry::Expose() const {
  std::string out;
  AppendExposition(out);
  return out;
}

}  // namespace phalanx::metrics
