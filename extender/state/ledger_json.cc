// Ledger (ledger.h): the whole ledger as deterministic JSON (GET /debug/state).
#include "extender/state/ledger.h"

#include <algorithm>

namespace phalanx::extender {

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
