#include "tests/e2e/harness/cluster.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/json/json.h"
#include "core/kube/config.h"
#include "tests/e2e/harness/apply.h"
#include "tests/e2e/harness/poll.h"
#include "tests/e2e/harness/ports.h"
#include "tests/fakes/apiserver/raw_client.h"

namespace phalanx::e2e {
namespace {

using kube::Json;
constexpr std::chrono::seconds kStartDeadline{120};  // a daemon on 2 loaded cores: ~1 s

// The chart's tiers (helm/phalanx/values.yaml priorityClasses.tiers).
Json PriorityClasses() {
  Json out = Json::array();
  for (auto [name, value, policy] : {std::tuple{"phalanx-critical", 1000000, "PreemptLowerPriority"},
                                     {"phalanx-high", 10000, "PreemptLowerPriority"},
                                     {"phalanx-standard", 1000, "PreemptLowerPriority"},
                                     {"phalanx-spot", 100, "Never"}}) {
    out.push_back({{"apiVersion", "scheduling.k8s.io/v1"},
                   {"kind", "PriorityClass"},
                   {"metadata", {{"name", name}}},
                   {"value", value},
                   {"preemptionPolicy", policy}});
  }
  return out;
}

// The extender configuration the chart renders (values.yaml extender.config + tiers), with the
// gang timeouts shortened for tests.
std::string ExtenderConfig() {
  return R"(headOfLineSeconds: 300
gangTimeoutSeconds: 60
memberSettleMillis: 500
planTtlSeconds: 300
httpTimeoutSeconds: 70
weights:
  topology: 1
  packing: 1
  locality: 1
topologyLevels:
  - kubernetes.io/hostname
  - phalanx.io/nvlink-domain
  - topology.kubernetes.io/rack
  - phalanx.io/block
  - topology.kubernetes.io/zone
tiers:
  - {name: critical, minPriority: 1000000, preempts: [high, standard, spot]}
  - {name: high, minPriority: 10000, preempts: [standard, spot]}
  - {name: standard, minPriority: 1000, preempts: [spot]}
  - {name: spot, minPriority: -2147483648, preempts: []}
)";
}

std::string Tail(const std::string& text, size_t n) { return text.size() > n ? text.substr(text.size() - n) : text; }

}  // namespace

std::string BinaryPath(const std::string& relative) { return std::string(PHALANX_TEST_BINARY_DIR) + "/" + relative; }

Result<std::unique_ptr<Cluster>> Cluster::Start(ClusterOptions options) {
  std::unique_ptr<Cluster> cluster(new Cluster(std::move(options)));
  if (cluster->dir().empty()) return InternalError("cannot create a temporary directory");
  PHX_RETURN_IF_ERROR(cluster->StartApiServer());
  size_t index = 0;
  for (const auto& spec : cluster->options_.nodes) {
    Node& node = cluster->nodes_[spec.name];
    node.spec = spec;
    PHX_RETURN_IF_ERROR(cluster->StartNode(node, index++));
  }
  PHX_RETURN_IF_ERROR(cluster->PublishAgentlessNodes());
  if (cluster->options_.start_operator) PHX_RETURN_IF_ERROR(cluster->StartOperator());
  if (cluster->options_.start_extender) {
    PHX_RETURN_IF_ERROR(cluster->StartExtender());
    SchedulerDriverOptions so;
    so.kube_scheduler_queue = cluster->options_.kube_scheduler_queue;
    so.respect_scheduling_gates = !cluster->options_.scheduler_ignores_gates;
    so.extender_url = fmt::format("http://127.0.0.1:{}/v1", cluster->extender_port_);
    cluster->scheduler_ = std::make_unique<SchedulerDriver>(so, *cluster->client_);
    cluster->scheduler_->Start();
  }
  return cluster;
}

Cluster::~Cluster() {
  if (scheduler_) scheduler_->Stop();
  if (extender_) extender_->Stop();
  if (operator_) operator_->Stop();
  for (auto& [name, node] : nodes_) {
    if (node.driver) node.driver->Stop();
  }
  for (auto& [name, node] : nodes_) {
    if (node.plugin) node.plugin->Stop();
    node.kubelet.reset();
  }
  if (apiserver_) apiserver_->Stop();
  if (::testing::Test::HasFailure()) {
    dir_.Keep();
    std::fprintf(stderr, "e2e: logs kept in %s\n", dir_.path().c_str());
  }
}

