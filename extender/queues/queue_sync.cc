#include "extender/queues/queue_sync.h"

#include <algorithm>
#include <cmath>
#include <regex>
#include <set>

#include <fmt/format.h>

namespace phalanx::extender {
namespace {

using kube::Json;

bool IsDnsLabel(std::string_view s) {
  if (s.empty() || s.size() > 63 || s.front() == '-' || s.back() == '-') return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; });
}

// GPUs (a JSON number) as milli-GPUs.
Status ReadGpus(const Json& obj, const char* key, const std::string& at, std::optional<scheduling::Milli>* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return OkStatus();
  if (!it->is_number()) return InvalidArgumentError(fmt::format("{}.{}: expected a number of GPUs", at, key));
  const double gpus = it->get<double>();
  if (!std::isfinite(gpus) || gpus < 0 || gpus > 1e9) {
    return InvalidArgumentError(fmt::format("{}.{}: must be a number of GPUs >= 0", at, key));
  }
  const double milli = gpus * scheduling::kMilliGpu;
  if (std::abs(milli - std::round(milli)) > 1e-6) {
    return InvalidArgumentError(fmt::format("{}.{}: at most 3 decimals (milli-GPUs)", at, key));
  }
  *out = static_cast<scheduling::Milli>(std::llround(milli));
  return OkStatus();
}

Status ReadString(const Json& obj, const char* key, const std::string& at, std::string* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return OkStatus();
  if (!it->is_string()) return InvalidArgumentError(fmt::format("{}.{}: expected a string", at, key));
  *out = it->get<std::string>();
  return OkStatus();
}

Result<std::vector<LabelRequirement>> ParseNamespaceSelector(const Json& sel) {
  const std::string at = "spec.namespaceSelector";
  if (!sel.is_object()) return InvalidArgumentError(at + ": expected an object");
  std::vector<LabelRequirement> reqs;
  if (auto ml = sel.find("matchLabels"); ml != sel.end() && !ml->is_null()) {
    if (!ml->is_object()) return InvalidArgumentError(at + ".matchLabels: expected an object");
    for (const auto& [k, v] : ml->items()) {
      if (!v.is_string()) return InvalidArgumentError(fmt::format("{}.matchLabels.{}: expected a string", at, k));
      reqs.push_back({k, "In", {v.get<std::string>()}});
    }
  }
  if (auto me = sel.find("matchExpressions"); me != sel.end() && !me->is_null()) {
    if (!me->is_array()) return InvalidArgumentError(at + ".matchExpressions: expected a list");
    for (size_t i = 0; i < me->size(); ++i) {
      const Json& e = (*me)[i];
      const std::string eat = fmt::format("{}.matchExpressions[{}]", at, i);
      if (!e.is_object()) return InvalidArgumentError(eat + ": expected an object");
      LabelRequirement r;
      PHX_RETURN_IF_ERROR(ReadString(e, "key", eat, &r.key));
      PHX_RETURN_IF_ERROR(ReadString(e, "operator", eat, &r.op));
      if (r.key.empty()) return InvalidArgumentError(eat + ".key: required");
      if (!(r.op == "In" || r.op == "NotIn" || r.op == "Exists" || r.op == "DoesNotExist")) {
        return InvalidArgumentError(fmt::format("{}.operator: \"{}\" is not In, NotIn, Exists or DoesNotExist", eat, r.op));
      }
      if (auto vals = e.find("values"); vals != e.end() && !vals->is_null()) {
        if (!vals->is_array()) return InvalidArgumentError(eat + ".values: expected a list");
        for (const Json& v : *vals) {
          if (!v.is_string()) return InvalidArgumentError(eat + ".values: expected strings");
          r.values.push_back(v.get<std::string>());
        }
      }
      const bool set_op = r.op == "In" || r.op == "NotIn";
      if (set_op != !r.values.empty()) {
        return InvalidArgumentError(eat + ".values: In and NotIn need values; Exists and DoesNotExist take none");
      }
      reqs.push_back(std::move(r));
    }
  }
  return reqs;
}

