// GPU queues as YAML (the simulator's cluster description, later the extender's config)
// and their validation. Strict: an unknown key, a wrong type or a bad value is an
// InvalidArgument naming the field; nothing is half-applied.
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/scheduling/queues.h"
#include "core/scheduling/strict_yaml.h"

namespace phalanx::scheduling {
namespace {

using strict_yaml::CheckKeys;
using strict_yaml::Keys;
using strict_yaml::Read;

// GPUs (e.g. 8, 0.5) as milli-GPUs; whole milli-GPUs only.
Status ReadGpus(const YAML::Node& node, std::string_view key, std::string_view where, std::optional<Milli>* out) {
  const YAML::Node v = node[std::string(key)];
  if (!v) return OkStatus();
  double gpus = 0;
  PHX_RETURN_IF_ERROR(Read(node, key, where, &gpus));
  const double milli = gpus * kMilliGpu;
  if (!std::isfinite(gpus) || gpus < 0 || gpus > 1e9) {
    return InvalidArgumentError(fmt::format("{}.{}: must be a number of GPUs >= 0", where, key));
  }
  if (std::abs(milli - std::round(milli)) > 1e-6) {
    return InvalidArgumentError(fmt::format("{}.{}: at most 3 decimals (milli-GPUs)", where, key));
  }
  *out = static_cast<Milli>(std::llround(milli));
  return OkStatus();
}

bool IsDnsLabel(std::string_view s) {
  if (s.empty() || s.size() > 63 || s.front() == '-' || s.back() == '-') return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  return true;
}

Status ValidateList(const std::vector<QueueSpec>& queues, std::string_view where);

}  // namespace

Result<std::vector<QueueSpec>> ParseQueueList(const YAML::Node& node, std::string_view where) {
  static const Keys kQueueKeys = {"name", "cohort", "weight", "parent", "quotas"};
  static const Keys kQuotaKeys = {"pool", "nominal", "borrowingLimit", "lendingLimit"};
  if (!node || !node.IsSequence()) return InvalidArgumentError(fmt::format("{}: expected a list of queues", where));
  std::vector<QueueSpec> out;
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string at = fmt::format("{}[{}]", where, i);
    PHX_RETURN_IF_ERROR(CheckKeys(node[i], kQueueKeys, at));
    QueueSpec q;
    PHX_RETURN_IF_ERROR(Read(node[i], "name", at, &q.name));
    PHX_RETURN_IF_ERROR(Read(node[i], "cohort", at, &q.cohort));
    PHX_RETURN_IF_ERROR(Read(node[i], "weight", at, &q.weight));
    PHX_RETURN_IF_ERROR(Read(node[i], "parent", at, &q.parent));
    if (const YAML::Node quotas = node[i]["quotas"]) {
      if (!quotas.IsSequence()) return InvalidArgumentError(fmt::format("{}.quotas: expected a list", at));
      for (size_t j = 0; j < quotas.size(); ++j) {
        const std::string qat = fmt::format("{}.quotas[{}]", at, j);
        PHX_RETURN_IF_ERROR(CheckKeys(quotas[j], kQuotaKeys, qat));
        PoolQuota pq;
        PHX_RETURN_IF_ERROR(Read(quotas[j], "pool", qat, &pq.pool));
        std::optional<Milli> nominal;
        PHX_RETURN_IF_ERROR(ReadGpus(quotas[j], "nominal", qat, &nominal));
        if (!nominal) return InvalidArgumentError(fmt::format("{}.nominal: required", qat));
        pq.nominal = *nominal;
        PHX_RETURN_IF_ERROR(ReadGpus(quotas[j], "borrowingLimit", qat, &pq.borrowing_limit));
        PHX_RETURN_IF_ERROR(ReadGpus(quotas[j], "lendingLimit", qat, &pq.lending_limit));
        q.quotas.push_back(std::move(pq));
      }
    }
    out.push_back(std::move(q));
  }
  PHX_RETURN_IF_ERROR(ValidateList(out, where));
  return out;
}

Result<QueueConfig> ParseQueueConfigFrom(const YAML::Node& mapping, std::string_view where) {
  const std::string prefix = where.empty() ? "" : std::string(where) + ".";
  QueueConfig c;
  const YAML::Node list = mapping["queues"];
  if (!list) return c;
  PHX_ASSIGN_OR_RETURN(c.queues, ParseQueueList(list, prefix + "queues"));
  PHX_RETURN_IF_ERROR(Read(mapping, "defaultQueue", where.empty() ? "defaultQueue" : where, &c.default_queue));
  PHX_RETURN_IF_ERROR(Read(mapping, "crossQueuePreemptionPriority", where.empty() ? "crossQueuePreemptionPriority" : where,
                           &c.cross_queue_preemption_priority));
  PHX_RETURN_IF_ERROR(Read(mapping, "reclaimAfterSeconds", where.empty() ? "reclaimAfterSeconds" : where, &c.reclaim_after_s));
  Status valid = c.Validate();
  if (!valid.ok()) return InvalidArgumentError(prefix + std::string(valid.message()));
  return c;
}

