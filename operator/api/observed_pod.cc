#include "operator/api/observed_pod.h"

#include <algorithm>
#include <charconv>

#include "operator/api/field_reader.h"
#include "operator/api/keys.h"
#include "operator/api/time_format.h"
#include "operator/cost/price_table.h"

namespace phalanx::op {

namespace {

int32_t ParseLabelInt(const json::Json* labels, std::string_view key) {
  if (labels == nullptr || !labels->is_object()) return -1;
  auto it = labels->find(key);
  if (it == labels->end() || !it->is_string()) return -1;
  const std::string& s = it->get_ref<const std::string&>();
  int32_t v = -1;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0) return -1;
  return v;
}

void DecodeContainer(const json::Json& cs, ObservedPod& pod) {
  if (!cs.is_object()) return;
  ObservedContainer c;
  if (auto n = cs.find("name"); n != cs.end() && n->is_string()) c.name = n->get<std::string>();
  auto state = cs.find("state");
  if (state != cs.end() && state->is_object()) {
    if (state->contains("running")) c.running = true;
    if (auto t = state->find("terminated"); t != state->end() && t->is_object()) {
      c.terminated = true;
      FieldReader r(&*t, "terminated");
      c.exit_code = static_cast<int32_t>(r.Int("exitCode").value_or(0));
      c.reason = r.String("reason").value_or("");
      c.message = r.String("message").value_or("");
      if (auto f = r.String("finishedAt")) {
        if (auto tm = ParseRfc3339(*f); tm.ok()) c.finished_at = *tm;
      }
    }
    if (auto w = state->find("waiting"); w != state->end() && w->is_object()) {
      if (auto r = w->find("reason"); r != w->end() && r->is_string()) c.reason = r->get<std::string>();
    }
  }
  pod.containers.push_back(std::move(c));
}

// Devices of every extended resource in a container's limits (requests equal limits for
// extended resources; requests are read when limits are absent).
double ContainerGpus(const json::Json& container) {
  const json::Json* res = json::Member(container, "resources");
  if (res == nullptr) return 0;
  const json::Json* q = json::Member(*res, "limits");
  if (q == nullptr || !q->is_object()) q = json::Member(*res, "requests");
  if (q == nullptr || !q->is_object()) return 0;
  double total = 0;
  for (auto it = q->begin(); it != q->end(); ++it) {
    int64_t count = 0;
    if (it->is_number_integer()) {
      count = it->get<int64_t>();
    } else if (it->is_string()) {
      const std::string& v = it->get_ref<const std::string&>();
      auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), count);
      if (ec != std::errc() || p != v.data() + v.size()) count = 0;
    }
    total += GpuEquivalents(it.key(), count);
  }
  return total;
}

}  // namespace

bool ObservedPod::HasFinalizer(std::string_view f) const {
  return std::find(finalizers.begin(), finalizers.end(), f) != finalizers.end();
}

Result<ObservedPod> DecodeObservedPod(const json::Json& obj) {
  if (!obj.is_object()) return InvalidArgumentError("pod: expected object");
  ObservedPod pod;
  const json::Json* meta = obj.contains("metadata") ? &obj["metadata"] : nullptr;
  FieldReader m(meta, "metadata");
  pod.name = m.String("name").value_or("");
  pod.namespace_ = m.String("namespace").value_or("");
  if (const json::Json* owners = m.Raw("ownerReferences"); owners != nullptr && owners->is_array()) {
    for (const auto& o : *owners) {
      if (o.is_object() && o.value("controller", false)) pod.controller_uid = o.value("uid", std::string());
    }
  }
  pod.uid = m.String("uid").value_or("");
  pod.resource_version = m.String("resourceVersion").value_or("");
  if (auto d = m.String("deletionTimestamp")) {
    auto t = ParseRfc3339(*d);
    if (!t.ok()) return t.status().WithContext("metadata.deletionTimestamp");
    pod.deletion_timestamp = *t;
  }
  const json::Json* labels = m.Raw("labels");
  if (labels != nullptr && labels->is_object()) {
    if (auto it = labels->find(kLabelJobName); it != labels->end() && it->is_string()) pod.job_name = it->get<std::string>();
  }
  pod.attempt = ParseLabelInt(labels, kLabelAttempt);
  pod.index = ParseLabelInt(labels, kLabelReplicaIndex);
  if (const json::Json* f = m.Raw("finalizers"); f != nullptr && f->is_array()) {
    for (const auto& x : *f) {
      if (x.is_string()) pod.finalizers.push_back(x.get<std::string>());
    }
  }
  if (const json::Json* a = m.Raw("annotations"); a != nullptr && a->is_object()) {
    for (auto it = a->begin(); it != a->end(); ++it) {
      if (it->is_string()) pod.annotations[it.key()] = it->get<std::string>();
    }
  }
  if (pod.name.empty()) return InvalidArgumentError("pod metadata.name: required field missing");

  if (auto spec = obj.find("spec"); spec != obj.end() && spec->is_object()) {
    if (auto n = spec->find("nodeName"); n != spec->end() && n->is_string()) pod.node_name = n->get<std::string>();
    if (auto pr = spec->find("priority"); pr != spec->end() && pr->is_number_integer()) {
      pod.priority = static_cast<int32_t>(pr->get<int64_t>());
    }
    if (auto cs = spec->find("containers"); cs != spec->end() && cs->is_array()) {
      for (const auto& c : *cs) pod.gpus += ContainerGpus(c);
    }
    if (auto g = spec->find("schedulingGates"); g != spec->end() && g->is_array()) {
      for (const auto& gate : *g) {
        if (gate.is_object() && gate.value("name", std::string()) == kSchedulingGate) pod.gated = true;
      }
    }
  }
  if (auto st = obj.find("status"); st != obj.end() && st->is_object()) {
    FieldReader s(&*st, "status");
    pod.phase = s.String("phase").value_or("Pending");
    pod.reason = s.String("reason").value_or("");
    pod.message = s.String("message").value_or("");
    if (auto t = s.String("startTime")) {
      if (auto tm = ParseRfc3339(*t); tm.ok()) pod.start_time = *tm;
    }
    if (auto conds = st->find("conditions"); conds != st->end() && conds->is_array()) {
      for (const auto& c : *conds) {
        if (!c.is_object()) continue;
        const std::string type = c.value("type", std::string());
        const std::string status = c.value("status", std::string());
        if (type == "DisruptionTarget" && status == "True") {
          pod.disruption_reason = c.value("reason", std::string("DisruptionTarget"));
          pod.disruption_message = c.value("message", std::string());
        } else if (type == "Ready") {
          pod.ready = status == "True";
        }
      }
    }
    if (auto cs = st->find("containerStatuses"); cs != st->end() && cs->is_array()) {
      for (const auto& c : *cs) DecodeContainer(c, pod);
    }
  } else {
    pod.phase = "Pending";
  }
  return pod;
}

}  // namespace phalanx::op
