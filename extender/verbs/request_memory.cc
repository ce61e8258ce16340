// RequestMemory (verb_handle.h): pods seen in filter requests and the last filter summaries.
#include <mutex>
#include <string>

#include "extender/extender_internal.h"
#include "extender/verbs/verb_handle.h"

namespace phalanx::extender {

void RequestMemory::RememberPod(const PodInfo& pod) {
  std::lock_guard lock(mu_);
  if (seen_pods_.size() >= internal::kMaxRememberedPods) seen_pods_.clear();
  seen_pods_[pod.uid] = pod;
}

std::optional<PodInfo> RequestMemory::SeenPod(const PodUid& uid) const {
  std::lock_guard lock(mu_);
  if (auto it = seen_pods_.find(uid); it != seen_pods_.end()) return it->second;
  return std::nullopt;
}

void RequestMemory::RecordFilterSummary(const std::string& ns_name, std::string text) {
  std::lock_guard lock(mu_);
  if (filter_summaries_.size() >= internal::kMaxRememberedPods) filter_summaries_.clear();
  filter_summaries_[ns_name] = std::move(text);
}

std::string RequestMemory::FilterSummary(std::string_view ns_name) const {
  std::lock_guard lock(mu_);
  if (auto it = filter_summaries_.find(std::string(ns_name)); it != filter_summaries_.end()) return it->second;
  return "";
}

}  // namespace phalanx::extender