Status DecodeSpec(const Json& spec, GpuQueueInfo& q) {
  if (!spec.is_object()) return InvalidArgumentError("spec: expected an object");
  PHX_RETURN_IF_ERROR(ReadString(spec, "cohort", "spec", &q.spec.cohort));
  PHX_RETURN_IF_ERROR(ReadString(spec, "parent", "spec", &q.spec.parent));
  if (!q.spec.cohort.empty() && !IsDnsLabel(q.spec.cohort)) {
    return InvalidArgumentError(fmt::format("spec.cohort: \"{}\" must be a DNS label", q.spec.cohort));
  }
  if (!q.spec.parent.empty() && !q.spec.cohort.empty()) {
    return InvalidArgumentError("spec.cohort: a child queue shares with its siblings; set the cohort on its parent");
  }
  if (q.spec.parent == q.name) return InvalidArgumentError("spec.parent: a queue cannot be its own parent");
  if (auto w = spec.find("weight"); w != spec.end() && !w->is_null()) {
    if (!w->is_number()) return InvalidArgumentError("spec.weight: expected a number");
    q.spec.weight = w->get<double>();
    if (!(q.spec.weight > 0) || !std::isfinite(q.spec.weight)) return InvalidArgumentError("spec.weight: must be > 0");
  }
  if (auto d = spec.find("default"); d != spec.end() && !d->is_null()) {
    if (!d->is_boolean()) return InvalidArgumentError("spec.default: expected true or false");
    q.is_default = d->get<bool>();
  }
  if (auto sel = spec.find("namespaceSelector"); sel != spec.end() && !sel->is_null()) {
    PHX_ASSIGN_OR_RETURN(q.namespace_selector, ParseNamespaceSelector(*sel));
  }
  if (auto quotas = spec.find("quotas"); quotas != spec.end() && !quotas->is_null()) {
    if (!quotas->is_array()) return InvalidArgumentError("spec.quotas: expected a list");
    std::set<std::string> pools;
    for (size_t i = 0; i < quotas->size(); ++i) {
      const Json& e = (*quotas)[i];
      const std::string at = fmt::format("spec.quotas[{}]", i);
      if (!e.is_object()) return InvalidArgumentError(at + ": expected an object");
      scheduling::PoolQuota pq;
      PHX_RETURN_IF_ERROR(ReadString(e, "pool", at, &pq.pool));
      if (pq.pool.empty()) return InvalidArgumentError(at + ".pool: required (a phalanx.io/gpu.product value)");
      if (!pools.insert(pq.pool).second) return InvalidArgumentError(fmt::format("{}.pool: duplicate pool \"{}\"", at, pq.pool));
      std::optional<scheduling::Milli> nominal;
      PHX_RETURN_IF_ERROR(ReadGpus(e, "nominal", at, &nominal));
      if (!nominal) return InvalidArgumentError(at + ".nominal: required");
      pq.nominal = *nominal;
      PHX_RETURN_IF_ERROR(ReadGpus(e, "borrowingLimit", at, &pq.borrowing_limit));
      PHX_RETURN_IF_ERROR(ReadGpus(e, "lendingLimit", at, &pq.lending_limit));
      if (pq.lending_limit && *pq.lending_limit > pq.nominal) {
        return InvalidArgumentError(at + ".lendingLimit: must not exceed nominal");
      }
      q.spec.quotas.push_back(std::move(pq));
    }
  }
  return OkStatus();
}