std::string Cluster::api_url() const { return "http://127.0.0.1:" + std::to_string(api_port_); }

std::unique_ptr<Process> Cluster::Launch(const std::string& name, const std::string& binary,
                                         std::vector<std::string> args,
                                         std::vector<std::pair<std::string, std::string>> env, Status* error) {
  ProcessOptions o;
  o.name = name;
  o.binary = binary;
  o.args = std::move(args);
  o.env = std::move(env);
  o.log_dir = dir();
  auto started = Process::Start(std::move(o));
  if (!started.ok()) {
    *error = started.status();
    return nullptr;
  }
  return std::move(started).value();
}

Status Cluster::StartApiServer() {
  Json seed = Json::array();
  seed.push_back({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", options_.namespace_}}}});
  for (auto& pc : PriorityClasses()) seed.push_back(pc);
  for (const auto& spec : options_.nodes) {
    auto machine = ReadFile(std::string(PHALANX_TEST_SOURCE_DIR) + "/tests/fakes/nvml/machines/" + spec.machine + ".json");
    if (!machine) return NotFoundError("no fake NVML machine " + spec.machine);
    auto parsed = json::Parse(*machine);
    if (!parsed.ok()) return parsed.status();
    const size_t gpus = (*parsed)["gpus"].size();
    seed.push_back({{"apiVersion", "v1"},
                    {"kind", "Node"},
                    {"metadata", {{"name", spec.name}, {"labels", {{"kubernetes.io/hostname", spec.name}}}}},
                    {"status",
                     {{"capacity", {{"nvidia.com/gpu", std::to_string(gpus)}, {"cpu", "224"}, {"pods", "110"}}},
                      {"allocatable", {{"nvidia.com/gpu", std::to_string(gpus)}, {"cpu", "220"}, {"pods", "110"}}},
                      {"conditions", Json::array({{{"type", "Ready"}, {"status", "True"}}})}}}});
  }
  const std::string seed_file = dir() + "/seed.json";
  if (!WriteFile(seed_file, json::Dump(seed))) return InternalError("cannot write " + seed_file);
  kubeconfig_ = dir() + "/kubeconfig";
  const std::string port_file = dir() + "/apiserver.port";
  Status error;
  apiserver_ = Launch("fake-apiserver", BinaryPath("tests/fakes/apiserver/fake-apiserver"),
                      {"--port", "0", "--port-file", port_file, "--write-kubeconfig", kubeconfig_, "--seed", seed_file,
                       "--bookmark-interval-ms", "2000"},
                      {}, &error);
  if (!apiserver_) return error;
  if (!PollUntil([&] { return ReadFile(port_file).has_value() || !apiserver_->Running(); }, kStartDeadline) ||
      !apiserver_->Running()) {
    return UnavailableError("fake-apiserver did not start:\n" + apiserver_->LogTail());
  }
  api_port_ = static_cast<uint16_t>(std::stoi(*ReadFile(port_file)));
  auto config = kube::LoadKubeconfigFile(kubeconfig_);
  if (!config.ok()) return config.status();
  kube::ClientOptions co;
  co.qps = 0;
  co.retry_backoff = {std::chrono::milliseconds(20), std::chrono::milliseconds(500), std::chrono::milliseconds(0), true};
  auto client = kube::KubeClient::Create(*config, co);
  if (!client.ok()) return client.status();
  client_ = std::move(client).value();
  for (const auto& manifest : options_.manifests) {
    auto text = ReadFile(std::string(PHALANX_TEST_SOURCE_DIR) + "/" + manifest);
    if (!text) return NotFoundError("no manifest " + manifest);
    auto applied = Apply(*text);
    if (!applied.ok()) return applied.status().WithContext(manifest);
  }
  return OkStatus();
}

Result<std::vector<kube::Json>> Cluster::Apply(std::string_view yaml) { return ApplyManifest(*client_, yaml, ns()); }

Status Cluster::StartNode(Node& node, size_t index) {
  node.dir = dir() + "/" + node.spec.name;
  std::filesystem::create_directories(node.dir);
  // A per-node machine: node-unique GPU UUIDs (4th group), as on real distinct machines.
  auto machine = ReadFile(std::string(PHALANX_TEST_SOURCE_DIR) + "/tests/fakes/nvml/machines/" + node.spec.machine + ".json");
  if (!machine) return NotFoundError("no fake NVML machine " + node.spec.machine);
  auto parsed = json::Parse(*machine);
  if (!parsed.ok()) return parsed.status();
  for (auto& gpu : (*parsed)["gpus"]) {
    std::string uuid = gpu["uuid"].get<std::string>();  // GPU-xxxxxxxx-xxxx-xxxx-XXXX-xxxxxxxxxxxx
    if (uuid.size() >= 28) uuid.replace(23, 4, fmt::format("{:04x}", 0xe000 + index));
    gpu["uuid"] = uuid;
    node.uuids.push_back(uuid);
    if (node.spec.sm_percent) gpu["utilisation"] = {{"curve", "constant"}, {"sm", *node.spec.sm_percent}};
    if (gpu.contains("migDevices")) {
      for (auto& mig : gpu["migDevices"]) {
        std::string m = mig["uuid"].get<std::string>();
        if (m.size() >= 28) m.replace(23, 4, fmt::format("{:04x}", 0xe000 + index));
        mig["uuid"] = m;
      }
    }
  }
  node.machine_file = node.dir + "/machine.json";
  node.events_file = node.dir + "/nvml-events";
  if (!WriteFile(node.machine_file, json::Dump(*parsed)) || !WriteFile(node.events_file, "")) {
    return InternalError("cannot write the machine files of " + node.spec.name);
  }
  if (!node.spec.agents) return OkStatus();  // published by PublishAgentlessNodes
  auto kubelet = fake_kubelet::FakeKubelet::Start(node.dir + "/kubelet");
  if (!kubelet.ok()) return kubelet.status();
  node.kubelet = std::move(kubelet).value();
  node.metrics_port = FreePort();
  PHX_RETURN_IF_ERROR(LaunchDevicePlugin(node));
  KubeletDriverOptions ko;
  ko.node_name = node.spec.name;
  if (options_.termination_message) ko.termination_message = options_.termination_message;
  node.driver = std::make_unique<KubeletDriver>(ko, *node.kubelet, *client_);
  node.driver->Start();
  return OkStatus();
}

// Starts the node's device plugin and waits until kubelet accepted its registration (one more
// than before: a restarted plugin registers again) and its /readyz answers.
Status Cluster::LaunchDevicePlugin(Node& node) {
  auto accepted = [&] {
    size_t n = 0;
    for (const auto& r : node.kubelet->registrations()) n += r.result.ok();
    return n;
  };
  const size_t accepted_before = accepted();
  Status error;
  std::vector<std::string> plugin_args = {"--kubelet-dir", node.dir + "/kubelet",
                                          "--pod-resources-socket", node.kubelet->pod_resources_socket(),
                                          "--nvml-library", BinaryPath("tests/fakes/nvml/libnvidia-ml.so.1"),
                                          "--node-name", node.spec.name,
                                          "--kubeconfig", kubeconfig_,
                                          "--metrics-addr", fmt::format("127.0.0.1:{}", node.metrics_port),
                                          "--lock-file", node.dir + "/device-plugin.lock",
                                          "--publish-interval", "1",
                                          "--kubelet-poll-ms", "50"};
  for (const auto& a : options_.extra_device_plugin_args) plugin_args.push_back(a);
  node.plugin = Launch("device-plugin-" + node.spec.name, BinaryPath("device-plugin/phalanx-device-plugin"),
                       std::move(plugin_args),
                       {{"FAKE_NVML_MACHINE", node.machine_file}, {"FAKE_NVML_EVENTS", node.events_file}}, &error);
  if (!node.plugin) return error;
  // Registered (the plugin's gRPC server answers kubelet's dial), or the plugin died.
  if (!PollUntil([&] { return accepted() > accepted_before || !node.plugin->Running(); }, kStartDeadline) ||
      !node.plugin->Running()) {
    return UnavailableError("device plugin of " + node.spec.name + " never registered:\n" + node.plugin->LogTail());
  }
  return WaitReady(*node.plugin, node.metrics_port);
}

Status Cluster::RestartDevicePlugin(const std::string& name) {
  Node& node = nodes_.at(name);
  if (!node.plugin) return FailedPreconditionError("no device plugin on " + name);
  node.plugin->Kill();
  node.plugin.reset();
  return LaunchDevicePlugin(node);
}

// A device plugin publishes its node's GPU labels (phalanx.io/gpu.*) and annotations
// (gpu-topology, gpu-state); agentless nodes get the first agent node's, with that node's GPU
// UUIDs and name replaced by theirs, written once (nothing on them changes afterwards).
Status Cluster::PublishAgentlessNodes() {
  const Node* source = nullptr;
  bool any_agentless = false;
  for (const auto& [name, node] : nodes_) {
    if (node.spec.agents && source == nullptr) source = &node;
    any_agentless |= !node.spec.agents;
  }
  if (!any_agentless) return OkStatus();
  if (source == nullptr) return InvalidArgumentError("agentless nodes need one node with agents to copy");
  auto published = [](const Json& n) {
    const Json& a = n["metadata"].value("annotations", Json::object());
    return a.contains("phalanx.io/gpu-topology") && a.contains("phalanx.io/gpu-state");
  };
  Json template_node;
  if (!PollUntil([&] {
        auto got = client_->Get(kube::resources::kNodes, "", source->spec.name);
        if (got.ok()) template_node = std::move(got).value();
        return got.ok() && published(template_node);
      }, kStartDeadline)) {
    return UnavailableError("the device plugin of " + source->spec.name + " never published its Node");
  }
  auto rewrite = [&](std::string text, const Node& to) {
    for (size_t i = 0; i < source->uuids.size() && i < to.uuids.size(); ++i) {
      for (size_t at = text.find(source->uuids[i]); at != std::string::npos; at = text.find(source->uuids[i], at)) {
        text.replace(at, source->uuids[i].size(), to.uuids[i]);
        at += to.uuids[i].size();
      }
    }
    for (size_t at = text.find(source->spec.name); at != std::string::npos; at = text.find(source->spec.name, at)) {
      text.replace(at, source->spec.name.size(), to.spec.name);
      at += to.spec.name.size();
    }
    return text;
  };
  const Json source_labels = template_node["metadata"].value("labels", Json::object());
  const Json source_annotations = template_node["metadata"].value("annotations", Json::object());
  for (const auto& [name, node] : nodes_) {
    if (node.spec.agents) continue;
    Json labels = Json::object(), annotations = Json::object();
    for (const auto& [k, v] : source_labels.items()) {
      if (k.rfind("phalanx.io/", 0) == 0 && v.is_string()) labels[k] = rewrite(v.get<std::string>(), node);
    }
    for (const auto& [k, v] : source_annotations.items()) {
      if (k.rfind("phalanx.io/", 0) == 0 && v.is_string()) annotations[k] = rewrite(v.get<std::string>(), node);
    }
    auto patched = client_->Patch(kube::resources::kNodes, "", name, kube::PatchType::kMerge,
                                  Json{{"metadata", {{"labels", labels}, {"annotations", annotations}}}});
    if (!patched.ok()) return patched.status().WithContext("publishing agentless node " + name);
  }
  return OkStatus();
}

Status Cluster::StartOperator() {
  if (operator_metrics_port_ == 0) operator_metrics_port_ = FreePort();
  if (options_.progress_endpoint && progress_port_ == 0) progress_port_ = FreePort();
  Status error;
  std::vector<std::string> args = {
      "--kubeconfig", kubeconfig_, "--metrics-addr", fmt::format("127.0.0.1:{}", operator_metrics_port_),
      "--progress-addr", progress_port_ == 0 ? "" : fmt::format("127.0.0.1:{}", progress_port_),
      "--namespace", options_.namespace_, "--workers", "2", "--stuck-terminating-seconds", "60"};
  for (const auto& a : options_.extra_operator_args) args.push_back(a);
  operator_ = Launch("operator",
                     options_.operator_binary.empty() ? BinaryPath("operator/phalanx-operator") : options_.operator_binary,
                     args, {}, &error);
  if (!operator_) return error;
  return WaitReady(*operator_, operator_metrics_port_);
}

Status Cluster::StartExtender() {
  const std::string config = dir() + "/extender.yaml";
  if (!WriteFile(config, ExtenderConfig())) return InternalError("cannot write " + config);
  if (extender_port_ == 0) extender_port_ = FreePort();
  if (extender_metrics_port_ == 0) extender_metrics_port_ = FreePort();
  std::vector<std::string> args = {"--kubeconfig", kubeconfig_, "--config", config,
                                   "--listen", fmt::format("127.0.0.1:{}", extender_port_),
                                   "--metrics-addr", fmt::format("127.0.0.1:{}", extender_metrics_port_),
                                   // Shortened so that a restarted extender (new identity) takes the
                                   // Lease of the killed one within seconds.
                                   "--leader-elect-lease-duration", "3s", "--leader-elect-renew-deadline", "2s",
                                   "--leader-elect-retry-period", "500ms"};
  for (const auto& a : options_.extra_extender_args) args.push_back(a);
  Status error;
  extender_ = Launch("extender", BinaryPath("extender/phalanx-extender"), args,
                     {{"POD_NAMESPACE", options_.namespace_}}, &error);
  if (!extender_) return error;
  return WaitReady(*extender_, extender_metrics_port_);
}

Status Cluster::RestartExtender() {
  if (!extender_) return FailedPreconditionError("no extender");
  extender_->Kill();
  extender_.reset();
  return StartExtender();
}

Status Cluster::RestartOperator() {
  if (!operator_) return FailedPreconditionError("no operator");
  operator_->Kill();
  operator_.reset();
  return StartOperator();
}

Status Cluster::WaitReady(Process& process, uint16_t port) {
  fakes::apiserver::testing::RawClient http("http://127.0.0.1:" + std::to_string(port));
  if (!PollUntil([&] { return !process.Running() || http.Get("/readyz").status == 200; }, kStartDeadline,
                 std::chrono::milliseconds(50)) ||
      !process.Running()) {
    return UnavailableError(process.name() + " never became ready:\n" + process.LogTail());
  }
  return OkStatus();
}

Status Cluster::InjectNvmlEvent(const std::string& node, const std::string& json_line) {
  std::ofstream out(nodes_.at(node).events_file, std::ios::app);
  out << json_line << "\n";
  out.flush();
  return out ? OkStatus() : InternalError("cannot append to the NVML events file");
}

Status Cluster::RestartKubelet(const std::string& node) { return nodes_.at(node).kubelet->Restart(); }

std::string Cluster::Metrics(const std::string& component) {
  uint16_t port = 0;
  if (component == "operator") {
    port = operator_metrics_port_;
  } else if (component == "extender") {
    port = extender_metrics_port_;
  } else if (nodes_.count(component)) {
    port = nodes_.at(component).metrics_port;
  }
  if (port == 0) return "";
  auto r = fakes::apiserver::testing::RawClient("http://127.0.0.1:" + std::to_string(port)).Get("/metrics");
  return r.status == 200 ? r.body : "";
}

std::optional<double> Cluster::Metric(const std::string& component, const std::string& sample) {
  std::istringstream in(Metrics(component));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line.compare(0, sample.size(), sample) == 0 && line.size() > sample.size() && line[sample.size()] == ' ') {
      try {
        return std::stod(line.substr(sample.size() + 1));
      } catch (...) {
        return std::nullopt;
      }
    }
  }
  return std::nullopt;
}

std::string Cluster::Diagnostics() {
  std::string out;
  for (Process* p : {apiserver_.get(), operator_.get(), extender_.get()}) {
    if (p) out += p->LogTail(3000) + "\n";
  }
  for (auto& [name, node] : nodes_) {
    if (node.plugin) out += node.plugin->LogTail(3000) + "\n";
    if (node.driver) {
      for (const auto& e : node.driver->errors()) out += "kubelet driver: " + e + "\n";
    }
  }
  if (scheduler_) {
    for (const auto& e : scheduler_->errors()) out += "scheduler driver: " + e + "\n";
    auto calls = scheduler_->calls();
    for (size_t i = calls.size() > 20 ? calls.size() - 20 : 0; i < calls.size(); ++i) {
      out += fmt::format("extender {} {} -> {} {}\n", calls[i].verb, calls[i].pod, calls[i].status,
                         Tail(calls[i].response, 300));
    }
  }
  return out;
}

}  // namespace phalanx::e2e
