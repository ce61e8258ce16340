// KubeEventSink: the extender's Events as events.k8s.io/v1 objects through core/kube's
// EventRecorder (queued, de-duplicated into series, never blocking the caller).
#pragma once

#include "core/kube/event_recorder.h"
#include "extender/writes/event_sink.h"

namespace phalanx::extender {

class KubeEventSink final : public EventSink {
 public:
  explicit KubeEventSink(kube::EventRecorder& recorder) : recorder_(recorder) {}
  void Record(const EventObject& regarding, std::string_view type, std::string_view reason, std::string_view action,
              std::string_view note) override {
    kube::ObjectReference ref;
    ref.api_version = regarding.api_version;
    ref.kind = regarding.kind;
    ref.ns = regarding.ns;
    ref.name = regarding.name;
    ref.uid = regarding.uid;
    recorder_.Record(ref, type, reason, action, note);
  }

 private:
  kube::EventRecorder& recorder_;
};

}  // namespace phalanx::extender
