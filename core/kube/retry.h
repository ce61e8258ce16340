// RetryOnConflict: the read-modify-write loop (client-go's retry.RetryOnConflict). `fn` must
// re-read the object each time; it is re-run while it fails with Conflict (HTTP 409), at most
// `attempts` times in all, `delay` apart. Any other result is returned as is.
#pragma once

#include <chrono>
#include <functional>
#include <thread>

#include "core/kube/api_error.h"

namespace phalanx::kube {

inline Status RetryOnConflict(const std::function<Status()>& fn, int attempts = 5,
                              std::chrono::milliseconds delay = std::chrono::milliseconds(10)) {
  Status s;
  for (int i = 0; i < attempts; ++i) {
    if (i > 0) std::this_thread::sleep_for(delay);
    s = fn();
    if (!IsConflict(s)) return s;
  }
  return s;
}

}  // namespace phalanx::kube
