#include "extender/objects/k8s_objects.h"

#include <charconv>
#include <cstdio>
#include <ctime>

#include <fmt/format.h>

#include "core/topology/topology_codec.h"
#include "extender/mig/mig_requests.h"

namespace phalanx::extender {
namespace {

using json::Json;

// obj[key], or nullptr when absent or null (json::Member).
const Json* Child(const Json& obj, std::string_view key) { return json::Member(obj, key); }

std::string StringOr(const Json& obj, std::string_view key, std::string fallback = "") {
  const Json* v = Child(obj, key);
  return v && v->is_string() ? v->get<std::string>() : fallback;
}

std::optional<std::string> StringField(const Json* obj, std::string_view key) {
  if (!obj) return std::nullopt;
  const Json* v = Child(*obj, key);
  if (!v || !v->is_string()) return std::nullopt;
  return v->get<std::string>();
}

Result<int> GpuRequest(const Json& container, std::string_view path) {
  const Json* resources = Child(container, "resources");
  if (!resources) return 0;
  // Extended resources: requests must equal limits, and a limit alone implies the request.
  for (const char* section : {"requests", "limits"}) {
    const Json* s = Child(*resources, section);
    if (!s || !s->is_object()) continue;
    const Json* q = Child(*s, kGpuResource);
    if (!q) continue;
    if (!q->is_string()) {
      return InvalidArgumentError(fmt::format("{}.resources.{}[{}]: expected a quantity string", path,
                                              section, kGpuResource));
    }
    auto count = ParseCountQuantity(q->get<std::string>());
    if (!count.ok()) {
      return InvalidArgumentError(fmt::format("{}.resources.{}[{}]: {}", path, section, kGpuResource,
                                              count.status().message()));
    }
    if (*count < 0 || *count > 1024) {
      return InvalidArgumentError(fmt::format("{}.resources.{}[{}]: {} is out of range", path, section,
                                              kGpuResource, *count));
    }
    return static_cast<int>(*count);
  }
  return 0;
}

std::optional<int> PositiveIntAnnotation(const Json* annotations, std::string_view key) {
  auto text = StringField(annotations, key);
  if (!text) return std::nullopt;
  int value = 0;
  auto [ptr, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec != std::errc() || ptr != text->data() + text->size() || value <= 0) return std::nullopt;
  return value;
}

Result<std::map<std::string, DeviceState, std::less<>>> ParseGpuState(std::string_view text) {
  PHX_ASSIGN_OR_RETURN(Json doc, json::Parse(text, 256 * 1024));
  std::map<std::string, DeviceState, std::less<>> out;
  const Json* devices = Child(doc, "devices");
  if (!devices) return out;
  if (!devices->is_object()) return InvalidArgumentError("devices: expected object");
  for (const auto& [id, d] : devices->items()) {
    DeviceState state;
    state.healthy = StringOr(d, "health", "Healthy") != "Unhealthy";
    state.pod_uid = StringOr(d, "podUID");
    out.emplace(id, std::move(state));
  }
  return out;
}

}  // namespace

std::string_view NodeInfo::Label(std::string_view key) const {
  auto it = labels.find(key);
  return it == labels.end() ? std::string_view() : std::string_view(it->second);
}

Result<int64_t> ParseCountQuantity(std::string_view q) {
  bool milli = !q.empty() && q.back() == 'm';
  if (milli) q.remove_suffix(1);
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(q.data(), q.data() + q.size(), value);
  if (q.empty() || ec != std::errc() || ptr != q.data() + q.size()) {
    return InvalidArgumentError(fmt::format("\"{}{}\" is not a whole-device count", q, milli ? "m" : ""));
  }
  if (milli) {
    if (value % 1000 != 0) return InvalidArgumentError(fmt::format("\"{}m\" is not a whole-device count", q));
    value /= 1000;
  }
  return value;
}

Result<SystemTime> ParseRfc3339(std::string_view text) {
  std::tm tm{};
  int consumed = 0;
  std::string s(text);
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                  &tm.tm_min, &tm.tm_sec, &consumed) != 6) {
    return InvalidArgumentError(fmt::format("\"{}\" is not an RFC 3339 time", text));
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  int64_t secs = timegm(&tm);
  std::string_view rest = std::string_view(s).substr(static_cast<size_t>(consumed));
  if (!rest.empty() && rest[0] == '.') {
    size_t i = 1;
    while (i < rest.size() && rest[i] >= '0' && rest[i] <= '9') ++i;
    rest.remove_prefix(i);
  }
  if (rest.size() == 6 && (rest[0] == '+' || rest[0] == '-')) {
    int hh = 0, mm = 0;
    if (std::sscanf(std::string(rest).c_str() + 1, "%2d:%2d", &hh, &mm) != 2) {
      return InvalidArgumentError(fmt::format("\"{}\": bad UTC offset", text));
    }
    secs -= (rest[0] == '+' ? 1 : -1) * (hh * 3600 + mm * 60);
  } else if (rest != "Z" && rest != "z") {
    return InvalidArgumentError(fmt::format("\"{}\" is not an RFC 3339 time", text));
  }
  // SystemTime counts nanoseconds in an int64: beyond about ±292 years of 1970 the conversion
  // overflows (undefined behaviour). 9.2e9 s is mid-2261.
  if (secs < -9'200'000'000 || secs > 9'200'000'000) {
    return InvalidArgumentError(fmt::format("\"{}\" is outside the years 1678-2261", text));
  }
  return SystemTime(std::chrono::seconds(secs));
}

