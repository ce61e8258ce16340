#include "extender/writes/write_context.h"

namespace phalanx::extender {
namespace {

thread_local WriteLane tls_lane = WriteLane::kBulk;
thread_local std::optional<WriteClock::time_point> tls_deadline;

}  // namespace

WriteLane CurrentWriteLane() { return tls_lane; }
std::optional<WriteClock::time_point> CurrentWriteDeadline() { return tls_deadline; }

ScopedWriteLane::ScopedWriteLane(WriteLane lane) : saved_(tls_lane) { tls_lane = lane; }
ScopedWriteLane::~ScopedWriteLane() { tls_lane = saved_; }

ScopedWriteDeadline::ScopedWriteDeadline(std::optional<WriteClock::time_point> deadline) : saved_(tls_deadline) {
  tls_deadline = deadline;
}
ScopedWriteDeadline::~ScopedWriteDeadline() { tls_deadline = saved_; }

}  // namespace phalanx::extender
