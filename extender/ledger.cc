#include "extender/ledger.h"

#include <algorithm>
#include <bit>

#include <fmt/format.h>

#include "core/placement/topology_bandwidth.h"
#include "extender/mig_devices.h"

namespace phalanx::extender {

using placement::GpuMask;

std::string_view HoldingName(Holding h) {
  switch (h) {
    case Holding::kNone: return "none";
    case Holding::kAssumed: return "assumed";
    case Holding::kCommitted: return "committed";
    case Holding::kConfirmed: return "confirmed";
  }
  return "?";
}

Ledger::Ledger(std::vector<std::string> levels) : state_(std::move(levels)) {}

std::shared_ptr<const placement::BandwidthMatrix> Ledger::SharedMatrix(placement::BandwidthMatrix m) {
  // Thousands of nodes share a handful of shapes; keep one matrix per shape.
  for (const auto& existing : matrices_) {
    if (existing->size() != m.size()) continue;
    bool same = true;
    for (int i = 0; i < m.size() && same; ++i) {
      for (int j = 0; j < m.size() && same; ++j) same = existing->at(i, j) == m.at(i, j);
    }
    if (same) return existing;
  }
  auto shared = std::make_shared<const placement::BandwidthMatrix>(std::move(m));
  matrices_.push_back(shared);
  return shared;
}

placement::NodeSpec Ledger::SpecFor(const NodeRecord& rec) const {
  const NodeInfo& n = rec.info;
  placement::NodeSpec spec;
  spec.name = n.name;
  spec.pool = std::string(n.Label(kProductLabel));
  spec.schedulable = !n.unschedulable && n.ready;
  for (const std::string& level : state_.levels()) {
    std::string value(n.Label(level));
    if (value.empty() && level == kHostnameLabel) value = n.name.str();
    spec.domains.push_back(std::move(value));
  }
  if (rec.topology_known) {
    const auto& topo = *n.topology;
    spec.gpu_count = std::min(topo.gpu_count(), placement::kMaxGpusPerNode);
    spec.healthy = placement::WholeGpuMask(topo) & placement::AllGpus(spec.gpu_count);
    spec.mig = placement::MigGpuMask(topo) & placement::AllGpus(spec.gpu_count);
  } else {
    spec.gpu_count = std::min(n.allocatable_gpus, placement::kMaxGpusPerNode);
    spec.healthy = placement::AllGpus(spec.gpu_count);
  }
  // The device plugin's health report: device ID = GPU UUID (or "<uuid>::<n>" replicas).
  for (const auto& [id, dev] : n.devices) {
    if (dev.healthy) continue;
    auto it = rec.index_of_uuid.find(id.substr(0, id.find("::")));
    if (it != rec.index_of_uuid.end() && it->second < spec.gpu_count) spec.healthy &= ~(GpuMask{1} << it->second);
  }
  return spec;
}

Status Ledger::UpsertNode(const NodeInfo& info) {
  ++release_epoch_;  // capacity or health may have grown
  NodeRecord rec;
  rec.info = info;
  rec.topology_known = info.topology.has_value() && info.topology->gpu_count() <= placement::kMaxGpusPerNode;
  if (rec.topology_known) {
    for (const auto& gpu : info.topology->gpus) {
      rec.index_of_uuid.emplace(gpu.uuid.str(), static_cast<int>(rec.uuids.size()));
      rec.uuids.push_back(gpu.uuid.str());
    }
  }
  placement::NodeSpec spec = SpecFor(rec);
  if (rec.topology_known) spec.bandwidth = SharedMatrix(placement::BandwidthFromTopology(*info.topology));

  // Pods charged on the node are re-charged: devices, health or size may have changed.
  std::vector<PodUid> on_node;
  if (auto idx = state_.FindNode(info.name)) {
    for (const auto* alloc : state_.node(*idx).pods) on_node.push_back(alloc->pod);
  }
  if (auto wit = waiting_.find(info.name); wit != waiting_.end()) {
    on_node.insert(on_node.end(), wit->second.begin(), wit->second.end());
    waiting_.erase(wit);
  }
  for (const PodUid& uid : on_node) Uncharge(pods_.at(uid));

  nodes_[info.name] = std::move(rec);
  Status st = state_.FindNode(info.name) ? state_.UpdateNode(spec) : state_.AddNode(spec).status();
  if (st.code() == StatusCode::kFailedPrecondition) {  // shrank below a holding: rebuild the node
    auto removed = state_.RemoveNode(info.name);
    if (removed.ok()) {
      for (const GangKey& g : removed->plans) DropPlan(g);
    }
    st = state_.AddNode(spec).status();
  }
  NoteMigNode(info.name);  // its holdings may go with its devices, its pool may change
  if (!st.ok()) {
    nodes_.erase(info.name);
    mig_.RemoveNode(info.name);
    return st;
  }
  // MIG holdings follow their device IDs; bound MIG pods still waiting are in on_node.
  mig_.SetNode(info.name, MigSlicesOf(info));
  for (const PodUid& uid : on_node) Charge(pods_.at(uid));
  return OkStatus();
}

void Ledger::RemoveNode(const NodeName& name) {
  if (!nodes_.contains(name)) return;
  std::vector<PodUid> on_node;
  if (auto idx = state_.FindNode(name)) {
    for (const auto* alloc : state_.node(*idx).pods) on_node.push_back(alloc->pod);
  }
  for (const PodUid& uid : on_node) Uncharge(pods_.at(uid));
  auto removed = state_.RemoveNode(name);
  if (removed.ok()) {
    for (const GangKey& g : removed->plans) DropPlan(g);
  }
  NoteMigNode(name);
  mig_.RemoveNode(name);
  nodes_.erase(name);
}

std::optional<GpuMask> Ledger::RealDevices(const PodRecord& rec, const NodeRecord& node, Holding* kind) const {
  if (!node.topology_known) return std::nullopt;
  GpuMask confirmed = 0;
  for (const auto& [id, dev] : node.info.devices) {
    if (dev.pod_uid != rec.info.uid.str()) continue;
    auto it = node.index_of_uuid.find(id.substr(0, id.find("::")));
    if (it != node.index_of_uuid.end()) confirmed |= GpuMask{1} << it->second;
  }
  if (confirmed) {
    *kind = Holding::kConfirmed;
    return confirmed;
  }
  if (!rec.info.devices) return std::nullopt;
  GpuMask committed = 0;
  for (const auto& [container, ids] : *rec.info.devices) {
    for (const std::string& id : ids) {
      auto it = node.index_of_uuid.find(id.substr(0, id.find("::")));
      if (it == node.index_of_uuid.end()) return std::nullopt;  // devices of another node: not trusted
      committed |= GpuMask{1} << it->second;
    }
  }
  if (!committed) return std::nullopt;
  *kind = Holding::kCommitted;
  return committed;
}

void Ledger::Uncharge(PodRecord& rec) {
  if (mig_.Release(rec.info.uid).ok() || mig_holders_.contains(rec.info.uid)) {  // MIG devices: apart from whole GPUs
    mig_holders_.erase(rec.info.uid);
    NoteMigChange(rec.info.uid);
  }
  if (rec.holding == Holding::kNone) return;
  (void)state_.Release(rec.info.uid);
  ++release_epoch_;
  rec.holding = Holding::kNone;
  rec.node = NodeName();
  rec.gpus = 0;
}

void Ledger::Charge(PodRecord& rec) {
  ChargeNow(rec);
  const PodInfo& p = rec.info;
  const bool mig_waits = !ChargeMig(rec);
  if ((rec.holding == Holding::kNone && !p.node_name.empty() && p.gpus > 0 && !p.Terminal()) || mig_waits) {
    waiting_[NodeName(p.node_name)].insert(p.uid);  // charged again when the node changes
  }
}

bool Ledger::ChargeMig(const PodRecord& rec) {
  const PodInfo& p = rec.info;
  if (p.mig.empty() || p.node_name.empty() || p.Terminal() || mig_.FindPod(p.uid)) return true;
  const NodeName node(p.node_name);
  const placement::MigNode* mig = mig_.Find(node);
  auto nit = nodes_.find(node);
  if (!mig || nit == nodes_.end()) return false;  // charged when the node (or its MIG layout) appears
  const std::vector<int> devices = MigDevicesFor(*mig, nit->second.info, p);
  if (devices.empty() || !mig_.Allocate(p.uid, node, devices, p.priority).ok()) {
    ++warnings_;  // bound where the ledger sees no free device of its profile
    return false;
  }
  mig_holders_.insert(p.uid);
  NoteMigChange(p.uid);
  return true;
}

Status Ledger::AssumeMig(const PodUid& uid, const NodeName& node, const std::vector<int>& devices, int priority) {
  if (const placement::MigHolding* h = mig_.FindPod(uid);
      h && h->node == node && h->devices == devices && h->priority == priority) {
    return OkStatus();
  }
  (void)mig_.Release(uid);
  NoteMigChange(uid);
  Status st = mig_.Allocate(uid, node, devices, priority);
  if (st.ok()) mig_holders_.insert(uid);
  else mig_holders_.erase(uid);
  return st;
}

void Ledger::NoteMigChange(const PodUid& uid) {
  mig_log_.push_back({++mig_version_, uid});
  if (mig_log_.size() > kMigLogLength) mig_log_.pop_front();
}

void Ledger::NoteMigNode(const NodeName& node) {
  const placement::MigNode* mig = mig_.Find(node);
  if (mig == nullptr) return;
  for (size_t i = 0; i < mig->slices().size(); ++i) {
    if (!mig->holder(i).empty()) NoteMigChange(mig->holder(i));
  }
}

std::optional<std::vector<PodUid>> Ledger::MigChangedSince(uint64_t since) const {
  std::vector<PodUid> out;
  if (since == mig_version_) return out;
  if (since > mig_version_ || mig_log_.empty() || mig_log_.front().version > since + 1) return std::nullopt;
  auto it = std::lower_bound(mig_log_.begin(), mig_log_.end(), since + 1,
                             [](const MigChange& c, uint64_t v) { return c.version < v; });
  for (; it != mig_log_.end(); ++it) out.push_back(it->pod);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void Ledger::Unwait(const PodInfo& p) {
  if (p.node_name.empty()) return;
  auto it = waiting_.find(NodeName(p.node_name));
  if (it == waiting_.end()) return;
  it->second.erase(p.uid);
  if (it->second.empty()) waiting_.erase(it);
}

void Ledger::ChargeNow(PodRecord& rec) {
  const PodInfo& p = rec.info;
  if (rec.holding != Holding::kNone || p.node_name.empty() || p.gpus <= 0 || p.Terminal()) return;
  const NodeName node_name(p.node_name);
  auto nit = nodes_.find(node_name);
  if (nit == nodes_.end()) return;  // charged when the node appears
  auto idx = state_.FindNode(node_name);
  if (!idx) return;

  // A planned gang member bound where its plan put it: its reservation becomes its allocation.
  if (p.IsGangMember()) {
    auto git = gangs_.find(p.Gang());
    if (git != gangs_.end() && git->second.plan) {
      auto ait = git->second.assignment.find(p.uid);
      if (ait != git->second.assignment.end() &&
          git->second.plan->members[static_cast<size_t>(ait->second)].node == node_name) {
        const auto* res = state_.FindReservation(git->first);
        if (res && !res->committed[static_cast<size_t>(ait->second)] &&
            state_.Commit(git->first, ait->second, p.uid, p.priority).ok()) {
          rec.holding = Holding::kAssumed;
          rec.node = node_name;
          rec.gpus = res ? git->second.plan->members[static_cast<size_t>(ait->second)].gpus : 0;
          Holding kind = Holding::kAssumed;
          if (RealDevices(rec, nit->second, &kind) == rec.gpus) rec.holding = kind;
          return;
        }
      }
    }
  }

  Holding kind = Holding::kAssumed;
  std::optional<GpuMask> real = RealDevices(rec, nit->second, &kind);
  if (real) {
    // Real devices win over assumptions: move assumed holders out of the way.
    std::vector<PodUid> moved;
    for (const auto* alloc : state_.node(*idx).pods) {
      if (!(alloc->gpus & *real)) continue;
      auto pit = pods_.find(alloc->pod);
      if (pit != pods_.end() && pit->second.holding == Holding::kAssumed) moved.push_back(alloc->pod);
    }
    for (const PodUid& uid : moved) Uncharge(pods_.at(uid));
    if (state_.Allocate(p.uid, node_name, *real, p.priority).ok()) {
      rec.holding = kind;
      rec.node = node_name;
      rec.gpus = *real;
      for (const PodUid& uid : moved) Charge(pods_.at(uid));
      return;
    }
    ++warnings_;  // collides with another real holder or a reservation: fall back to counting
    for (const PodUid& uid : moved) Charge(pods_.at(uid));
  }
  const auto& ns = state_.node(*idx);
  const GpuMask avail = ns.free;
  const int want = std::min(p.gpus, std::popcount(avail));
  if (want <= 0) {
    ++warnings_;  // bound to a node the ledger sees as full: nothing left to charge
    return;
  }
  if (want < p.gpus) ++warnings_;
  GpuMask mask = 0;
  if (ns.spec.bandwidth) {
    auto choice = placement::ChooseDeviceSet(*ns.spec.bandwidth, {.count = want, .available = avail});
    if (choice.ok()) {
      for (int g : choice->gpus) mask |= GpuMask{1} << g;
    }
  }
  if (!mask) {
    GpuMask rest = avail;
    for (int i = 0; i < want; ++i) {
      const GpuMask low = rest & (~rest + 1);
      mask |= low;
      rest &= ~low;
    }
  }
  if (state_.Allocate(p.uid, node_name, mask, p.priority).ok()) {
    rec.holding = Holding::kAssumed;
    rec.node = node_name;
    rec.gpus = mask;
  }
}

void Ledger::UpsertPod(const PodInfo& info, MonotonicTime now) {
  auto it = pods_.find(info.uid);
  std::optional<PodRecord> old;
  if (it != pods_.end()) {
    old = it->second;
    Uncharge(it->second);
    Unwait(it->second.info);
    it->second.info = info;
  } else {
    it = pods_.emplace(info.uid, PodRecord{.info = info}).first;
    pod_by_name_[info.Key()] = info.uid;
  }
  UpdateGangMembership(old ? &*old : nullptr, it->second, now);
  Charge(it->second);
  if (!info.nominated_node.empty() && info.node_name.empty() && !info.deleting && !info.Terminal()) {
    nominated_.insert(info.uid);
  } else if (nominated_.erase(info.uid) > 0) {
    ++release_epoch_;  // its GPUs are no longer spoken for
  }
}

void Ledger::RemovePod(const PodUid& uid) {
  auto it = pods_.find(uid);
  if (it == pods_.end()) return;
  Uncharge(it->second);
  Unwait(it->second.info);
  RemoveFromGang(it->second.info);
  pod_by_name_.erase(it->second.info.Key());
  if (nominated_.erase(uid) > 0) ++release_epoch_;
  pods_.erase(it);
}

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

void Ledger::UpsertTrainingJob(const TrainingJobInfo& job) { jobs_[job.Key()] = job; }
void Ledger::RemoveTrainingJob(const std::string& key) { jobs_.erase(key); }

Status Ledger::AssumePod(const PodUid& uid, const NodeName& node, GpuMask gpus) {
  auto it = pods_.find(uid);
  if (it == pods_.end()) return NotFoundError(fmt::format("pod {} is not in the ledger", uid.str()));
  PodRecord& rec = it->second;
  Uncharge(rec);
  PHX_RETURN_IF_ERROR(state_.Allocate(uid, node, gpus, rec.info.priority));
  rec.info.node_name = node.str();
  rec.holding = Holding::kAssumed;
  rec.node = node;
  rec.gpus = gpus;
  return OkStatus();
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

const PodRecord* Ledger::FindPod(const PodUid& uid) const {
  auto it = pods_.find(uid);
  return it == pods_.end() ? nullptr : &it->second;
}
const PodRecord* Ledger::FindPodByName(std::string_view key) const {
  auto it = pod_by_name_.find(std::string(key));
  return it == pod_by_name_.end() ? nullptr : FindPod(it->second);
}
const GangRecord* Ledger::FindGang(const GangKey& key) const {
  auto it = gangs_.find(key);
  return it == gangs_.end() ? nullptr : &it->second;
}
GangRecord* Ledger::MutableGang(const GangKey& key) {
  auto it = gangs_.find(key);
  return it == gangs_.end() ? nullptr : &it->second;
}
const NodeRecord* Ledger::FindNode(const NodeName& name) const {
  auto it = nodes_.find(name);
  return it == nodes_.end() ? nullptr : &it->second;
}
const TrainingJobInfo* Ledger::FindTrainingJob(const std::string& key) const {
  auto it = jobs_.find(key);
  return it == jobs_.end() ? nullptr : &it->second;
}

std::vector<std::string> Ledger::DeviceIds(const NodeName& node, GpuMask gpus) const {
  std::vector<std::string> ids;
  const NodeRecord* rec = FindNode(node);
  if (!rec || !rec->topology_known) return ids;
  for (int g : placement::GpuList(gpus)) {
    if (static_cast<size_t>(g) < rec->uuids.size()) ids.push_back(rec->uuids[static_cast<size_t>(g)]);
  }
  return ids;
}

json::Json Ledger::ToJson() const {
  using json::Json;
  Json out = Json::object();
  std::vector<const NodeRecord*> nodes;
  for (const auto& [name, rec] : nodes_) nodes.push_back(&rec);
  std::sort(nodes.begin(), nodes.end(), [](auto* a, auto* b) { return a->info.name < b->info.name; });
  Json jn = Json::array();
  for (const NodeRecord* rec : nodes) {
    auto idx = state_.FindNode(rec->info.name);
    if (!idx) continue;
    const auto& s = state_.node(*idx);
    Json n = {{"name", rec->info.name.str()},
              {"pool", s.spec.pool},
              {"gpus", s.spec.gpu_count},
              {"schedulable", s.spec.schedulable},
              {"topologyKnown", rec->topology_known},
              {"healthy", placement::GpuList(s.spec.healthy)},
              {"free", placement::GpuList(s.free)},
              {"allocated", placement::GpuList(s.allocated)},
              {"reserved", placement::GpuList(s.reserved)}};
    if (!rec->info.topology_error.empty()) n["topologyError"] = rec->info.topology_error;
    if (const placement::MigNode* mig = mig_.Find(rec->info.name)) {
      Json devices = Json::array();
      for (size_t i = 0; i < mig->slices().size(); ++i) {
        const placement::MigSlice& d = mig->slices()[i];
        devices.push_back({{"gpu", d.gpu}, {"profile", d.profile}, {"device", d.device_id}, {"healthy", d.healthy},
                           {"pod", mig->holder(i).str()}});
      }
      n["mig"] = std::move(devices);
    }
    jn.push_back(std::move(n));
  }
  out["nodes"] = std::move(jn);
  std::vector<const PodRecord*> pods;
  for (const auto& [uid, rec] : pods_) {
    if (rec.holding != Holding::kNone || rec.info.IsGangMember()) pods.push_back(&rec);
  }
  std::sort(pods.begin(), pods.end(), [](auto* a, auto* b) { return a->info.uid < b->info.uid; });
  Json jp = Json::array();
  for (const PodRecord* rec : pods) {
    Json p = {{"pod", rec->info.Key()},
              {"uid", rec->info.uid.str()},
              {"node", rec->node.str()},
              {"gpus", placement::GpuList(rec->gpus)},
              {"holding", HoldingName(rec->holding)},
              {"priority", rec->info.priority}};
    if (rec->info.IsGangMember()) p["gang"] = rec->info.Gang().str();
    jp.push_back(std::move(p));
  }
  out["pods"] = std::move(jp);
  std::vector<const GangRecord*> gangs;
  for (const auto& [key, g] : gangs_) gangs.push_back(&g);
  std::sort(gangs.begin(), gangs.end(), [](auto* a, auto* b) { return a->key < b->key; });
  Json jg = Json::array();
  for (const GangRecord* g : gangs) {
    Json j = {{"gang", g->key.str()}, {"members", g->members.size()}, {"priority", g->priority}};
    if (g->min_annotated) j["minMembers"] = *g->min_annotated;
    if (g->plan) {
      Json members = Json::array();
      for (const auto& m : g->plan->members) {
        members.push_back({{"node", m.node.str()}, {"gpus", placement::GpuList(m.gpus)}});
      }
      j["plan"] = {{"pool", g->plan->pool}, {"domain", g->plan->domain}, {"members", std::move(members)}};
    }
    if (!g->last_no_fit.empty()) j["lastNoFit"] = g->last_no_fit;
    jg.push_back(std::move(j));
  }
  out["gangs"] = std::move(jg);
  out["cluster"] = {{"freeGpus", state_.FreeGpus()}, {"totalGpus", state_.TotalGpus()},
                    {"nodes", state_.NodeCount()}, {"pods", pods_.size()}, {"warnings", warnings_}};
  return out;
}

}  // namespace phalanx::extender