namespace {

Status ValidateList(const std::vector<QueueSpec>& queues, std::string_view where) {
  std::map<std::string, const QueueSpec*, std::less<>> by_name;
  for (size_t i = 0; i < queues.size(); ++i) {
    const QueueSpec& q = queues[i];
    const std::string at = fmt::format("{}[{}]", where, i);
    if (!IsDnsLabel(q.name)) {
      return InvalidArgumentError(fmt::format("{}.name: \"{}\" must be a DNS label (lowercase letters, digits, '-', 1-63)", at, q.name));
    }
    if (!by_name.emplace(q.name, &q).second) return InvalidArgumentError(fmt::format("{}.name: duplicate queue \"{}\"", at, q.name));
    if (!q.cohort.empty() && !IsDnsLabel(q.cohort)) {
      return InvalidArgumentError(fmt::format("{}.cohort: \"{}\" must be a DNS label", at, q.cohort));
    }
    if (!(q.weight > 0) || !std::isfinite(q.weight)) return InvalidArgumentError(fmt::format("{}.weight: must be > 0", at));
    std::set<std::string, std::less<>> pools;
    for (size_t j = 0; j < q.quotas.size(); ++j) {
      const PoolQuota& p = q.quotas[j];
      const std::string qat = fmt::format("{}.quotas[{}]", at, j);
      if (p.pool.empty()) return InvalidArgumentError(fmt::format("{}.pool: required (a phalanx.io/gpu.product value)", qat));
      if (!pools.insert(p.pool).second) return InvalidArgumentError(fmt::format("{}.pool: duplicate pool \"{}\"", qat, p.pool));
      if (p.nominal < 0) return InvalidArgumentError(fmt::format("{}.nominal: must be >= 0", qat));
      if (p.borrowing_limit && *p.borrowing_limit < 0) return InvalidArgumentError(fmt::format("{}.borrowingLimit: must be >= 0", qat));
      if (p.lending_limit && (*p.lending_limit < 0 || *p.lending_limit > p.nominal)) {
        return InvalidArgumentError(fmt::format("{}.lendingLimit: must be between 0 and nominal", qat));
      }
    }
  }
  for (size_t i = 0; i < queues.size(); ++i) {
    const QueueSpec& q = queues[i];
    if (q.parent.empty()) continue;
    const std::string at = fmt::format("{}[{}]", where, i);
    auto parent = by_name.find(q.parent);
    if (parent == by_name.end()) return InvalidArgumentError(fmt::format("{}.parent: no queue \"{}\"", at, q.parent));
    if (q.parent == q.name) return InvalidArgumentError(fmt::format("{}.parent: a queue cannot be its own parent", at));
    if (!parent->second->parent.empty()) {
      return InvalidArgumentError(fmt::format("{}.parent: \"{}\" has a parent itself (one level of hierarchy only)", at, q.parent));
    }
    if (!q.cohort.empty()) {
      return InvalidArgumentError(fmt::format("{}.cohort: a child queue shares with its siblings; set the cohort on \"{}\"", at, q.parent));
    }
  }
  // Children's nominal quotas fit in their parent's.
  for (const auto& [name, parent] : by_name) {
    std::map<std::string, Milli> sum;
    bool has_children = false;
    for (const QueueSpec& q : queues) {
      if (q.parent != name) continue;
      has_children = true;
      for (const PoolQuota& p : q.quotas) sum[p.pool] += p.nominal;
    }
    if (!has_children) continue;
    for (const auto& [pool, nominal] : sum) {
      const PoolQuota* pq = parent->QuotaOf(pool);
      if (pq == nullptr || pq->nominal < nominal) {
        return InvalidArgumentError(fmt::format("{}[{}].quotas: the children's nominal quotas of {} ({} GPUs) exceed "
                                                "the parent's ({} GPUs)",
                                                where, parent - queues.data(), pool, static_cast<double>(nominal) / kMilliGpu,
                                                pq ? static_cast<double>(pq->nominal) / kMilliGpu : 0.0));
      }
    }
  }
  return OkStatus();
}

}  // namespace

const std::vector<std::string>& QueueConfigKeys() {
  static const std::vector<std::string> kKeys = {"queues", "defaultQueue", "crossQueuePreemptionPriority",
                                                 "reclaimAfterSeconds"};
  return kKeys;
}

Status QueueConfig::Validate() const {
  PHX_RETURN_IF_ERROR(ValidateList(queues, "queues"));
  if (!(reclaim_after_s >= 0) || !std::isfinite(reclaim_after_s)) {
    return InvalidArgumentError("reclaimAfterSeconds: must be a number of seconds >= 0");
  }
  if (queues.empty()) return OkStatus();
  const QueueSpec* d = nullptr;
  for (const QueueSpec& q : queues)
    if (q.name == default_queue) d = &q;
  if (d == nullptr) {
    return InvalidArgumentError(fmt::format("defaultQueue: \"{}\" is not one of the queues (work naming no queue runs there)",
                                            default_queue));
  }
  for (const QueueSpec& q : queues)
    if (q.parent == default_queue) {
      return InvalidArgumentError(fmt::format("defaultQueue: \"{}\" is a parent queue; name a queue without children",
                                              default_queue));
    }
  return OkStatus();
}

Milli MigProfileMilli(std::string_view profile) {
  // "<n>g.<memory>": n of a GPU's 7 compute slices.
  const size_t g = profile.find('g');
  if (g == 0 || g == std::string_view::npos || g + 1 >= profile.size() || profile[g + 1] != '.') return 0;
  int slices = 0;
  for (char c : profile.substr(0, g)) {
    if (c < '0' || c > '9') return 0;
    slices = slices * 10 + (c - '0');
  }
  if (slices < 1 || slices > 7) return 0;
  return slices * kMilliGpu / 7;
}

}  // namespace phalanx::scheduling
