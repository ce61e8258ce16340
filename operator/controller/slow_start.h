// SlowStartBatch: the operator's pod creation (§3 step 1) in parallel without flooding the API
// server with requests that all fail. fn(0 .. count-1) runs in batches of 1, 2, 4, ... (at most
// `max_batch`), each batch in parallel; after a batch with a failure nothing more is started and
// the first error (by index) is returned. kube-controller-manager's Job and ReplicaSet
// controllers create pods the same way (slowStartBatch): a quota or webhook refusal costs one
// request, not N, while a 64-member gang takes 7 round trips instead of 64.
#pragma once

#include <functional>

#include "core/base/status.h"

namespace phalanx::op {

// `fn` must be safe to call from several threads at once. Returns the number of calls made in
// `*attempted` when not null.
Status SlowStartBatch(int count, int max_batch, const std::function<Status(int index)>& fn, int* attempted = nullptr);

}  // namespace phalanx::op
