// Helpers the scenarios share: reading jobs and pods, waiting on them, and replaying the history
// of a set of pods from the API server's watch (to assert on the order of writes, e.g. "every
// gate was lifted and every devices annotation written before the first Binding").
#pragma once

#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/kube/client.h"
#include "tests/e2e/drivers/pod_facts.h"
#include "tests/e2e/harness/cluster.h"
#include "tests/e2e/harness/poll.h"

namespace phalanx::e2e {

inline kube::Json GetOrNull(kube::KubeClient& client, const kube::Resource& r, const std::string& ns,
                            const std::string& name) {
  auto got = client.Get(r, ns, name);
  return got.ok() ? std::move(got).value() : kube::Json();
}

inline std::vector<kube::Json> ListPods(kube::KubeClient& client, const std::string& ns, const std::string& selector) {
  kube::ListOptions lo;
  lo.label_selector = selector;
  auto listed = client.List(kube::resources::kPods, ns, lo);
  std::vector<kube::Json> out;
  if (listed.ok()) {
    for (auto& p : (*listed)["items"]) out.push_back(p);
  }
  return out;
}

inline uint64_t ListResourceVersion(kube::KubeClient& client) {
  auto listed = client.List(kube::resources::kNamespaces, "");
  if (!listed.ok()) return 0;
  return std::stoull((*listed)["metadata"]["resourceVersion"].get<std::string>());
}

inline uint64_t Rv(const kube::Json& o) {
  return std::stoull(o["metadata"]["resourceVersion"].get<std::string>());
}

inline std::string JobPhase(const kube::Json& job) {
  return job.contains("status") && job["status"].is_object() ? job["status"].value("phase", std::string()) : "";
}

inline std::unique_ptr<Cluster> StartCluster(ClusterOptions options) {
  auto started = Cluster::Start(std::move(options));
  EXPECT_TRUE(started.ok()) << started.status();
  return started.ok() ? std::move(started).value() : nullptr;
}

// Waits until the TrainingJob reaches `phase`; its last state either way.
inline kube::Json WaitJobPhase(Cluster& cluster, const std::string& name, const std::string& phase,
                               bool* reached) {
  kube::Json job;
  *reached = PollUntil([&] {
    job = GetOrNull(cluster.client(), kube::resources::kTrainingJobs, cluster.ns(), name);
    return JobPhase(job) == phase;
  });
  return job;
}

// Every watch event of the pods matching `selector` after `from_rv`, until each pod that exists
// now was seen at its current version and each pod of `gone` was seen DELETED. In API order.
inline std::vector<kube::Json> PodHistory(Cluster& cluster, uint64_t from_rv, const std::string& selector,
                                          const std::vector<std::string>& gone = {}) {
  std::map<std::string, uint64_t> want;
  for (const auto& p : ListPods(cluster.client(), cluster.ns(), selector)) want[Name(p)] = Rv(p);
  kube::HttpRequest request;
  request.target = kube::ResourcePath(kube::resources::kPods, cluster.ns()) +
                   kube::QueryString({{"watch", "1"},
                                      {"resourceVersion", std::to_string(from_rv)},
                                      {"labelSelector", selector},
                                      {"timeoutSeconds", "30"}});
  std::vector<kube::Json> events;
  auto stream = cluster.client().OpenStream(request);
  if (!stream.ok()) return events;
  std::map<std::string, uint64_t> seen;
  std::set<std::string> deleted;
  std::string line;
  while (true) {
    bool done = true;
    for (const auto& [name, rv] : want) done &= seen[name] >= rv;
    for (const auto& name : gone) done &= deleted.count(name) > 0;
    if (done) break;
    auto read = (*stream)->ReadLine(line);
    if (!read.ok() || !*read) break;
    auto parsed = json::Parse(line);
    if (!parsed.ok()) continue;
    if ((*parsed)["type"] == "BOOKMARK") continue;
    seen[Name((*parsed)["object"])] = Rv((*parsed)["object"]);
    if ((*parsed)["type"] == "DELETED") deleted.insert(Name((*parsed)["object"]));
    events.push_back(std::move(parsed).value());
  }
  (*stream)->Cancel();
  return events;
}

// The version at which `pred` first held for the pod `name` in `history`; 0 if never.
template <typename Pred>
uint64_t FirstVersion(const std::vector<kube::Json>& history, const std::string& name, Pred pred) {
  for (const auto& e : history) {
    if (Name(e["object"]) == name && pred(e["object"])) return Rv(e["object"]);
  }
  return 0;
}

// A container's env value of the pod ("" when absent).
inline std::string EnvOf(const kube::Json& pod, const std::string& name) {
  for (const auto& c : pod["spec"]["containers"]) {
    if (!c.contains("env")) continue;
    for (const auto& e : c["env"]) {
      if (e.value("name", "") == name) return e.value("value", "");
    }
  }
  return "";
}

// Runs a shell command (a CLI, as a user runs it) and returns its output; "" when it failed.
inline std::string RunCommand(const std::string& cmd) {
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return "";
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), p)) > 0;) out.append(buf, n);
  return pclose(p) == 0 ? out : "";
}

}  // namespace phalanx::e2e
