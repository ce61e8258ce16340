#include "operator/controller/slow_start.h"

#include <algorithm>
#include <thread>
#include <vector>

namespace phalanx::op {

Status SlowStartBatch(int count, int max_batch, const std::function<Status(int index)>& fn, int* attempted) {
  int done = 0;
  Status first_error;
  for (int batch = 1; done < count && first_error.ok(); batch = std::min(batch * 2, std::max(1, max_batch))) {
    const int size = std::min(batch, count - done);
    std::vector<Status> results(static_cast<size_t>(size));
    std::vector<std::thread> threads;
    threads.reserve(static_cast<size_t>(size - 1));
    for (int i = 1; i < size; ++i) threads.emplace_back([&, i] { results[static_cast<size_t>(i)] = fn(done + i); });
    results[0] = fn(done);  // the calling thread takes one
    for (auto& t : threads) t.join();
    done += size;
    for (const Status& s : results) {
      if (!s.ok()) {
        first_error = s;
        break;
      }
    }
  }
  if (attempted != nullptr) *attempted = done;
  return first_error;
}

}  // namespace phalanx::op
