// gang_start_bench (issue 23 item 7): a 64-member x 8-GPU TrainingJob applied as `kubectl apply`
// does on a 64 x dgx-h100 cluster, until every member is bound, stage by stage.
//
// The real daemons (fake-apiserver, phalanx-operator, phalanx-extender, device plugins) and the
// e2e drivers (tests/e2e/README.md): the SchedulerDriver plays kube-scheduler v1.26 (its queue
// model unless --fixed-retry). On 2 cores only `--agent-nodes` nodes run a kubelet + device
// plugin; the others carry a copy of the published GPU state (NodeSpec::agents). Each run starts
// a fresh cluster; the times come from the objects' own history (a watch of the pods and the
// TrainingJob from before the apply, stamped on arrival) and the driver's extender calls.
// Prints each run's critical path and the p50 (min, max) over the runs; `--json` for scripts.
//
//   build/bench/e2e/gang_start_bench --runs 5 [--write-latency-ms 10] [--api-latency-ms 1] [--fixed-retry]
//                                    [--webhook] [--operator OTHER_BINARY] [--json]
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "core/json/json.h"
#include "tests/e2e/drivers/pod_facts.h"
#include "tests/e2e/harness/cluster.h"
#include "tests/e2e/harness/files.h"
#include "tests/e2e/harness/gang_start_timeline.h"
#include "tests/e2e/harness/poll.h"
#include "tests/e2e/harness/ports.h"
#include "tests/fakes/apiserver/raw_client.h"

