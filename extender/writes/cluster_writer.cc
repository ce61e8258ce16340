#include "extender/writes/cluster_writer.h"

#include <fmt/format.h>

namespace phalanx::extender {

Status RecordingWriter::Record(std::string verb, std::string target, std::string value) {
  std::lock_guard lock(mu_);
  if (failures_.contains({verb, target})) {
    return UnavailableError(fmt::format("injected failure: {} {}", verb, target));
  }
  calls_.push_back({std::move(verb), std::move(target), std::move(value)});
  return OkStatus();
}

Status RecordingWriter::PatchPodDevices(const PodRef& pod, const std::string& devices_json) {
  return Record("devices", pod.Key(), devices_json);
}
Status RecordingWriter::BindPod(const PodRef& pod, const std::string& node) { return Record("bind", pod.Key(), node); }
Status RecordingWriter::LiftGangGate(const PodRef& pod) { return Record("ungate", pod.Key(), ""); }
Status RecordingWriter::RequeuePod(const PodRef& pod, const std::string& stamp) {
  return Record("requeue", pod.Key(), stamp);
}
Status RecordingWriter::EvictPod(const PodRef& pod, const std::string& reason) {
  return Record("evict", pod.Key(), reason);
}
Status RecordingWriter::DeletePod(const PodRef& pod, const std::string& reason) {
  return Record("delete", pod.Key(), reason);
}
Status RecordingWriter::RequestGracefulPreemption(const std::string& ns, const std::string& job,
                                                  const std::string& request_json) {
  return Record("preempt-request", ns + "/" + job, request_json);
}

void RecordingWriter::FailOn(std::string verb, std::string target) {
  std::lock_guard lock(mu_);
  failures_.insert({std::move(verb), std::move(target)});
}

std::vector<RecordingWriter::Call> RecordingWriter::calls() const {
  std::lock_guard lock(mu_);
  return calls_;
}

std::vector<RecordingWriter::Call> RecordingWriter::CallsOf(const std::string& verb) const {
  std::lock_guard lock(mu_);
  std::vector<Call> out;
  for (const Call& c : calls_) {
    if (c.verb == verb) out.push_back(c);
  }
  return out;
}

}  // namespace phalanx::extender
