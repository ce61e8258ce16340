#include "extender/mig/mig_filter.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "extender/mig/mig_requests.h"

namespace phalanx::extender {
namespace {

const placement::MigNode& EmptyMigNode() {
  static const placement::MigNode kEmpty;
  return kEmpty;
}

struct Verdict {
  bool fits = false;
  bool resolvable = false;
  const FailReason* why = nullptr;
};

// Most failing nodes share a handful of messages (a full cluster fails every node for the
// same one): each distinct message is formatted once per request.
class Messages {
 public:
  const FailReason& Fixed(std::string_view text) {
    return Find(Key{-1, 0, 0, 0, false}, text, [&] { return std::string(text); });
  }
  const FailReason& Pool(std::string_view node_pool, std::string_view selector) {
    return Find(Key{-2, 0, 0, 0, false}, node_pool,
                [&] { return fmt::format("node's GPU product is \"{}\", pod selects \"{}\"", node_pool, selector); });
  }
  const FailReason& Fit(const placement::MigFeasibility& f, bool higher) {
    return Find(Key{static_cast<int>(f.reason), f.requested, f.free, f.total, higher}, {}, [&] {
      return higher ? f.Message() + " by pods of equal or higher priority" : f.Message();
    });
  }

 private:
  struct Key {
    int kind;
    int requested, free, total;
    bool higher;
    bool operator==(const Key&) const = default;
  };
  template <class Format>
  const FailReason& Find(const Key& key, std::string_view text, const Format& format) {
    for (const Entry& e : entries_)
      if (e.key == key && e.text == text) return *e.message;
    entries_.push_back({key, std::string(text), std::make_unique<FailReason>(format())});
    return *entries_.back().message;
  }
  struct Entry {
    Key key;
    std::string text;
    std::unique_ptr<FailReason> message;  // stable address while entries_ grows
  };
  std::vector<Entry> entries_;
};

Verdict Judge(const Ledger& ledger, std::string_view name, const PodInfo& pod, const placement::MigRequest& req,
              const PoolRefusals& refused, Messages& messages) {
  const placement::ClusterState& state = ledger.state();
  auto idx = state.FindNode(name);
  if (!idx) {
    return {false, false, &messages.Fixed("node has no GPUs known to phalanx (no GPU topology, or not yet synced)")};
  }
  const placement::NodeSpec& spec = state.node(*idx).spec;
  if (!pod.pool_selector.empty() && spec.pool != pod.pool_selector)
    return {false, false, &messages.Pool(spec.pool, pod.pool_selector)};
  if (!spec.schedulable) return {false, false, &messages.Fixed("node is cordoned or not ready")};
  if (!refused.empty()) {
    if (auto it = refused.find(spec.pool); it != refused.end()) return {false, false, &messages.Fixed(it->second)};
  }
  const placement::MigLedger::NodeView view = ledger.mig().View(name);
  const placement::MigNode& mig = view.node ? *view.node : EmptyMigNode();
  const placement::MigFeasibility f = placement::CheckMigFit(mig, req);
  if (f.fits()) return {true, false, nullptr};
  if (f.unresolvable()) return {false, false, &messages.Fit(f, false)};
  // In use: preemption helps only if lower-priority pods hold enough of the missing devices.
  // The ledger keeps each device's holder priority: no pod lookup per holder, and nothing
  // to count when no holder on the node is below the pod (a full cluster of its own tier).
  int lower = 0;
  if (view.lowest_held < pod.priority) {
    for (int d : mig.DevicesOf(req.profile)) {
      if (f.free + lower >= req.count) break;
      if (view.held_priority[static_cast<size_t>(d)] < pod.priority) ++lower;  // kNotHeld never is
    }
  }
  if (f.free + lower >= req.count) return {false, true, &messages.Fit(f, false)};
  return {false, false, &messages.Fit(f, true)};
}

}  // namespace

bool RequestsMig(const PodInfo& pod) { return !pod.mig.empty(); }

FilterResult FilterMig(const Ledger& ledger, const FilterArgs& args, const PoolRefusals& refused) {
  FilterResult r;
  r.full_nodes = args.full_nodes;
  auto request = SingleMigRequest(args.pod.mig);
  std::optional<FailReason> unsupported;
  if (!request.ok()) {
    unsupported = FailReason(std::string(request.status().message()));
  } else if (args.pod.gpus > 0) {
    unsupported = FailReason("pod requests both nvidia.com/gpu and MIG devices; phalanx schedules one kind per pod");
  }
  Messages messages;
  for (size_t i = 0; i < args.node_names.size(); ++i) {
    const std::string_view name = args.node_names[i];
    if (unsupported) {
      r.unresolvable.emplace_back(name, *unsupported);
      continue;
    }
    const Verdict v = Judge(ledger, name, args.pod, **request, refused, messages);
    if (v.fits) {
      r.passed.push_back(name);
      if (args.full_nodes && i < args.raw_nodes.size()) r.passed_raw.push_back(args.raw_nodes[i]);
    } else {
      (v.resolvable ? r.failed : r.unresolvable).emplace_back(name, *v.why);
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
      if (const placement::MigNode* mig = ledger.mig().Find(name)) {
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
  PHX_RETURN_IF_ERROR(ledger.AssumeMig(pod.uid, node, devices, pod.priority));
  std::vector<std::string> ids;
  for (int d : devices) ids.push_back(mig->slices()[static_cast<size_t>(d)].device_id);
  return ids;
}

}  // namespace phalanx::extender