std::string FormatRfc3339(SystemTime time) {
  const std::time_t t = std::chrono::system_clock::to_time_t(time);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

Result<NodeInfo> ParseNode(const Json& node) {
  if (!node.is_object()) return InvalidArgumentError("node: expected object");
  const Json* meta = Child(node, "metadata");
  NodeInfo info;
  info.name = NodeName(meta ? StringOr(*meta, "name") : "");
  if (info.name.empty()) return InvalidArgumentError("node.metadata.name: missing");
  if (const Json* labels = meta ? Child(*meta, "labels") : nullptr; labels && labels->is_object()) {
    for (const auto& [k, v] : labels->items()) {
      if (v.is_string()) info.labels.emplace(k, v.get<std::string>());
    }
  }
  if (const Json* spec = Child(node, "spec"); spec && spec->is_object()) {
    const Json* u = Child(*spec, "unschedulable");
    info.unschedulable = u && u->is_boolean() && u->get<bool>();
  }
  if (const Json* status = Child(node, "status")) {
    if (const Json* alloc = Child(*status, "allocatable"); alloc && alloc->is_object()) {
      if (const Json* q = Child(*alloc, kGpuResource); q && q->is_string()) {
        auto count = ParseCountQuantity(q->get<std::string>());
        if (!count.ok()) {
          return InvalidArgumentError(fmt::format("node {}: status.allocatable[{}]: {}", info.name.str(),
                                                  kGpuResource, count.status().message()));
        }
        info.allocatable_gpus = static_cast<int>(std::clamp<int64_t>(*count, 0, 1024));
      }
    }
    if (const Json* conditions = Child(*status, "conditions"); conditions && conditions->is_array()) {
      for (const Json& c : *conditions) {
        if (StringOr(c, "type") == "Ready") info.ready = StringOr(c, "status") == "True";
      }
    }
  }
  const Json* annotations = meta ? Child(*meta, "annotations") : nullptr;
  if (auto topo = StringField(annotations, topology::kGpuTopologyAnnotation)) {
    auto decoded = topology::DecodeTopology(*topo);
    if (decoded.ok()) {
      info.topology = std::move(*decoded);
    } else {
      info.topology_error = std::string(decoded.status().message());
    }
  }
  if (auto state = StringField(annotations, kGpuStateAnnotation)) {
    auto parsed = ParseGpuState(*state);
    if (parsed.ok()) {
      info.devices = std::move(*parsed);
    } else {
      info.gpu_state_error = std::string(parsed.status().message());
    }
  }
  return info;
}

Result<PodInfo> ParsePod(const Json& pod) {
  if (!pod.is_object()) return InvalidArgumentError("Pod: expected object");
  const Json* meta = Child(pod, "metadata");
  if (!meta || !meta->is_object()) return InvalidArgumentError("Pod.metadata: missing");
  PodInfo info;
  info.uid = PodUid(StringOr(*meta, "uid"));
  info.ns = StringOr(*meta, "namespace", "default");
  info.name = StringOr(*meta, "name");
  if (info.name.empty()) return InvalidArgumentError("Pod.metadata.name: missing");
  if (info.uid.empty()) return InvalidArgumentError("Pod.metadata.uid: missing");
  info.deleting = Child(*meta, "deletionTimestamp") != nullptr;
  if (auto t = StringField(meta, "creationTimestamp")) {
    if (auto parsed = ParseRfc3339(*t); parsed.ok()) info.creation_time = *parsed;
  }
  const Json* labels = Child(*meta, "labels");
  if (labels && labels->is_object()) {  // PodDisruptionBudget selectors (extender/eviction/pod_disruption_budgets.h)
    for (const auto& [k, v] : labels->items()) {
      if (v.is_string()) info.labels.emplace(k, v.get<std::string>());
    }
  }
  if (auto g = StringField(labels, kGangLabel)) {
    info.gang = *g;
  } else if (auto alias = StringField(labels, kGangAliasLabel)) {
    info.gang = *alias;
  }
  const Json* annotations = Child(*meta, "annotations");
  info.min_members = PositiveIntAnnotation(annotations, kMinMembersAnnotation);
  info.gang_timeout_seconds = PositiveIntAnnotation(annotations, kGangTimeoutAnnotation);
  info.topology_level = StringField(annotations, kTopologyAnnotation).value_or("");
  info.topology_required = StringField(annotations, kTopologyModeAnnotation).value_or("") == "required";
  if (auto idle = StringField(annotations, kIdleSinceAnnotation)) {
    if (auto parsed = ParseRfc3339(*idle); parsed.ok()) info.idle_since = *parsed;  // broken: not idle
  }
  if (auto devices = StringField(annotations, kDevicesAnnotation)) {
    auto parsed = ParseDeviceAssignment(*devices);
    // A broken annotation is ignored, not fatal; ClusterSync logs and counts the refusal.
    if (parsed.ok()) {
      info.devices = std::move(*parsed);
    } else {
      info.devices_error = std::string(parsed.status().message());
    }
  }
  if (const Json* owners = Child(*meta, "ownerReferences"); owners && owners->is_array()) {
    for (const Json& o : *owners) {
      if (StringOr(o, "kind") == "TrainingJob") info.training_job = StringOr(o, "name");
    }
  }
  if (const Json* spec = Child(pod, "spec"); spec && spec->is_object()) {
    info.node_name = StringOr(*spec, "nodeName");
    info.priority_class = StringOr(*spec, "priorityClassName");
    if (const Json* p = Child(*spec, "priority"); p && p->is_number_integer()) {
      info.priority = static_cast<int>(std::clamp<int64_t>(p->get<int64_t>(), INT32_MIN, INT32_MAX));
    }
    info.pool_selector = StringField(Child(*spec, "nodeSelector"), kProductLabel).value_or("");
    if (const Json* gates = Child(*spec, "schedulingGates"); gates && gates->is_array()) {
      for (const Json& g : *gates) {
        if (StringOr(g, "name") == kGangGate) info.gated = true;
      }
    }
    PHX_ASSIGN_OR_RETURN(PodDeviceRequests devices, ParsePodDeviceRequests(*spec));
    info.gpus = devices.gpus;
    info.gpu_container = std::move(devices.gpu_container);
    info.gpu_containers = std::move(devices.gpu_containers);
    info.mig = std::move(devices.mig);
    info.mig_container = std::move(devices.mig_container);
  }
  if (auto queue = info.labels.find(kQueueLabel);
      FormsImplicitGang(info.gang, queue == info.labels.end() ? "" : queue->second, info.gpus, !info.mig.empty())) {
    info.gang = ImplicitGangName(info.name);
    info.implicit_gang = true;
    info.min_members = 1;  // whatever a gang-min-members annotation says: it is one pod
  }
  if (const Json* status = Child(pod, "status"); status && status->is_object()) {
    const std::string phase = StringOr(*status, "phase", "Pending");
    info.phase = phase == "Running"     ? PodPhase::kRunning
                 : phase == "Succeeded" ? PodPhase::kSucceeded
                 : phase == "Failed"    ? PodPhase::kFailed
                 : phase == "Pending"   ? PodPhase::kPending
                                        : PodPhase::kUnknown;
    info.nominated_node = StringOr(*status, "nominatedNodeName");
    info.ready = false;
    if (const Json* conds = Child(*status, "conditions"); conds && conds->is_array()) {
      for (const Json& c : *conds) {
        if (StringOr(c, "type") == "Ready") info.ready = StringOr(c, "status") == "True";
      }
    }
    if (auto t = StringField(status, "startTime")) {
      if (auto parsed = ParseRfc3339(*t); parsed.ok()) info.start_time = *parsed;
    }
  }
  return info;
}

Result<PodDeviceRequests> ParsePodDeviceRequests(const Json& spec) {
  PodDeviceRequests out;
  int sum = 0;
  if (const Json* containers = Child(spec, "containers"); containers && containers->is_array()) {
    for (size_t i = 0; i < containers->size(); ++i) {
      PHX_ASSIGN_OR_RETURN(int n, GpuRequest((*containers)[i], fmt::format("Pod.spec.containers[{}]", i)));
      if (n > 0 && out.gpu_container.empty()) out.gpu_container = StringOr((*containers)[i], "name");
      if (n > 0) out.gpu_containers.emplace_back(StringOr((*containers)[i], "name"), n);
      sum += n;
    }
  }
  int init_max = 0;
  if (const Json* inits = Child(spec, "initContainers"); inits && inits->is_array()) {
    for (size_t i = 0; i < inits->size(); ++i) {
      PHX_ASSIGN_OR_RETURN(int n, GpuRequest((*inits)[i], fmt::format("Pod.spec.initContainers[{}]", i)));
      init_max = std::max(init_max, n);
    }
  }
  out.gpus = std::max(sum, init_max);
  PHX_ASSIGN_OR_RETURN(ParsedMigRequests mig, ParseMigRequests(spec));
  out.mig = std::move(mig.requests);
  out.mig_container = std::move(mig.container);
  return out;
}

std::string ImplicitGangName(std::string_view pod_name) {
  return fmt::format("{}{}", kImplicitGangPrefix, pod_name);
}

bool FormsImplicitGang(std::string_view gang, std::string_view queue_label, int gpus, bool requests_mig) {
  return gang.empty() && !queue_label.empty() && gpus > 0 && !requests_mig;
}

Result<TrainingJobInfo> ParseTrainingJob(const Json& job) {
  const Json* meta = Child(job, "metadata");
  if (!meta) return InvalidArgumentError("TrainingJob.metadata: missing");
  TrainingJobInfo info;
  info.ns = StringOr(*meta, "namespace", "default");
  info.name = StringOr(*meta, "name");
  if (info.name.empty()) return InvalidArgumentError("TrainingJob.metadata.name: missing");
  info.preempt_request = StringField(Child(*meta, "annotations"), kPreemptRequestAnnotation).value_or("");
  if (auto created = StringField(meta, "creationTimestamp")) {
    if (auto at = ParseRfc3339(*created); at.ok()) info.created = *at;  // the API server always sets it
  }
  // runPolicy.activeDeadlineSeconds bounds the run: the scheduling engine's duration hint.
  if (const Json* spec = Child(job, "spec")) {
    if (const Json* run = Child(*spec, "runPolicy"); run && run->is_object()) {
      if (const Json* v = Child(*run, "activeDeadlineSeconds"); v && v->is_number() && v->get<double>() > 0) {
        info.active_deadline_seconds = v->get<double>();
      }
    }
  }
  if (const Json* status = Child(job, "status")) {
    if (const Json* cost = Child(*status, "preemptionCost"); cost && cost->is_object()) {
      if (const Json* v = Child(*cost, "gpuSecondsAtRisk"); v && v->is_number()) {
        info.gpu_seconds_at_risk = v->get<double>();
      }
      if (const Json* v = Child(*cost, "noticeSecondsNeeded"); v && v->is_number()) {
        info.notice_seconds_needed = v->get<double>();
      }
    }
  }
  return info;
}

Result<DeviceAssignment> ParseDeviceAssignment(std::string_view text) {
  PHX_ASSIGN_OR_RETURN(Json doc, json::Parse(text, 64 * 1024));
  if (!doc.is_object()) return InvalidArgumentError("phalanx.io/devices: expected an object");
  DeviceAssignment out;
  for (const auto& [container, ids] : doc.items()) {
    if (!ids.is_array()) {
      return InvalidArgumentError(fmt::format("phalanx.io/devices.{}: expected an array", container));
    }
    auto& list = out[container];
    for (const Json& id : ids) {
      if (!id.is_string()) {
        return InvalidArgumentError(fmt::format("phalanx.io/devices.{}: expected strings", container));
      }
      list.push_back(id.get<std::string>());
    }
  }
  return out;
}

DeviceAssignment AssignGpusToContainers(const PodInfo& pod, const std::vector<std::string>& ids) {
  DeviceAssignment out;
  if (ids.empty()) return out;
  if (pod.gpu_containers.empty()) {
    out[pod.gpu_container.empty() ? "main" : pod.gpu_container] = ids;
    return out;
  }
  size_t next = 0;
  for (size_t c = 0; c < pod.gpu_containers.size() && next < ids.size(); ++c) {
    const auto& [name, count] = pod.gpu_containers[c];
    const bool last = c + 1 == pod.gpu_containers.size();
    const size_t take = last ? ids.size() - next : std::min(ids.size() - next, static_cast<size_t>(count));
    out[name].assign(ids.begin() + static_cast<std::ptrdiff_t>(next), ids.begin() + static_cast<std::ptrdiff_t>(next + take));
    next += take;
  }
  return out;
}

std::string EncodeDeviceAssignment(const DeviceAssignment& devices) {
  Json doc = Json::object();
  for (const auto& [container, ids] : devices) doc[container] = ids;
  return json::Dump(doc);
}

}  // namespace phalanx::extender
