#include "cli/report/usage_report.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "core/cost/price_table.h"

namespace phalanx::cli {

namespace {

using json::Json;

std::string StringAt(const Json& obj, std::initializer_list<const char*> path) {
  const Json* cur = &obj;
  for (const char* k : path) {
    cur = json::Member(*cur, k);
    if (cur == nullptr) return "";
  }
  return cur->is_string() ? cur->get<std::string>() : "";
}

Status ReadNumber(const Json& usage, const char* key, double& out) {
  const Json* v = json::Member(usage, key);
  if (v == nullptr) return OkStatus();
  if (!v->is_number()) {
    return InvalidArgumentError(fmt::format("status.usage.{}: expected number, got {}", key, json::TypeName(*v)));
  }
  out = v->get<double>();
  return OkStatus();
}

Result<JobUsageRow> Row(const Json& item) {
  JobUsageRow r;
  r.ns = StringAt(item, {"metadata", "namespace"});
  r.name = StringAt(item, {"metadata", "name"});
  // The queue the operator labels the job's pods with (spec.scheduling.queue); a label on the
  // TrainingJob itself is what older jobs and hand-written ones carry.
  r.queue = StringAt(item, {"spec", "scheduling", "queue"});
  if (r.queue.empty()) r.queue = StringAt(item, {"metadata", "labels", kQueueLabel});
  r.tier = cost::TierOf(StringAt(item, {"spec", "scheduling", "priorityClassName"}), std::nullopt);
  r.phase = StringAt(item, {"status", "phase"});
  const Json* status = json::Member(item, "status");
  const Json* usage = status != nullptr ? json::Member(*status, "usage") : nullptr;
  if (usage == nullptr) return r;
  if (!usage->is_object()) {
    return InvalidArgumentError(fmt::format("status.usage: expected object, got {}", json::TypeName(*usage)));
  }
  r.has_usage = true;
  double gpu_s = 0, idle_s = 0;
  PHX_RETURN_IF_ERROR(ReadNumber(*usage, "gpuSeconds", gpu_s));
  PHX_RETURN_IF_ERROR(ReadNumber(*usage, "idleGpuSeconds", idle_s));
  PHX_RETURN_IF_ERROR(ReadNumber(*usage, "cost", r.cost));
  PHX_RETURN_IF_ERROR(ReadNumber(*usage, "idleCost", r.idle_cost));
  r.gpu_hours = gpu_s / 3600;
  r.idle_gpu_hours = idle_s / 3600;
  if (const Json* c = json::Member(*usage, "currency")) {
    if (!c->is_string()) {
      return InvalidArgumentError(fmt::format("status.usage.currency: expected string, got {}", json::TypeName(*c)));
    }
    r.currency = c->get<std::string>();
  }
  return r;
}

void Add(UsageTotal& t, const JobUsageRow& r) {
  ++t.jobs;
  t.gpu_hours += r.gpu_hours;
  t.idle_gpu_hours += r.idle_gpu_hours;
  t.cost += r.cost;
  t.idle_cost += r.idle_cost;
}

std::vector<UsageTotal> SumBy(const std::vector<JobUsageRow>& jobs, std::string JobUsageRow::*key) {
  std::map<std::pair<std::string, std::string>, UsageTotal> by;
  for (const auto& r : jobs) {
    UsageTotal& t = by[{r.*key, r.currency}];
    t.key = r.*key;
    t.currency = r.currency;
    Add(t, r);
  }
  std::vector<UsageTotal> out;
  for (auto& [_, t] : by) out.push_back(std::move(t));
  return out;
}

std::string Percent(double part, double whole) { return whole > 0 ? fmt::format("{:.0f}%", 100 * part / whole) : "-"; }

std::vector<std::string> TotalCells(const UsageTotal& t) {
  return {t.key, std::to_string(t.jobs), Hours(t.gpu_hours), Hours(t.idle_gpu_hours), Percent(t.idle_gpu_hours, t.gpu_hours),
          t.currency.empty() ? "-" : Money(t.cost), t.currency.empty() ? "-" : Money(t.idle_cost), t.currency};
}

Json TotalJson(const UsageTotal& t) {
  Json j = {{"jobs", t.jobs}, {"gpuHours", t.gpu_hours}, {"idleGpuHours", t.idle_gpu_hours}};
  if (!t.currency.empty()) {
    j["cost"] = t.cost;
    j["idleCost"] = t.idle_cost;
    j["currency"] = t.currency;
  }
  return j;
}

}  // namespace

std::string Money(double v) { return fmt::format("{:.2f}", v); }
std::string Hours(double v) { return fmt::format("{:.1f}", v); }

std::string FormatTable(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                        const std::vector<bool>& right_aligned) {
  std::vector<size_t> width(header.size(), 0);
  for (size_t i = 0; i < header.size(); ++i) width[i] = header[i].size();
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size() && i < width.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l;
    for (size_t i = 0; i < cells.size() && i < width.size(); ++i) {
      if (i > 0) l += "  ";
      const bool right = i < right_aligned.size() && right_aligned[i];
      l += right ? fmt::format("{:>{}}", cells[i], width[i]) : fmt::format("{:<{}}", cells[i], width[i]);
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  };
  line(header);
  for (const auto& row : rows) line(row);
  return out;
}

Result<UsageReport> BuildUsageReport(const Json& list) {
  const Json* items = json::Member(list, "items");
  if (items == nullptr || !items->is_array()) {
    return InvalidArgumentError("TrainingJob list: expected an object with items[] (is the TrainingJob CRD installed?)");
  }
  UsageReport rep;
  for (size_t i = 0; i < items->size(); ++i) {
    auto row = Row((*items)[i]);
    if (!row.ok()) {
      return row.status().WithContext(fmt::format("items[{}] ({}/{})", i, StringAt((*items)[i], {"metadata", "namespace"}),
                                                  StringAt((*items)[i], {"metadata", "name"})));
    }
    rep.jobs.push_back(std::move(*row));
  }
  std::sort(rep.jobs.begin(), rep.jobs.end(),
            [](const JobUsageRow& a, const JobUsageRow& b) { return std::tie(a.ns, a.name) < std::tie(b.ns, b.name); });
  rep.namespaces = SumBy(rep.jobs, &JobUsageRow::ns);
  const bool queued = std::any_of(rep.jobs.begin(), rep.jobs.end(), [](const JobUsageRow& r) { return !r.queue.empty(); });
  if (queued) rep.queues = SumBy(rep.jobs, &JobUsageRow::queue);
  rep.total.key = "*";
  for (const auto& r : rep.jobs) {
    if (r.currency.empty()) {
      // Jobs without a price have no cost to add; they still count hours.
    } else if (rep.total.currency.empty() && !rep.mixed_currencies) {
      rep.total.currency = r.currency;
    } else if (r.currency != rep.total.currency) {
      rep.mixed_currencies = true;
    }
    Add(rep.total, r);
  }
  if (rep.mixed_currencies) {
    rep.total.currency.clear();
    rep.total.cost = rep.total.idle_cost = 0;
  }
  return rep;
}

std::string RenderUsageTable(const UsageReport& rep) {
  if (rep.jobs.empty()) return "No TrainingJobs found.\n";
  const bool queued = !rep.queues.empty();
  std::vector<std::string> header = {"NAMESPACE", "JOB"};
  if (queued) header.push_back("QUEUE");
  for (const char* h : {"TIER", "PHASE", "GPU-HOURS", "IDLE-GPU-HOURS", "IDLE", "COST", "IDLE-COST", "CURRENCY"}) {
    header.push_back(h);
  }
  std::vector<bool> right(header.size(), false);
  for (size_t i = header.size() - 6; i < header.size() - 1; ++i) right[i] = true;
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : rep.jobs) {
    std::vector<std::string> row = {r.ns, r.name};
    if (queued) row.push_back(r.queue.empty() ? "-" : r.queue);
    const bool priced = !r.currency.empty();
    for (const std::string& c :
         {r.tier, r.phase.empty() ? "-" : r.phase, r.has_usage ? Hours(r.gpu_hours) : "-",
          r.has_usage ? Hours(r.idle_gpu_hours) : "-", Percent(r.idle_gpu_hours, r.gpu_hours),
          priced ? Money(r.cost) : "-", priced ? Money(r.idle_cost) : "-", r.currency}) {
      row.push_back(c);
    }
    rows.push_back(std::move(row));
  }
  std::string out = FormatTable(header, rows, right);
  const std::vector<bool> total_right = {false, true, true, true, true, true, true, false};
  std::vector<std::vector<std::string>> ns_rows;
  for (const auto& t : rep.namespaces) ns_rows.push_back(TotalCells(t));
  UsageTotal all = rep.total;
  all.key = "TOTAL";
  ns_rows.push_back(TotalCells(all));
  out += "\n" + FormatTable({"NAMESPACE", "JOBS", "GPU-HOURS", "IDLE-GPU-HOURS", "IDLE", "COST", "IDLE-COST", "CURRENCY"},
                            ns_rows, total_right);
  if (queued) {
    std::vector<std::vector<std::string>> q_rows;
    for (const auto& t : rep.queues) {
      auto cells = TotalCells(t);
      if (cells[0].empty()) cells[0] = "(no queue)";
      q_rows.push_back(std::move(cells));
    }
    out += "\n" + FormatTable({"QUEUE", "JOBS", "GPU-HOURS", "IDLE-GPU-HOURS", "IDLE", "COST", "IDLE-COST", "CURRENCY"},
                              q_rows, total_right);
  }
  if (rep.mixed_currencies) out += "\nJobs are priced in different currencies: the TOTAL row adds no cost.\n";
  if (std::any_of(rep.jobs.begin(), rep.jobs.end(), [](const JobUsageRow& r) { return !r.has_usage; })) {
    out += "\n'-': no status.usage yet (the operator has not accounted the job, or runs without usage accounting).\n";
  }
  return out;
}

