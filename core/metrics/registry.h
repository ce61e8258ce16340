// Registry: owns metric families and renders them for /metrics.
//
//   Registry registry;
//   PHX_ASSIGN_OR_RETURN(CounterFamily* requests, registry.AddCounter(
//       "phalanx_extender_requests_total", "Requests served.", {"verb", "result"}));
//   PHX_ASSIGN_OR_RETURN(Counter* filter_ok, requests->WithLabels({"filter", "ok"}));
//   filter_ok->Inc();                      // lock-free; cache the pointer
//   std::string body = registry.Expose();  // text format 0.0.4, kTextContentType
//
// Invariants: names and label names are validated at registration, so exposition can't
// fail; family names are unique, and no family's series (name, or name_bucket/_sum/_count
// for a histogram) collides with another's. Registering the same name again with the same
// type, help, label names (and buckets) returns the existing family; anything else is
// kAlreadyExists. Families and their children live as long as the Registry.
// No global default: each daemon's main.cc owns one and passes it to the components'
// metrics structs; tests build their own (STYLE §2.5).
// Thread-safe: registration and exposition take the registry mutex only to find or list
// families; metric updates never take it.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"
#include "core/metrics/family.h"

namespace phalanx::metrics {

class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // kInvalidArgument: bad metric or label name, duplicate label name, or (histograms)
  // a label named "le" or invalid bucket bounds. kAlreadyExists: see file comment.
  Result<CounterFamily*> AddCounter(std::string_view name, std::string_view help,
                                    std::vector<std::string> label_names = {});
  Result<GaugeFamily*> AddGauge(std::string_view name, std::string_view help,
                                std::vector<std::string> label_names = {});
  // `bucket_bounds`: finite, strictly increasing upper bounds (a trailing +Inf is
  // accepted and dropped; the +Inf bucket is always exposed). See buckets.h for layouts.
  Result<HistogramFamily*> AddHistogram(std::string_view name, std::string_view help,
                                        std::vector<std::string> label_names,
                                        std::vector<double> bucket_bounds);

  // All families sorted by name, children by label values, in text format 0.0.4.
  std::string Expose() const;
  void AppendExposition(std::string& out) const;

 private:
  // Validates a new family of shape `candidate` and returns the family to use: the
  // existing one with the same shape, or `candidate` after taking ownership of it.
  Result<FamilyBase*> Register(std::unique_ptr<FamilyBase> candidate);

  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<FamilyBase>, std::less<>> families_;  // guarded by mu_
};

}  // namespace phalanx::metrics
