// Filter, prioritize and bind for pods requesting MIG devices (`nvidia.com/mig-<profile>`),
// on the ledger's MigLedger, with core/placement's MIG feasibility and best fit
// (core/placement/mig.h) — the same logic the simulator's `phalanx` policy runs.
//
// Filter: a node passes when it has enough free devices of the profile and the pod's team
// queue has room for them in the node's pool (see FilterMig). Nodes whose MIG
// geometry can never hold the request (no MIG, no device of that profile, fewer than
// requested, unhealthy parents), another GPU product, cordoned or unknown nodes are
// FailedAndUnresolvable; nodes where pods of lower priority hold the missing devices are
// Failed (the scheduler's preemption can free them); nodes where equal or higher
// priority pods hold them are unresolvable.
// Prioritize: ChooseMigDevices' best-fit score (0..10), 0 where the pod does not fit.
// Bind: the best-fit devices, charged to the pod, as MIG UUIDs for `phalanx.io/devices`.
//
// The caller holds the extender's lock (shared for filter/prioritize, exclusive for bind).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/base/result.h"
#include "extender/state/ledger.h"
#include "extender/verbs/wire.h"

namespace phalanx::extender {

// True if the pod asks for MIG devices (these functions then judge it).
bool RequestsMig(const PodInfo& pod);

// Pool -> why the pod's team queue has no room there (QueueQuotas::MigQuotaRefusals).
using PoolRefusals = std::map<std::string, std::string, std::less<>>;

// Nodes of a pool in `refused` fail as unresolvable with its reason (preempting on them
// would not give the queue room).
FilterResult FilterMig(const Ledger& ledger, const FilterArgs& args, const PoolRefusals& refused = {});
std::vector<HostScore> PrioritizeMig(const Ledger& ledger, const FilterArgs& args);

// Chooses and charges the pod's devices on `node`; their device IDs (MIG UUIDs).
// FailedPrecondition when the pod no longer fits there; InvalidArgument for a pod
// with several MIG profiles.
Result<std::vector<std::string>> AssumeMigForBind(Ledger& ledger, const PodInfo& pod, const NodeName& node);

}  // namespace phalanx::extender
