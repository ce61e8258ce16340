#include "core/kube/leader_election.h"

#include <ctime>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace phalanx::kube {
namespace {

std::string Str(const Json& spec, const char* key) {
  auto it = spec.find(key);
  return it != spec.end() && it->is_string() ? it->get<std::string>() : std::string();
}
int Int(const Json& spec, const char* key) {
  auto it = spec.find(key);
  return it != spec.end() && it->is_number_integer() ? it->get<int>() : 0;
}

}  // namespace

Status ValidateLeaderElectionConfig(const LeaderElectionConfig& c) {
  if (c.lease_namespace.empty() || c.lease_name.empty()) {
    return InvalidArgumentError("leader election: lease namespace and name must be set");
  }
  if (c.identity.empty()) return InvalidArgumentError("leader election: identity must be set");
  if (c.retry_period <= Duration::zero()) return InvalidArgumentError("leader election: retry period must be > 0");
  if (c.lease_duration <= c.renew_deadline) {
    return InvalidArgumentError("leader election: lease duration must be greater than the renew deadline");
  }
  if (c.renew_deadline <= c.retry_period * 12 / 10) {
    return InvalidArgumentError("leader election: renew deadline must be greater than 1.2 x retry period");
  }
  return OkStatus();
}

LeaderElector::LeaderElector(KubeClient& client, LeaderElectionConfig config, LeaderCallbacks callbacks,
                             const Clock* clock)
    : client_(client),
      config_(std::move(config)),
      callbacks_(std::move(callbacks)),
      clock_(clock ? clock : &client.clock()) {}

LeaderElector::~LeaderElector() {
  Stop();
  if (work_thread_.joinable()) work_thread_.join();
}

std::string LeaderElector::CurrentHolder() const {
  std::lock_guard lock(mu_);
  return observed_ ? observed_->holder : std::string();
}

std::string LeaderElector::MicroTimeNow() const {
  const auto now = clock_->WallNow();
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(us / 1'000'000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, us % 1'000'000);
}

Json LeaderElector::RecordToSpec(const Record& r) const {
  Json spec = {{"holderIdentity", r.holder},
               {"leaseDurationSeconds", r.lease_seconds},
               {"leaseTransitions", r.transitions}};
  if (!r.acquire_time.empty()) spec["acquireTime"] = r.acquire_time;
  if (!r.renew_time.empty()) spec["renewTime"] = r.renew_time;
  return spec;
}

Result<Json> LeaderElector::GetLease() {
  HttpRequest req;
  req.target = ResourcePath(resources::kLeases, config_.lease_namespace, config_.lease_name);
  req.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(config_.renew_deadline / 2);
  CallOptions call;
  call.max_retries = 0;
  PHX_ASSIGN_OR_RETURN(HttpResponse resp, client_.Do(std::move(req), call));
  PHX_RETURN_IF_ERROR(KubeClient::CheckResponse(resp));
  return json::Parse(resp.body);
}

Status LeaderElector::WriteLease(const Json* existing, const Record& record) {
  HttpRequest req;
  req.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(config_.renew_deadline / 2);
  req.content_type = "application/json";
  Json lease;
  if (existing) {
    lease = *existing;  // keeps metadata.resourceVersion: a stale write fails with Conflict
    req.method = "PUT";
    req.target = ResourcePath(resources::kLeases, config_.lease_namespace, config_.lease_name);
  } else {
    lease = {{"apiVersion", "coordination.k8s.io/v1"},
             {"kind", "Lease"},
             {"metadata", {{"name", config_.lease_name}, {"namespace", config_.lease_namespace}}}};
    req.method = "POST";
    req.target = ResourcePath(resources::kLeases, config_.lease_namespace);
  }
  lease["spec"] = RecordToSpec(record);
  req.body = json::Dump(lease);
  CallOptions call;
  call.max_retries = 0;
  PHX_ASSIGN_OR_RETURN(HttpResponse resp, client_.Do(std::move(req), call));
  return KubeClient::CheckResponse(resp);
}

