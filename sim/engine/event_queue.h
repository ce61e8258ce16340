// The discrete-event queue: events ordered by time, then by insertion (so events at the
// same instant replay in the order they were scheduled, deterministically).
#pragma once

#include <cstdint>
#include <queue>
#include <vector>

#include "sim/model/job.h"

namespace phalanx::sim {

enum class EventType : uint8_t {
  kSubmit,   // a job arrives
  kFinish,   // a running attempt completes (stale if the token changed: preempted)
  kRestart,  // a preempted job re-enters the queue from its checkpoint
  kWake,     // a policy timer (e.g. a victim's minimum run time ends)
  kStop,     // a gracefully preempted attempt stops after checkpointing (stale if the token changed)
  kSample,   // periodic metrics sample (no scheduling effect)
};

struct Event {
  double time = 0;
  uint64_t seq = 0;
  EventType type = EventType::kSubmit;
  JobId job = -1;
  uint32_t token = 0;
};

class EventQueue {
 public:
  void Push(double time, EventType type, JobId job = -1, uint32_t token = 0) {
    heap_.push(Event{time, next_seq_++, type, job, token});
  }
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  const Event& top() const { return heap_.top(); }
  Event Pop() {
    Event e = heap_.top();
    heap_.pop();
    return e;
  }

 private:
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.time != b.time ? a.time > b.time : a.seq > b.seq;
    }
  };
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  uint64_t next_seq_ = 0;
};

}  // namespace phalanx::sim
