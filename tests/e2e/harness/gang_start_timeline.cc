#include "tests/e2e/harness/gang_start_timeline.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/json/json.h"
#include "tests/e2e/drivers/pod_facts.h"

namespace phalanx::e2e {

using kube::Json;

WatchRecorder::WatchRecorder(kube::KubeClient& client, const kube::Resource& resource, std::string ns,
                             uint64_t resource_version)
    : client_(client) {
  kube::HttpRequest request;
  request.target = kube::ResourcePath(resource, ns) +
                   kube::QueryString({{"watch", "1"},
                                      {"resourceVersion", std::to_string(resource_version)},
                                      {"allowWatchBookmarks", "false"},
                                      {"timeoutSeconds", "600"}});
  // Opened here, so that nothing written after the constructor returns is missed.
  auto stream = client_.OpenStream(request);
  if (!stream.ok()) {
    error_ = "watch " + resource.resource + ": " + std::string(stream.status().message());
    return;
  }
  stream_ = std::move(stream).value();
  thread_ = std::thread([this] { Run(); });
}

WatchRecorder::~WatchRecorder() { Stop(); }

void WatchRecorder::Stop() {
  stop_ = true;
  if (stream_) stream_->Cancel();
  if (thread_.joinable()) thread_.join();
}

std::vector<TimedEvent> WatchRecorder::events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_;
}

std::string WatchRecorder::error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

void WatchRecorder::Run() {
  std::string line;
  while (!stop_) {
    auto read = stream_->ReadLine(line);
    const SteadyTime at = std::chrono::steady_clock::now();
    if (!read.ok() || !*read) {
      if (!stop_) {
        std::lock_guard<std::mutex> lock(mu_);
        error_ = read.ok() ? "watch ended" : std::string(read.status().message());
      }
      return;
    }
    auto parsed = json::Parse(line);
    if (!parsed.ok() || !parsed->is_object()) continue;
    const std::string type = parsed->value("type", std::string());
    if (type == "BOOKMARK" || type == "ERROR") continue;
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back({at, type, std::move((*parsed)["object"])});
  }
}

void Span::Add(double ms) {
  first = first ? std::min(*first, ms) : ms;
  last = last ? std::max(*last, ms) : ms;
  ++count;
}

namespace {

double Ms(SteadyTime t, SteadyTime from) { return std::chrono::duration<double, std::milli>(t - from).count(); }

std::optional<double> Gap(const std::optional<double>& from, const std::optional<double>& to) {
  if (!from || !to) return std::nullopt;
  return *to - *from;
}

}  // namespace

GangStartMilestones ReadMilestones(const std::string& job, const std::vector<TimedEvent>& jobs,
                                   const std::vector<TimedEvent>& pods, const std::vector<ExtenderCall>& calls,
                                   SteadyTime apply) {
  GangStartMilestones m;
  for (const auto& e : jobs) {
    if (e.type == "ADDED" && Name(e.object) == job && !m.job_created) m.job_created = Ms(e.at, apply);
  }
  // Per member (pod key): the first time each step was seen.
  struct Member {
    std::optional<double> created, ungated, filtered, bind_asked, devices, bound, bind_answered, running;
  };
  std::map<std::string, Member> members;
  auto first = [](std::optional<double>& slot, double ms) {
    if (!slot) slot = ms;
  };
  for (const auto& e : pods) {
    if (Label(e.object, "phalanx.io/job-name") != job || e.type == "DELETED") continue;
    Member& mb = members[Key(e.object)];
    const double ms = Ms(e.at, apply);
    if (e.type == "ADDED") first(mb.created, ms);
    if (!Gated(e.object)) first(mb.ungated, ms);
    if (!Annotation(e.object, "phalanx.io/devices").empty()) first(mb.devices, ms);
    if (!NodeName(e.object).empty()) first(mb.bound, ms);
    if (Phase(e.object) == "Running") first(mb.running, ms);
  }
  for (const auto& c : calls) {
    auto it = members.find(c.pod);
    if (it == members.end() || c.sent < apply) continue;
    if (c.verb == "filter") first(it->second.filtered, Ms(c.sent, apply));
    if (c.verb == "bind") {
      first(it->second.bind_asked, Ms(c.sent, apply));
      if (c.status == 200) first(it->second.bind_answered, Ms(c.answered, apply));
    }
  }
  m.members = static_cast<int>(members.size());
  for (const auto& [key, mb] : members) {
    for (auto [slot, span] : {std::pair{&mb.created, &m.created}, {&mb.ungated, &m.ungated}, {&mb.filtered, &m.filtered},
                              {&mb.bind_asked, &m.bind_asked}, {&mb.devices, &m.devices}, {&mb.bound, &m.bound},
                              {&mb.bind_answered, &m.bind_answered}, {&mb.running, &m.running}}) {
      if (*slot) span->Add(**slot);
    }
    if (auto w = Gap(mb.ungated, mb.filtered)) m.queue_wait_ms.push_back(*w);
    if (auto c = Gap(mb.filtered, mb.bind_asked)) m.cycle_ms.push_back(*c);
  }
  return m;
}

std::vector<Stage> CriticalPath(const GangStartMilestones& m) {
  return {
      {"apply -> TrainingJob stored (kubectl apply)", m.job_created},
      {"TrainingJob -> first pod created (operator: watch, status, Service)", Gap(m.job_created, m.created.first)},
      {"first -> last pod created (operator create rate)", Gap(m.created.first, m.created.last)},
      {"last pod -> first gate lifted (extender: watch, admission tick, plan)", Gap(m.created.last, m.ungated.first)},
      {"first -> last gate lifted (gate-lift writes)", Gap(m.ungated.first, m.ungated.last)},
      {"last gate lifted -> last filter (scheduler queueing)", Gap(m.ungated.last, m.filtered.last)},
      {"last filter -> last bind asked (scheduler cycle)", Gap(m.filtered.last, m.bind_asked.last)},
      {"last bind asked -> first devices (barrier release)", Gap(m.bind_asked.last, m.devices.first)},
      {"first -> last devices written (commit writes)", Gap(m.devices.first, m.devices.last)},
      {"last devices -> last bound (Bindings)", Gap(m.devices.last, m.bound.last)},
  };
}

std::optional<double> Percentile(std::vector<double> values, double p) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  const double rank = std::ceil(p / 100.0 * static_cast<double>(values.size()));
  const size_t index = static_cast<size_t>(std::clamp(rank, 1.0, static_cast<double>(values.size()))) - 1;
  return values[index];
}

}  // namespace phalanx::e2e