namespace phalanx::e2e {
namespace {

using kube::Json;

struct Options {
  int runs = 5;
  int nodes = 64;
  int replicas = 64;
  int gpus = 8;
  int agent_nodes = 1;
  int api_latency_ms = 0;
  int write_latency_ms = 0;
  bool fixed_retry = false;
  bool ignore_gates = false;
  bool webhook = false;
  bool json = false;
  std::string operator_binary;
  std::vector<std::string> extender_args;
};

std::string JobYaml(const Options& o, const std::string& name) {
  // JSON is YAML; the shape of examples/ TrainingJobs.
  Json job = {{"apiVersion", "phalanx.io/v1alpha1"},
              {"kind", "TrainingJob"},
              {"metadata", {{"name", name}}},
              {"spec",
               {{"replicas", o.replicas},
                {"gpusPerReplica", o.gpus},
                {"scheduling", {{"priorityClassName", "phalanx-standard"}, {"gang", {{"timeoutSeconds", 60}}}}},
                {"template",
                 {{"spec", {{"containers", Json::array({{{"name", "trainer"}, {"image", "trainer:bench"}}})}}}}}}}};
  return json::Dump(job);
}

std::string Base64(const std::string& in) {
  static const char* const kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < in.size(); i += 3) {
    uint32_t n = static_cast<uint32_t>(static_cast<unsigned char>(in[i])) << 16;
    if (i + 1 < in.size()) n |= static_cast<uint32_t>(static_cast<unsigned char>(in[i + 1])) << 8;
    if (i + 2 < in.size()) n |= static_cast<unsigned char>(in[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += i + 2 < in.size() ? kAlphabet[n & 63] : '=';
  }
  return out;
}

// The gang-gate webhook as the chart deploys it (--webhook, §2.7 of docs/architecture.md), with a
// helm-style certificate pair made by openssl for 127.0.0.1; the fake API server calls it on every
// pod create that carries phalanx.io/gang. Returns the extender flags; "" error on success.
struct Webhook {
  TempDir dir;
  uint16_t port = FreePort();
  std::string error;
  std::vector<std::string> ExtenderArgs() const {
    return {"--webhook-addr", fmt::format("127.0.0.1:{}", port), "--webhook-tls-cert", dir.path() + "/tls.crt",
            "--webhook-tls-key", dir.path() + "/tls.key"};
  }
  bool MakeCertificates() {
    const std::string d = dir.path();
    const std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    WriteFile(d + "/san.ext", "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
    const std::string cmd = fmt::format(
        "cd '{}' && openssl req -x509 {} -keyout ca.key -out ca.crt -days 1 -subj /CN=bench-ca && "
        "openssl req {} -keyout tls.key -out tls.csr -subj /CN=127.0.0.1 && "
        "openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out tls.crt -days 1 "
        "-extfile san.ext",
        d, ec, ec);
    if (std::system((cmd + " >/dev/null 2>&1").c_str()) != 0) {
      error = "openssl failed: " + cmd;
      return false;
    }
    return true;
  }
  Json Configuration() const {
    return {{"apiVersion", "admissionregistration.k8s.io/v1"},
            {"kind", "MutatingWebhookConfiguration"},
            {"metadata", {{"name", "phalanx-scheduler-gang-gate"}}},
            {"webhooks",
             Json::array({{{"name", "gang-gate.phalanx.io"},
                           {"clientConfig",
                            {{"url", fmt::format("https://127.0.0.1:{}/mutate-pods", port)},
                             {"caBundle", Base64(ReadFile(dir.path() + "/ca.crt").value_or(""))}}},
                           {"rules", Json::array({{{"apiGroups", Json::array({""})},
                                                   {"apiVersions", Json::array({"v1"})},
                                                   {"operations", Json::array({"CREATE"})},
                                                   {"resources", Json::array({"pods"})}}})},
                           {"objectSelector",
                            {{"matchExpressions", Json::array({{{"key", "phalanx.io/gang"}, {"operator", "Exists"}}})}}},
                           {"failurePolicy", "Ignore"},
                           {"reinvocationPolicy", "Never"},
                           {"sideEffects", "None"},
                           {"admissionReviewVersions", Json::array({"v1"})},
                           {"timeoutSeconds", 5}}})}};
  }
};

uint64_t ResourceVersion(kube::KubeClient& client) {
  auto listed = client.List(kube::resources::kNamespaces, "");
  return listed.ok() ? std::stoull((*listed)["metadata"]["resourceVersion"].get<std::string>()) : 0;
}

struct Run {
  GangStartMilestones m;
  std::vector<Stage> stages;
  Json request_counts;
  double webhook_reviews = 0;
  std::string error;
};

Run OneRun(const Options& o, int index) {
  Run run;
  ClusterOptions co;
  for (int i = 0; i < o.nodes; ++i) {
    NodeSpec n{fmt::format("node-{:02d}", i)};
    n.agents = i < o.agent_nodes;
    co.nodes.push_back(n);
  }
  co.kube_scheduler_queue = !o.fixed_retry;
  co.operator_binary = o.operator_binary;
  co.scheduler_ignores_gates = o.ignore_gates;
  co.extra_extender_args = o.extender_args;
  Webhook webhook;
  if (o.webhook) {
    if (!webhook.MakeCertificates()) {
      run.error = webhook.error;
      return run;
    }
    for (auto& a : webhook.ExtenderArgs()) co.extra_extender_args.push_back(a);
  }
  auto started = Cluster::Start(co);
  if (!started.ok()) {
    run.error = "cluster: " + std::string(started.status().message());
    return run;
  }
  Cluster& cluster = **started;
  fakes::apiserver::testing::RawClient api(cluster.api_url());
  if (o.webhook) {
    auto r = api.Post("/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", webhook.Configuration());
    if (r.status != 201 && r.status != 200) {
      run.error = fmt::format("webhook configuration: {} {}", r.status, r.body);
      return run;
    }
  }
  if (o.api_latency_ms > 0) api.Post(fmt::format("/fake/latency?ms={}", o.api_latency_ms), Json::object());
  if (o.write_latency_ms > 0) api.Post(fmt::format("/fake/write-latency?ms={}", o.write_latency_ms), Json::object());
  const std::string name = fmt::format("llm-{}", index);
  const uint64_t rv = ResourceVersion(cluster.client());
  WatchRecorder pods(cluster.client(), kube::resources::kPods, cluster.ns(), rv);
  WatchRecorder jobs(cluster.client(), kube::resources::kTrainingJobs, cluster.ns(), rv);
  api.Delete("/fake/request-counts");
  const SteadyTime apply = std::chrono::steady_clock::now();
  auto applied = cluster.Apply(JobYaml(o, name));
  if (!applied.ok()) {
    run.error = "apply: " + std::string(applied.status().message());
    return run;
  }
  auto bound_answered = [&] {
    run.m = ReadMilestones(name, jobs.events(), pods.events(), cluster.scheduler()->calls(), apply);
    return run.m.bound.count == o.replicas && run.m.bind_answered.count == o.replicas;
  };
  if (!PollUntil(bound_answered, std::chrono::seconds(120), std::chrono::milliseconds(20))) {
    run.error = fmt::format("{} of {} bound after 120 s ({} ungated); {} {}\n{}", run.m.bound.count, o.replicas,
                            run.m.ungated.count, pods.error(), jobs.error(), cluster.Diagnostics());
    return run;
  }
  // The members on agent nodes start (kubelet admission through the device plugin).
  const int on_agents = o.agent_nodes * 8 / o.gpus;
  PollUntil([&] {
    run.m = ReadMilestones(name, jobs.events(), pods.events(), cluster.scheduler()->calls(), apply);
    return run.m.running.count >= std::min(on_agents, o.replicas);
  }, std::chrono::seconds(10));
  run.request_counts = api.Get("/fake/request-counts").Json();
  if (o.webhook) {
    run.webhook_reviews = cluster.Metric("extender", "phalanx_extender_webhook_reviews_total{result=\"unchanged\"}")
                              .value_or(0) +
                          cluster.Metric("extender", "phalanx_extender_webhook_reviews_total{result=\"gated\"}").value_or(0);
  }
  pods.Stop();
  jobs.Stop();
  run.stages = CriticalPath(run.m);
  return run;
}

std::string Ms(const std::optional<double>& v) { return v ? fmt::format("{:.0f}", *v) : "-"; }

// p50 (min-max) of one value over the runs.
std::string Summary(std::vector<double> values) {
  if (values.empty()) return "-";
  auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  return fmt::format("{:>6} ({:.0f}-{:.0f})", Ms(Percentile(values, 50)), *lo, *hi);
}

// API requests per client during the run: "client: verb resource N, ..." for writes.
std::string Writes(const Json& counts) {
  std::string out;
  if (!counts.is_object()) return out;
  for (const auto& [client, verbs] : counts.items()) {
    std::string line;
    for (const auto& [verb, resources] : verbs.items()) {
      if (verb == "list" || verb == "watch" || verb == "get") continue;
      for (const auto& [resource, n] : resources.items()) line += fmt::format(" {} {} {},", verb, resource, n.dump());
    }
    if (!line.empty()) out += fmt::format("  {}:{}\n", client, line.substr(0, line.size() - 1));
  }
  return out;
}

int Main(int argc, char** argv) {
  Options o;
  CLI::App app{"64 x 8 TrainingJob apply -> all bound, by stage (issue 23 item 7)"};
  app.add_option("--runs", o.runs, "runs, each on a fresh cluster")->capture_default_str();
  app.add_option("--nodes", o.nodes, "dgx-h100 nodes (8 GPUs each)")->capture_default_str();
  app.add_option("--replicas", o.replicas, "members of the TrainingJob")->capture_default_str();
  app.add_option("--gpus", o.gpus, "GPUs per member")->capture_default_str();
  app.add_option("--agent-nodes", o.agent_nodes, "nodes with a kubelet and device plugin (>= 1)")->capture_default_str();
  app.add_option("--api-latency-ms", o.api_latency_ms, "added to every fake API server request")->capture_default_str();
  app.add_option("--write-latency-ms", o.write_latency_ms,
                 "added to every write (etcd's commit, admission webhooks)")->capture_default_str();
  app.add_flag("--fixed-retry", o.fixed_retry, "the scheduler driver's 250 ms retry instead of v1.26's queue model");
  app.add_flag("--scheduler-ignores-gates", o.ignore_gates,
               "a v1.26 kube-scheduler without PodSchedulingReadiness: gated pods are tried (and fail)");
  app.add_option("--extender-arg", o.extender_args, "an extra phalanx-extender flag (repeat), e.g. --extender-arg=--writers=64");
  app.add_flag("--webhook", o.webhook,
               "the extender's gang-gate webhook on (as the chart has it), called by the API server on each pod create");
  app.add_option("--operator", o.operator_binary, "another phalanx-operator binary (before/after)");
  app.add_flag("--json", o.json, "one JSON object per run, then the summary");
  CLI11_PARSE(app, argc, argv);
  if (o.agent_nodes < 1 || o.agent_nodes > o.nodes || o.runs < 1) {
    std::fprintf(stderr, "--agent-nodes must be 1..--nodes and --runs >= 1\n");
    return 2;
  }
  std::vector<Run> runs;
  for (int i = 0; i < o.runs; ++i) {
    Run r = OneRun(o, i);
    if (!r.error.empty()) {
      std::fprintf(stderr, "run %d: %s\n", i, r.error.c_str());
      return 1;
    }
    if (o.json) {
      Json j = {{"run", i}, {"requests", r.request_counts}};
      for (const auto& s : r.stages) j["stages"][s.name] = s.ms ? Json(*s.ms) : Json();
      j["allBoundMs"] = r.m.bound.last ? Json(*r.m.bound.last) : Json();
      std::printf("%s\n", json::Dump(j).c_str());
    } else {
      std::printf("run %d: all %d bound at %s ms (last bind answered %s ms)\n", i, r.m.bound.count,
                  Ms(r.m.bound.last).c_str(), Ms(r.m.bind_answered.last).c_str());
      std::printf("%s", Writes(r.request_counts).c_str());
      if (o.webhook) std::printf("  gang-gate webhook reviews: %.0f\n", r.webhook_reviews);
    }
    runs.push_back(std::move(r));
  }
  std::printf(
      "\n%d x %d GPUs on %d nodes (%d with agents), %s%s, API latency +%d ms, writes +%d ms; %d runs, ms: p50 (min-max)\n",
      o.replicas, o.gpus, o.nodes, o.agent_nodes, o.fixed_retry ? "fixed 250 ms retry" : o.ignore_gates ? "v1.26 queue model, gates ignored" : "v1.26 queue model",
      o.webhook ? ", gang-gate webhook" : "",
      o.api_latency_ms, o.write_latency_ms, o.runs);
  std::printf("\n%-72s %s\n", "stage (critical path)", "ms");
  for (size_t s = 0; s < runs[0].stages.size(); ++s) {
    std::vector<double> v;
    for (const auto& r : runs) {
      if (r.stages[s].ms) v.push_back(*r.stages[s].ms);
    }
    std::printf("%-72s %s\n", runs[0].stages[s].name.c_str(), Summary(v).c_str());
  }
  std::vector<double> total;
  for (const auto& r : runs) total.push_back(*r.m.bound.last);
  std::printf("%-72s %s\n", "apply -> all bound", Summary(total).c_str());
  std::printf("\n%-28s %-22s %s\n", "milestone (since apply)", "first member", "last member");
  const std::vector<std::pair<const char*, Span GangStartMilestones::*>> milestones = {
      {"pod created", &GangStartMilestones::created},   {"gate lifted", &GangStartMilestones::ungated},
      {"filter sent", &GangStartMilestones::filtered},  {"bind asked", &GangStartMilestones::bind_asked},
      {"devices written", &GangStartMilestones::devices}, {"bound", &GangStartMilestones::bound},
      {"bind answered", &GangStartMilestones::bind_answered}, {"running (agent nodes)", &GangStartMilestones::running}};
  for (const auto& [label, member] : milestones) {
    std::vector<double> first, last;
    for (const auto& r : runs) {
      const Span& span = r.m.*member;
      if (span.first) first.push_back(*span.first);
      if (span.last) last.push_back(*span.last);
    }
    std::printf("%-28s %-22s %s\n", label, Summary(first).c_str(), Summary(last).c_str());
  }
  std::vector<double> wait, cycle;
  for (const auto& r : runs) {
    wait.insert(wait.end(), r.m.queue_wait_ms.begin(), r.m.queue_wait_ms.end());
    cycle.insert(cycle.end(), r.m.cycle_ms.begin(), r.m.cycle_ms.end());
  }
  std::printf("\nper member, all runs: gate lifted -> filter p50 %s p99 %s ms; filter -> bind asked p50 %s p99 %s ms\n",
              Ms(Percentile(wait, 50)).c_str(), Ms(Percentile(wait, 99)).c_str(), Ms(Percentile(cycle, 50)).c_str(),
              Ms(Percentile(cycle, 99)).c_str());
  return 0;
}

}  // namespace
}  // namespace phalanx::e2e

int main(int argc, char** argv) { return phalanx::e2e::Main(argc, argv); }
