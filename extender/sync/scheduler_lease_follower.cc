#include "extender/sync/scheduler_lease_follower.h"

#include <fmt/format.h>

#include "core/kube/resource.h"

namespace phalanx::extender {

std::string_view FollowActionName(FollowAction action) {
  switch (action) {
    case FollowAction::kCampaign: return "campaign";
    case FollowAction::kRelease: return "release";
    case FollowAction::kKeep: return "keep";
  }
  return "?";
}

bool HeldByPod(std::string_view holder, std::string_view pod) {
  if (pod.empty() || !holder.starts_with(pod)) return false;
  return holder.size() == pod.size() || holder[pod.size()] == '_';
}

FollowAction DecideFollow(const std::optional<std::string>& holder, std::string_view pod) {
  if (!holder) return FollowAction::kKeep;
  return HeldByPod(*holder, pod) ? FollowAction::kCampaign : FollowAction::kRelease;
}

Status ParseLeaseRef(std::string_view text, std::string* ns, std::string* name) {
  const size_t slash = text.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == text.size() ||
      text.find('/', slash + 1) != std::string_view::npos) {
    return InvalidArgumentError(fmt::format("\"{}\": expected NAMESPACE/NAME", text));
  }
  *ns = std::string(text.substr(0, slash));
  *name = std::string(text.substr(slash + 1));
  return OkStatus();
}

SchedulerLeaseFollower::SchedulerLeaseFollower(kube::KubeClient& client, ElectorLeadership& leadership,
                                               FollowerOptions options, FollowerCallbacks callbacks)
    : client_(client), leadership_(leadership), options_(std::move(options)), callbacks_(std::move(callbacks)) {
  // Never run: HoldsLease() is false until the first campaign.
  electors_.push_back(std::make_unique<kube::LeaderElector>(client_, options_.election));
  leadership_.Attach(electors_.back().get());
}

SchedulerLeaseFollower::~SchedulerLeaseFollower() { Stop(); }

std::optional<std::string> SchedulerLeaseFollower::ReadHolder() {
  auto lease = client_.Get(kube::resources::kLeases, options_.lease_namespace, options_.lease_name);
  if (!lease.ok()) {
    if (IsNotFound(lease.status())) return std::string();
    return std::nullopt;
  }
  const auto spec = lease->find("spec");
  if (spec == lease->end() || !spec->is_object()) return std::string();
  const auto holder = spec->find("holderIdentity");
  return holder != spec->end() && holder->is_string() ? holder->get<std::string>() : std::string();
}

FollowAction SchedulerLeaseFollower::Step() {
  const std::optional<std::string> holder = ReadHolder();
  const FollowAction action = DecideFollow(holder, options_.pod);
  std::lock_guard lock(mu_);
  if (stopped_) return FollowAction::kKeep;
  if (holder && *holder != last_holder_) {
    last_holder_ = *holder;
    if (callbacks_.on_follow) callbacks_.on_follow(*holder, action);
  }
  if (action == FollowAction::kCampaign && !campaign_.joinable()) StartCampaign();
  if (action == FollowAction::kRelease && campaign_.joinable()) StopCampaign();
  return action;
}

void SchedulerLeaseFollower::StartCampaign() {
  electors_.push_back(std::make_unique<kube::LeaderElector>(client_, options_.election));
  kube::LeaderElector* elector = electors_.back().get();
  leadership_.Attach(elector);
  campaign_ = std::thread([this, elector] {
    Status st = elector->Run();  // OK when stopped (after releasing the Lease)
    if (!st.ok() && callbacks_.on_lost) callbacks_.on_lost(st);
  });
}

void SchedulerLeaseFollower::StopCampaign() {
  if (callbacks_.on_release) callbacks_.on_release();
  electors_.back()->Stop();  // releases our Lease if held (release_on_cancel)
  campaign_.join();
  // Again: the daemon's tick may have re-activated us while the Lease was being released.
  if (callbacks_.on_release) callbacks_.on_release();
}

bool SchedulerLeaseFollower::campaigning() const {
  std::lock_guard lock(mu_);
  return campaign_.joinable();
}

void SchedulerLeaseFollower::Run() {
  for (;;) {
    (void)Step();
    std::unique_lock lock(mu_);
    if (cv_.wait_for(lock, options_.election.retry_period, [&] { return stopped_; })) return;
  }
}

void SchedulerLeaseFollower::Stop() {
  std::lock_guard lock(mu_);
  if (stopped_) return;
  stopped_ = true;
  cv_.notify_all();
  if (campaign_.joinable()) StopCampaign();
}

}  // namespace phalanx::extender
