#include "device-plugin/publish/pod_cache.h"

#include <algorithm>
#include <tuple>

namespace phalanx::device_plugin {

void PodCache::Put(PodOnNode pod) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string key = pod.ns + "/" + pod.name;
  auto it = pods_.find(key);
  if (it != pods_.end() && it->second.uid == pod.uid) {
    pod.arrival_rv = it->second.arrival_rv;  // arrival is the first sight, not the latest update
    pod.arrival_seq = it->second.arrival_seq;
  } else {
    pod.arrival_rv = pod.resource_version;
    pod.arrival_seq = ++next_seq_;
  }
  pods_[std::move(key)] = std::move(pod);
  PublishLocked();
}

void PodCache::Remove(const std::string& ns, const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  if (pods_.erase(ns + "/" + name) == 0) return;
  PublishLocked();
}

void PodCache::SetSynced() {
  std::lock_guard<std::mutex> lock(mu_);
  if (synced_) return;
  synced_ = true;
  ++version_;
  cv_.notify_all();
}

// A node holds tens of pods: rebuilding the snapshot per change is cheaper than copying it
// on every read (GetPreferredAllocation reads it on kubelet's admission path).
void PodCache::PublishLocked() {
  auto next = std::make_shared<std::vector<PodOnNode>>();
  next->reserve(pods_.size());
  for (const auto& [key, pod] : pods_) next->push_back(pod);
  std::sort(next->begin(), next->end(), [](const PodOnNode& a, const PodOnNode& b) {
    // Versions not numbers (0) fall back to the sequence alone.
    return std::tie(a.arrival_rv, a.arrival_seq) < std::tie(b.arrival_rv, b.arrival_seq);
  });
  snapshot_ = std::move(next);
  ++version_;
  cv_.notify_all();
}

bool PodCache::Synced() const {
  std::lock_guard<std::mutex> lock(mu_);
  return synced_;
}

PodCache::Snapshot PodCache::Pods() const {
  std::lock_guard<std::mutex> lock(mu_);
  return snapshot_;
}

uint64_t PodCache::version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return version_;
}

bool PodCache::WaitForChange(uint64_t seen, std::chrono::steady_clock::time_point deadline) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_until(lock, deadline, [&] { return version_ > seen; });
}

}  // namespace phalanx::device_plugin
