// Ledger (ledger.h): gang membership and settling (min-members from the labelled count), and an
// admitted gang's plan: reserving it, assigning members to its ordinals, committing them.
#include "extender/state/ledger.h"

#include <algorithm>

#include <fmt/format.h>

namespace phalanx::extender {

static bool CountsAsMember(const PodInfo& p) { return p.IsGangMember() && !p.deleting && !p.Terminal(); }

void Ledger::RemoveFromGang(const PodInfo& info) {
  if (!info.IsGangMember()) return;
  auto git = gangs_.find(info.Gang());
  if (git == gangs_.end()) return;
  git->second.members.erase(info.uid);
  git->second.assignment.erase(info.uid);
  if (!git->second.members.empty()) return;
  // Nobody is left to bind against the plan: its reservation goes with the gang (a
  // re-created gang of the same name is planned afresh).
  if (git->second.plan) {
    DropPlan(info.Gang());
    return;  // DropPlan erased the memberless gang
  }
  gangs_.erase(git);
}

void Ledger::UpdateGangMembership(const PodRecord* old_rec, const PodRecord& rec, MonotonicTime now) {
  if (old_rec && old_rec->info.IsGangMember() &&
      (old_rec->info.Gang() != rec.info.Gang() || !CountsAsMember(rec.info))) {
    RemoveFromGang(old_rec->info);
  }
  if (!CountsAsMember(rec.info)) return;
  auto [git, created] = gangs_.try_emplace(rec.info.Gang());
  GangRecord& g = git->second;
  if (created) {
    g.key = rec.info.Gang();
    g.settle = admission::GangMinMembers();
    g.first_seen = now;
  }
  g.members.insert(rec.info.uid);
  // The gang's parameters come from its members (the operator writes them identically).
  if (rec.info.min_members) g.min_annotated = rec.info.min_members;
  if (rec.info.gang_timeout_seconds) g.timeout_seconds = *rec.info.gang_timeout_seconds;
  if (!rec.info.topology_level.empty()) {
    g.level = rec.info.topology_level;
    g.required = rec.info.topology_required;
  }
  g.priority = rec.info.priority;
  g.gpus_per_member = std::max(g.gpus_per_member, rec.info.gpus);
  g.pool_selector = rec.info.pool_selector;
  g.settle.Observe(static_cast<int>(g.members.size()), now);
}

Status Ledger::AdmitPlan(const GangKey& gang, placement::GangPlan plan, MonotonicTime now) {
  auto git = gangs_.find(gang);
  if (git == gangs_.end()) return NotFoundError(fmt::format("gang {} has no members", gang.str()));
  if (git->second.plan) return AlreadyExistsError(fmt::format("gang {} already has a plan", gang.str()));
  PHX_RETURN_IF_ERROR(placement::ReservePlan(state_, plan));
  git->second.plan = std::move(plan);
  git->second.planned_at = now;
  git->second.assignment.clear();
  git->second.last_no_fit.clear();
  return OkStatus();
}

void Ledger::DropPlan(const GangKey& gang) {
  if (state_.FindReservation(gang)) {
    (void)state_.Unreserve(gang);
    ++release_epoch_;
  }
  auto git = gangs_.find(gang);
  if (git == gangs_.end()) return;
  git->second.plan.reset();
  git->second.assignment.clear();
  if (git->second.members.empty()) gangs_.erase(git);
}

std::optional<int> Ledger::AssignMember(const GangKey& gang, const PodUid& uid,
                                        const std::function<bool(const NodeName&)>& candidate) {
  auto git = gangs_.find(gang);
  if (git == gangs_.end() || !git->second.plan) return std::nullopt;
  GangRecord& g = git->second;
  if (auto it = g.assignment.find(uid); it != g.assignment.end()) return it->second;
  std::vector<bool> taken(g.plan->members.size(), false);
  for (const auto& [pod, ordinal] : g.assignment) taken[static_cast<size_t>(ordinal)] = true;
  const auto* res = state_.FindReservation(gang);
  std::optional<int> fallback;
  for (size_t i = 0; i < taken.size(); ++i) {
    if (taken[i] || (res && res->committed[i])) continue;
    if (!candidate || candidate(g.plan->members[i].node)) {
      g.assignment[uid] = static_cast<int>(i);
      return static_cast<int>(i);
    }
    if (!fallback) fallback = static_cast<int>(i);
  }
  if (fallback) g.assignment[uid] = *fallback;
  return fallback;
}

Status Ledger::CommitMember(const GangKey& gang, int ordinal, const PodUid& uid) {
  auto git = gangs_.find(gang);
  auto pit = pods_.find(uid);
  if (git == gangs_.end() || !git->second.plan || pit == pods_.end()) {
    return NotFoundError(fmt::format("gang {} or pod {} is gone", gang.str(), uid.str()));
  }
  PodRecord& rec = pit->second;
  Uncharge(rec);
  PHX_RETURN_IF_ERROR(state_.Commit(gang, ordinal, uid, rec.info.priority));
  const auto& member = git->second.plan->members[static_cast<size_t>(ordinal)];
  rec.info.node_name = member.node.str();
  rec.holding = Holding::kAssumed;
  rec.node = member.node;
  rec.gpus = member.gpus;
  return OkStatus();
}

}  // namespace phalanx::extender
