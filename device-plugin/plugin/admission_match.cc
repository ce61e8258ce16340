#include "device-plugin/plugin/admission_match.h"

#include <algorithm>

namespace phalanx::device_plugin {
namespace {

std::set<std::string> AsSet(const std::vector<std::string>& ids) { return {ids.begin(), ids.end()}; }

// Why `c`'s plan cannot be the answer to `request`, or "" when it can.
std::string PlanProblem(const ResourceSpec& resource, const PendingContainer& c, const PreferredRequest& request) {
  const std::set<std::string> plan = AsSet(c.plan);
  if (static_cast<int>(plan.size()) != request.size || plan.size() != c.plan.size()) return "size";
  std::set<std::string> available(request.available.begin(), request.available.end());
  available.insert(request.must_include.begin(), request.must_include.end());
  for (const auto& id : plan) {
    if (resource.Find(id) == nullptr || !available.count(id)) return "unavailable";
  }
  for (const auto& id : request.must_include) {
    if (!plan.count(id)) return "must_include";
  }
  return "";
}

}  // namespace

AdmissionMatcher::AdmissionMatcher(const ResourceSpec& resource,
                                   std::shared_ptr<const placement::BandwidthMatrix> bandwidth)
    : resource_(resource), bandwidth_(std::move(bandwidth)) {}

const PendingPod* AdmissionMatcher::Identify(int size, std::span<const PendingPod> pods,
                                             const PendingContainer** container) const {
  for (const PendingPod& pod : pods) {
    auto served = served_.find(pod.uid);
    for (const PendingContainer& c : pod.containers) {
      if (served != served_.end() && served->second.count(c.name)) continue;
      // The pod's next container. Another size: kubelet is not admitting this pod now (it was
      // rejected before its devices, or admitted before this plugin knew): look further.
      if (c.count != size) break;
      *container = &c;
      return &pod;
    }
  }
  return nullptr;
}

void AdmissionMatcher::Prune(std::span<const PendingPod> pods) {
  std::set<std::string> pending;
  for (const PendingPod& p : pods) pending.insert(p.uid);
  std::erase_if(served_, [&](const auto& entry) { return !pending.count(entry.first); });
}

std::set<std::string> AdmissionMatcher::PlannedForOthers(std::span<const PendingPod> pods, const std::string& uid,
                                                         const std::string& container) const {
  std::set<std::string> out;
  for (const PendingPod& pod : pods) {
    auto served = served_.find(pod.uid);
    for (const PendingContainer& c : pod.containers) {
      if (pod.uid == uid && c.name == container) continue;
      if (served != served_.end() && served->second.count(c.name)) continue;
      out.insert(c.plan.begin(), c.plan.end());
    }
  }
  return out;
}

Result<MatchedPreference> AdmissionMatcher::Preferred(const PreferredRequest& request,
                                                      std::span<const PendingPod> pods) {
  std::lock_guard<std::mutex> lock(mu_);
  Prune(pods);
  MatchedPreference out;
  const PendingContainer* container = nullptr;
  const PendingPod* pod = Identify(request.size, pods, &container);
  const std::set<std::string> avoid =
      PlannedForOthers(pods, pod ? pod->uid : "", container ? container->name : "");
  // Validates the request (unknown IDs, sizes) whatever the answer will be.
  PHX_ASSIGN_OR_RETURN(out.choice, ChoosePreferred(resource_, *bandwidth_, request, avoid));
  if (pod == nullptr) return out;
  out.identified = true;
  out.pod = pod->key;
  out.container = container->name;
  std::string problem;
  if (container->planned) {
    problem = PlanProblem(resource_, *container, request);
    if (problem.empty()) {
      out.choice = PreferredChoice{container->plan, PreferredSource::kAnnotation, pod->key};
    }
  } else if (pod->annotated) {
    problem = "not_planned";  // e.g. a plan written for the pod's first container only
  }
  if (!problem.empty()) {
    out.miss = PlanMiss{.pod = pod->key, .uid = pod->uid, .container = container->name, .gang = pod->gang,
                        .planned = container->plan, .given = out.choice.device_ids, .reason = problem};
  }
  served_[pod->uid].insert(container->name);
  last_ = Served{.uid = pod->uid, .pod = pod->key, .container = container->name, .gang = pod->gang,
                 .planned = container->planned && problem.empty(), .plan = container->plan,
                 .answered = out.choice.device_ids};
  return out;
}

std::optional<PlanMiss> AdmissionMatcher::Allocated(const std::vector<std::string>& ids,
                                                    std::span<const PendingPod> pods) {
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<Served> s;
  if (last_ && last_->answered.size() == ids.size()) {
    s = std::move(last_);  // the container we just answered
  } else {
    Prune(pods);
    const PendingContainer* container = nullptr;
    const PendingPod* pod = Identify(static_cast<int>(ids.size()), pods, &container);
    if (pod != nullptr) {
      served_[pod->uid].insert(container->name);
      s = Served{.uid = pod->uid, .pod = pod->key, .container = container->name, .gang = pod->gang,
                 .planned = container->planned, .plan = container->plan, .answered = container->plan};
    }
  }
  last_.reset();
  if (!s || !s->planned || AsSet(ids) == AsSet(s->plan)) return std::nullopt;
  return PlanMiss{.pod = s->pod, .uid = s->uid, .container = s->container, .gang = s->gang,
                  .planned = s->plan, .given = ids, .reason = "kubelet_chose_other"};
}

}  // namespace phalanx::device_plugin