bool LeaderElector::TryAcquireOrRenew() {
  const int lease_seconds =
      static_cast<int>(std::chrono::duration_cast<std::chrono::seconds>(config_.lease_duration).count());
  const std::string now_str = MicroTimeNow();
  auto lease = GetLease();
  if (!lease.ok() && !IsNotFound(lease.status())) {
    spdlog::warn("leader election: cannot read lease {}/{}: {}", config_.lease_namespace, config_.lease_name,
                 lease.status().message());
    return false;
  }
  if (!lease.ok()) {
    Record mine{config_.identity, lease_seconds, now_str, now_str, 0};
    Status s = WriteLease(nullptr, mine);
    if (!s.ok()) {
      spdlog::info("leader election: cannot create lease: {}", s.message());
      return false;
    }
    std::lock_guard lock(mu_);
    observed_ = mine;
    observed_time_ = clock_->Now();
    return true;
  }
  const Json spec = lease->contains("spec") && (*lease)["spec"].is_object() ? (*lease)["spec"] : Json::object();
  Record current{Str(spec, "holderIdentity"), Int(spec, "leaseDurationSeconds"), Str(spec, "acquireTime"),
                 Str(spec, "renewTime"), Int(spec, "leaseTransitions")};
  std::string new_leader;
  {
    std::lock_guard lock(mu_);
    const MonotonicTime now = clock_->Now();
    if (!observed_ || !(*observed_ == current)) {
      if (!current.holder.empty() && (!observed_ || observed_->holder != current.holder)) {
        new_leader = current.holder;
      }
      observed_ = current;
      observed_time_ = now;
    }
  }
  if (!new_leader.empty() && new_leader != config_.identity && callbacks_.on_new_leader) {
    callbacks_.on_new_leader(new_leader);
  }
  {
    std::lock_guard lock(mu_);
    const bool held_by_other = !current.holder.empty() && current.holder != config_.identity;
    const Duration their_duration = std::chrono::seconds(std::max(1, current.lease_seconds));
    if (held_by_other && observed_time_ + their_duration > clock_->Now()) return false;
  }
  Record mine = current;
  mine.holder = config_.identity;
  mine.lease_seconds = lease_seconds;
  mine.renew_time = now_str;
  if (current.holder != config_.identity) {
    mine.acquire_time = now_str;
    mine.transitions = current.transitions + 1;
  }
  Status s = WriteLease(&*lease, mine);
  if (!s.ok()) {
    spdlog::info("leader election: cannot {} lease: {}",
                 current.holder == config_.identity ? "renew" : "acquire", s.message());
    return false;
  }
  std::lock_guard lock(mu_);
  observed_ = mine;
  observed_time_ = clock_->Now();
  return true;
}

Status LeaderElector::Release() {
  if (!leader_.load()) return OkStatus();
  auto lease = GetLease();
  if (!lease.ok()) return lease.status();
  const Json spec = (*lease).value("spec", Json::object());
  if (Str(spec, "holderIdentity") != config_.identity) return OkStatus();
  Record released{"", 1, Str(spec, "acquireTime"), MicroTimeNow(), Int(spec, "leaseTransitions")};
  PHX_RETURN_IF_ERROR(WriteLease(&*lease, released));
  leader_.store(false);
  return OkStatus();
}

bool LeaderElector::Wait(Duration d) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, d, [&] { return stopped_; });
  return !stopped_;
}

void LeaderElector::Stop() {
  {
    std::lock_guard lock(mu_);
    stopped_ = true;
  }
  cv_.notify_all();
}

Status LeaderElector::Run() {
  PHX_RETURN_IF_ERROR(ValidateLeaderElectionConfig(config_));
  spdlog::info("leader election: {} competing for lease {}/{}", config_.identity, config_.lease_namespace,
               config_.lease_name);
  while (!TryAcquireOrRenew()) {
    if (!Wait(config_.retry_period)) return OkStatus();
  }
  {
    std::lock_guard lock(mu_);
    if (stopped_) return OkStatus();
  }
  leader_.store(true);
  spdlog::info("leader election: {} acquired lease {}/{}", config_.identity, config_.lease_namespace,
               config_.lease_name);
  if (callbacks_.on_started_leading) work_thread_ = std::thread(callbacks_.on_started_leading);
  MonotonicTime last_renew = clock_->Now();
  while (true) {
    if (!Wait(config_.retry_period)) {
      if (config_.release_on_cancel) {
        if (Status s = Release(); !s.ok()) spdlog::warn("leader election: release failed: {}", s.message());
      }
      leader_.store(false);
      if (callbacks_.on_stopped_leading) callbacks_.on_stopped_leading();
      return OkStatus();
    }
    if (TryAcquireOrRenew()) {
      last_renew = clock_->Now();
      continue;
    }
    if (clock_->Now() - last_renew >= config_.renew_deadline) break;
  }
  leader_.store(false);
  spdlog::error("leader election: {} lost lease {}/{} (no renewal within the renew deadline)", config_.identity,
                config_.lease_namespace, config_.lease_name);
  if (callbacks_.on_stopped_leading) callbacks_.on_stopped_leading();
  return FailedPreconditionError(fmt::format("lost leadership of lease {}/{}", config_.lease_namespace,
                                             config_.lease_name));
}

}  // namespace phalanx::kube
