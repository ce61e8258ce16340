// EventSink: where the extender's Kubernetes Events go (docs/architecture.md §2.2): gang admitted / waiting /
// timed out at the barrier, preemption on the victims and the preemptor, evictions refused by a
// PodDisruptionBudget. API-server mode records them as events.k8s.io/v1 Events
// (extender/writes/kube_events.h); tests and embedded mode keep them in memory.
// Record() never blocks on the network and never fails (Events are best effort).
// Thread-safe.
#pragma once

#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace phalanx::extender {

struct EventObject {
  std::string api_version = "v1";
  std::string kind = "Pod";
  std::string ns, name, uid;
};

class EventSink {
 public:
  virtual ~EventSink() = default;
  // type: "Normal" or "Warning"; reason: CamelCase (e.g. "GangAdmitted"); action: what the
  // extender did (e.g. "Scheduling", "Preempting").
  virtual void Record(const EventObject& regarding, std::string_view type, std::string_view reason,
                      std::string_view action, std::string_view note) = 0;
};

class RecordingEventSink final : public EventSink {
 public:
  struct Event {
    EventObject regarding;
    std::string type, reason, action, note;
  };
  void Record(const EventObject& regarding, std::string_view type, std::string_view reason, std::string_view action,
              std::string_view note) override {
    std::lock_guard lock(mu_);
    events_.push_back({regarding, std::string(type), std::string(reason), std::string(action), std::string(note)});
  }
  std::vector<Event> events() const {
    std::lock_guard lock(mu_);
    return events_;
  }
  std::vector<Event> WithReason(std::string_view reason) const {
    std::lock_guard lock(mu_);
    std::vector<Event> out;
    for (const Event& e : events_) {
      if (e.reason == reason) out.push_back(e);
    }
    return out;
  }

 private:
  mutable std::mutex mu_;
  std::vector<Event> events_;
};

}  // namespace phalanx::extender
