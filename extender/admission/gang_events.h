// GangEvents: Kubernetes Events for a gang's way through admission (docs/architecture.md §2.2), derived from
// the ledger on each tick so the admission and bind code stays free of reporting:
//   GangAdmitted  (Normal)   the gang got a plan: GPUs reserved, gates lifted
//   GangWaiting   (Normal)   not admitted, with the reason in words; again only when the reason
//                            changes, and at most once per `waiting_interval` per gang
//   GangTimedOut  (Warning)  the bind barrier timed out; every held bind failed together
// Each Event is on the gang's first member (by name), the pod `kubectl describe` users look at.
// Call Observe() with the ledger under its read lock (Extender::ReadLedger). Not thread-safe:
// one caller (the daemon's ticker).
#pragma once

#include <chrono>
#include <map>
#include <string>

#include "core/base/clock.h"
#include "extender/state/ledger.h"
#include "extender/writes/event_sink.h"

namespace phalanx::extender {

class GangEvents {
 public:
  explicit GangEvents(EventSink& sink, std::chrono::seconds waiting_interval = std::chrono::seconds(60))
      : sink_(sink), waiting_interval_(waiting_interval) {}

  void Observe(const Ledger& ledger, MonotonicTime now);

 private:
  struct Seen {
    bool planned = false;
    std::string last_no_fit;
    MonotonicTime last_waiting{};
    bool waiting_sent = false;
  };
  EventSink& sink_;
  const std::chrono::seconds waiting_interval_;
  std::map<GangKey, Seen> seen_;
};

}  // namespace phalanx::extender