Json RenderUsageJson(const UsageReport& rep) {
  Json jobs = Json::array();
  for (const auto& r : rep.jobs) {
    Json j = {{"namespace", r.ns}, {"name", r.name}, {"tier", r.tier}, {"phase", r.phase},
              {"gpuHours", r.gpu_hours}, {"idleGpuHours", r.idle_gpu_hours}, {"hasUsage", r.has_usage}};
    if (!r.queue.empty()) j["queue"] = r.queue;
    if (!r.currency.empty()) {
      j["cost"] = r.cost;
      j["idleCost"] = r.idle_cost;
      j["currency"] = r.currency;
    }
    jobs.push_back(std::move(j));
  }
  Json out = {{"jobs", jobs}, {"namespaces", Json::array()}, {"total", TotalJson(rep.total)}};
  for (const auto& t : rep.namespaces) {
    Json j = TotalJson(t);
    j["namespace"] = t.key;
    out["namespaces"].push_back(std::move(j));
  }
  if (!rep.queues.empty()) {
    out["queues"] = Json::array();
    for (const auto& t : rep.queues) {
      Json j = TotalJson(t);
      j["queue"] = t.key;
      out["queues"].push_back(std::move(j));
    }
  }
  if (rep.mixed_currencies) out["total"]["mixedCurrencies"] = true;
  return out;
}

}  // namespace phalanx::cli
