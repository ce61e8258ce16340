#include "extender/mig_filter.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "extender/mig_requests.h"

namespace phalanx::extender {
namespace {

const placement::MigNode& EmptyMigNode() {
  static const placement::MigNode kEmpty;
  return kEmpty;
}

struct Verdict {
  bool fits = false;
  bool resolvable = false;
  std::string why;
};

Verdict Judge(const Ledger& ledger, std::string_view name, const PodInfo& pod, const placement::MigRequest& req) {
  const placement::ClusterState& state = ledger.state();
  auto idx = state.FindNode(NodeName(name));
  if (!idx) return {false, false, "node has no GPUs known to phalanx (no GPU topology, or not yet synced)"};
  const placement::NodeSpec& spec = state.node(*idx).spec;
  if (!pod.pool_selector.empty() && spec.pool != pod.pool_selector)
    return {false, false, fmt::format("node's GPU product is \"{}\", pod selects \"{}\"", spec.pool, pod.pool_selector)};
  if (!spec.schedulable) return {false, false, "node is cordoned or not ready"};
  const placement::MigNode* found = ledger.mig().Find(NodeName(name));
  const placement::MigNode& mig = found ? *found : EmptyMigNode();
  const placement::MigFeasibility f = placement::CheckMigFit(mig, req);
  if (f.fits()) return {true, false, ""};
  if (f.unresolvable()) return {false, false, f.Message()};
  // In use: preemption helps only if lower-priority pods hold enough of the missing devices.
  int lower = 0;
  for (size_t i = 0; i < mig.slices().size(); ++i) {
    if (mig.slices()[i].profile != req.profile || !mig.slices()[i].healthy || mig.holder(i).empty()) continue;
    const PodRecord* holder = ledger.FindPod(mig.holder(i));
    if (holder && holder->info.priority < pod.priority) ++lower;
  }
  if (f.free + lower >= req.count) return {false, true, f.Message()};
  return {false, false, f.Message() + " by pods of equal or higher priority"};
}

}  // namespace

bool RequestsMig(const PodInfo& pod) { return !pod.mig.empty(); }

FilterResult FilterMig(const Ledger& ledger, const FilterArgs& args) {
  FilterResult r;
  r.full_nodes = args.full_nodes;
  auto request = SingleMigRequest(args.pod.mig);
  std::string unsupported;
  if (!request.ok()) unsupported = std::string(request.status().message());
  else if (args.pod.gpus > 0) unsupported = "pod requests both nvidia.com/gpu and MIG devices; phalanx schedules one kind per pod";
  for (size_t i = 0; i < args.node_names.size(); ++i) {
    const std::string_view name = args.node_names[i];
    if (!unsupported.empty()) {
      r.unresolvable.emplace_back(name, unsupported);
      continue;
    }
    Verdict v = Judge(ledger, name, args.pod, **request);
    if (v.fits) {
      r.passed.push_back(name);
      if (args.full_nodes && i < args.raw_nodes.size()) r.passed_raw.push_back(args.raw_nodes[i]);
    } else {
      (v.resolvable ? r.failed : r.unresolvable).emplace_back(name, std::move(v.why));
    }
  }
  return r;
}

std::vector<HostScore> PrioritizeMig(const Ledger& ledger, const FilterArgs& args) {
  std::vector<HostScore> out;
  out.reserve(args.node_names.size());
  auto request = SingleMigRequest(args.pod.mig);
  for (std::string_view name : args.node_names) {
    int score = 0;
    if (request.ok() && *request) {
      if (const placement::MigNode* mig = ledger.mig().Find(NodeName(name))) {
        if (auto choice = placement::ChooseMigDevices(*mig, **request)) {
          score = std::clamp(static_cast<int>(std::lround(choice->score)), 0, 10);
        }
      }
    }
    out.push_back({name, score});
  }
  return out;
}

Result<std::vector<std::string>> AssumeMigForBind(Ledger& ledger, const PodInfo& pod, const NodeName& node) {
  PHX_ASSIGN_OR_RETURN(std::optional<placement::MigRequest> request, SingleMigRequest(pod.mig));
  if (!request) return InvalidArgumentError("pod requests no MIG devices");
  const placement::MigNode* mig = ledger.mig().Find(node);
  if (!mig) return FailedPreconditionError(fmt::format("node {} has no MIG devices", node.str()));
  std::vector<int> devices;
  if (const placement::MigHolding* held = ledger.mig().FindPod(pod.uid); held && held->node == node) {
    devices = held->devices;  // bind retried: keep what it has
  } else {
    auto choice = placement::ChooseMigDevices(*mig, *request);
    if (!choice) return FailedPreconditionError(placement::CheckMigFit(*mig, *request).Message());
    devices = std::move(choice->devices);
  }
  PHX_RETURN_IF_ERROR(ledger.AssumeMig(pod.uid, node, devices));
  std::vector<std::string> ids;
  for (int d : devices) ids.push_back(mig->slices()[static_cast<size_t>(d)].device_id);
  return ids;
}

}  // namespace phalanx::extender