// A string field of `object`, "" when absent or not a string (Json::value throws on the latter).
std::string StringField(const Json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

Result<NamespaceInfo> DecodeNamespace(const Json& object) {
  NamespaceInfo out;
  if (!object.is_object()) return InvalidArgumentError("Namespace: expected an object");
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return InvalidArgumentError("Namespace.metadata: missing");
  out.name = StringField(*meta, "name");
  if (out.name.empty()) return InvalidArgumentError("Namespace.metadata.name: missing");
  if (auto labels = meta->find("labels"); labels != meta->end() && labels->is_object()) {
    for (const auto& [k, v] : labels->items()) {
      if (v.is_string()) out.labels.emplace(k, v.get<std::string>());
    }
  }
  return out;
}

bool GpuQueueInfo::Selects(const NamespaceInfo& ns) const {
  return namespace_selector && SelectorMatches(*namespace_selector, ns.labels);
}

Result<GpuQueueInfo> DecodeGpuQueue(const Json& object) {
  GpuQueueInfo q;
  if (!object.is_object()) return InvalidArgumentError("GpuQueue: expected an object");
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return InvalidArgumentError("GpuQueue.metadata: missing");
  q.name = StringField(*meta, "name");
  if (q.name.empty()) return InvalidArgumentError("GpuQueue.metadata.name: missing");
  q.uid = StringField(*meta, "uid");
  if (auto g = meta->find("generation"); g != meta->end() && g->is_number_integer()) q.generation = g->get<int64_t>();
  q.spec.name = q.name;
  if (!IsDnsLabel(q.name)) {
    q.error = fmt::format("metadata.name: \"{}\" must be a DNS label (lowercase letters, digits, '-', 1-63)", q.name);
    return q;
  }
  auto spec = object.find("spec");
  if (spec == object.end()) {
    q.error = "spec: required";
    return q;
  }
  if (Status st = DecodeSpec(*spec, q); !st.ok()) q.error = std::string(st.message());
  return q;
}

bool QueueAssignment::operator==(const QueueAssignment& o) const {
  if (namespace_queue != o.namespace_queue || config.default_queue != o.config.default_queue ||
      config.queues.size() != o.config.queues.size()) {
    return false;
  }
  for (size_t i = 0; i < config.queues.size(); ++i) {
    const scheduling::QueueSpec &a = config.queues[i], &b = o.config.queues[i];
    if (a.name != b.name || a.cohort != b.cohort || a.weight != b.weight || a.parent != b.parent ||
        a.quotas.size() != b.quotas.size()) {
      return false;
    }
    for (size_t j = 0; j < a.quotas.size(); ++j) {
      const scheduling::PoolQuota &x = a.quotas[j], &y = b.quotas[j];
      if (x.pool != y.pool || x.nominal != y.nominal || x.borrowing_limit != y.borrowing_limit ||
          x.lending_limit != y.lending_limit) {
        return false;
      }
    }
  }
  return true;
}

bool QueueStatusInfo::operator==(const QueueStatusInfo& o) const {
  if (name != o.name || pending_gangs != o.pending_gangs || pending != o.pending || pools.size() != o.pools.size() ||
      std::abs(fair_share - o.fair_share) > 1e-9) {
    return false;
  }
  for (size_t i = 0; i < pools.size(); ++i) {
    const auto &a = pools[i], &b = o.pools[i];
    if (a.pool != b.pool || a.nominal != b.nominal || a.usage != b.usage || a.borrowed != b.borrowed || a.lent != b.lent) {
      return false;
    }
  }
  return true;
}

namespace {
double Gpus(scheduling::Milli m) { return static_cast<double>(m) / scheduling::kMilliGpu; }
}  // namespace

std::string UsageSummary(const QueueStatusInfo& q) {
  std::string out;
  for (const auto& p : q.pools) {
    if (!out.empty()) out += "; ";
    out += fmt::format("{}: {}/{}", p.pool, Gpus(p.usage), Gpus(p.nominal));
    if (p.borrowed > 0) out += fmt::format(" +{} borrowed", Gpus(p.borrowed));
    if (p.lent > 0) out += fmt::format(" -{} lent", Gpus(p.lent));
  }
  return out;
}

kube::Json QueueStatusJson(const QueueStatusInfo& q) {
  kube::Json pools = kube::Json::array();
  for (const auto& p : q.pools) {
    pools.push_back({{"pool", p.pool}, {"nominal", Gpus(p.nominal)}, {"usage", Gpus(p.usage)},
                     {"borrowed", Gpus(p.borrowed)}, {"lent", Gpus(p.lent)}});
  }
  return kube::Json{{"usageSummary", UsageSummary(q)},
                    {"pendingGangs", q.pending_gangs},
                    {"pendingGpus", Gpus(q.pending)},
                    {"fairShare", std::round(q.fair_share * 1e6) / 1e6},
                    {"pools", std::move(pools)}};
}

Result<QueueAssignment> AssignQueues(const std::vector<GpuQueueInfo>& queues, const std::vector<NamespaceInfo>& namespaces,
                                     const scheduling::QueueConfig& base) {
  QueueAssignment out;
  out.config.cross_queue_preemption_priority = base.cross_queue_preemption_priority;
  out.config.reclaim_after_s = base.reclaim_after_s;
  std::vector<const GpuQueueInfo*> valid;
  for (const GpuQueueInfo& q : queues) {
    if (q.error.empty()) valid.push_back(&q);
  }
  if (valid.empty()) return out;
  std::sort(valid.begin(), valid.end(), [](const auto* a, const auto* b) { return a->name < b->name; });
  std::set<std::string> parents;
  for (const GpuQueueInfo* q : valid) {
    if (!q->spec.parent.empty()) parents.insert(q->spec.parent);
  }
  std::vector<std::string> defaults;
  for (const GpuQueueInfo* q : valid) {
    out.config.queues.push_back(q->spec);
    if (q->is_default) defaults.push_back(q->name);
  }
  if (defaults.empty()) {
    return InvalidArgumentError("spec.default: no GpuQueue is marked default: true (work naming no queue needs one)");
  }
  if (defaults.size() > 1) {
    return InvalidArgumentError(fmt::format("spec.default: more than one GpuQueue is marked default ({})", fmt::join(defaults, ", ")));
  }
  out.config.default_queue = defaults.front();
  if (Status st = out.config.Validate(); !st.ok()) {
    // "queues[2].parent: ..." -> "GpuQueue team-b: spec.parent: ..." (the list is sorted by name).
    std::string msg(st.message());
    static const std::regex kIndex(R"(^queues\[(\d+)\]\.?)");
    std::smatch m;
    if (std::regex_search(msg, m, kIndex)) {
      const size_t i = std::stoul(m[1].str());
      if (i < out.config.queues.size()) {
        std::string rest = m.suffix().str();
        msg = fmt::format("GpuQueue {}: spec.{}", out.config.queues[i].name, rest);
      }
    }
    return InvalidArgumentError(msg);
  }
  for (const NamespaceInfo& ns : namespaces) {
    for (const GpuQueueInfo* q : valid) {
      if (parents.contains(q->name) || !q->Selects(ns)) continue;  // a parent takes no work directly
      out.namespace_queue.emplace(ns.name, q->name);
      break;
    }
  }
  return out;
}

}  // namespace phalanx::extender
