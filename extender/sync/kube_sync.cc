#include "extender/sync/kube_sync.h"

#include <algorithm>

#include "core/kube/api_error.h"
#include "core/log/log.h"
#include "core/topology/topology_codec.h"

namespace phalanx::extender {
namespace {

kube::InformerOptions Options(const kube::Resource& resource, const ClusterSyncOptions& o) {
  kube::InformerOptions opts;
  opts.resource = resource;
  opts.resync_period = o.resync_period;
  opts.min_watch_timeout = o.min_watch_timeout;
  return opts;
}

const kube::Resource kPodDisruptionBudgets{"policy", "v1", "poddisruptionbudgets", true, "PodDisruptionBudget"};

// Whole GPUs, MIG devices, or a gang label: what the ledger tracks.
bool Relevant(const PodInfo& p) { return p.gpus > 0 || !p.mig.empty() || p.IsGangMember(); }

}  // namespace

Result<PodInfo> DecodeInformerPod(const kube::Json& pod) {
  PHX_ASSIGN_OR_RETURN(PodInfo info, ParsePod(pod));
  if (Relevant(info)) return info;
  PodInfo stub;  // keeps the informer's per-key bookkeeping cheap for the many non-GPU pods
  stub.uid = std::move(info.uid);
  stub.ns = std::move(info.ns);
  stub.name = std::move(info.name);
  return stub;
}

Result<PodInfo> DecodeInformerPodRaw(std::string_view pod_json) {
  const bool maybe_relevant = pod_json.find("nvidia.com/") != std::string_view::npos ||
                              pod_json.find(kGangLabel) != std::string_view::npos ||
                              pod_json.find(kGangAliasLabel) != std::string_view::npos;
  if (!maybe_relevant) return PodInfo{};
  PHX_ASSIGN_OR_RETURN(kube::Json doc, json::Parse(pod_json));
  return DecodeInformerPod(doc);
}

Result<PriorityClassInfo> DecodePriorityClass(const kube::Json& object) {
  PriorityClassInfo out;
  if (!object.is_object()) return InvalidArgumentError("PriorityClass: expected object");
  if (auto meta = object.find("metadata"); meta != object.end() && meta->is_object()) {
    out.name = meta->value("name", "");
  }
  if (out.name.empty()) return InvalidArgumentError("PriorityClass.metadata.name: missing");
  if (auto v = object.find("value"); v != object.end() && v->is_number_integer()) {
    out.value = static_cast<int>(std::clamp<int64_t>(v->get<int64_t>(), INT32_MIN, INT32_MAX));
  }
  return out;
}

ClusterSync::ClusterSync(kube::KubeClient& client, Extender& extender, std::shared_ptr<spdlog::logger> logger,
                         ClusterSyncOptions options)
    : watch_classes_(options.watch_priority_classes),
      watch_budgets_(options.watch_budgets),
      crd_poll_period_(options.crd_poll_period),
      client_(client),
      extender_(extender),
      logger_(std::move(logger)),
      classes_(client, Options(kube::resources::kPriorityClasses, options), DecodePriorityClass),
      nodes_(client, Options(kube::resources::kNodes, options),
             [](const kube::Json& j) { return ParseNode(j); }),
      jobs_(client, Options(kube::resources::kTrainingJobs, options),
            [](const kube::Json& j) { return ParseTrainingJob(j); }),
      pods_(client, Options(kube::resources::kPods, options), kube::Informer<PodInfo>::RawDecode{DecodeInformerPodRaw}),
      pdbs_(client, Options(kPodDisruptionBudgets, options), [](const kube::Json& j) { return ParsePdb(j); }),
      queue_watch_(client, extender, logger_,
                   QueueWatchOptions{.resync_period = options.resync_period,
                                     .min_watch_timeout = options.min_watch_timeout,
                                     .watch_namespaces = options.watch_namespaces,
                                     .crd_poll_period = options.crd_poll_period,
                                     .base = options.queue_base}) {
  if (options.registry != nullptr) {
    auto family = options.registry->AddCounter(
        "phalanx_extender_annotations_refused_total",
        "Annotations the extender refused (malformed or over their size limit) by annotation; each "
        "distinct refusal of an object counts once.",
        {"annotation"});
    if (family.ok()) refused_ = *family;
  }
  // Logged and counted once per new error of an object, not on every update that keeps it.
  auto refuse = [this](std::string_view annotation, const std::string& object, const std::string& error,
                       const std::string& before) {
    if (error.empty() || error == before) return;
    PHX_LOG_WARN(logger_, "Refused annotation", kv("annotation", annotation), kv("object", object),
                 kv("err", error));
    if (refused_) {
      if (auto c = refused_->WithLabels({std::string(annotation)}); c.ok()) (*c)->Inc();
    }
  };
  auto node_refusals = [refuse](const NodeInfo& n, const NodeInfo* old) {
    refuse(topology::kGpuTopologyAnnotation, n.name.str(), n.topology_error, old ? old->topology_error : "");
    refuse(kGpuStateAnnotation, n.name.str(), n.gpu_state_error, old ? old->gpu_state_error : "");
  };
  auto pod_refusals = [refuse](const PodInfo& p, const PodInfo* old) {
    refuse(kDevicesAnnotation, p.ns + "/" + p.name, p.devices_error, old ? old->devices_error : "");
  };
  auto upsert_node = [this](const NodeInfo& n) {
    if (Status st = extender_.OnNode(n); !st.ok()) {
      PHX_LOG_WARN(logger_, "Node not usable by the ledger", kv("node", n.name.str()), kv("err", st.message()));
    }
  };
  nodes_.AddHandlers({.on_add =
                          [upsert_node, node_refusals](const NodeInfo& n) {
                            node_refusals(n, nullptr);
                            upsert_node(n);
                          },
                      .on_update =
                          [upsert_node, node_refusals](const NodeInfo& old, const NodeInfo& cur) {
                            node_refusals(cur, &old);
                            upsert_node(cur);
                          },
                      .on_delete = [this](const NodeInfo& n) { extender_.OnNodeDeleted(n.name); }});
  pods_.AddHandlers({.on_add =
                         [this, pod_refusals](const PodInfo& p) {
                           pod_refusals(p, nullptr);
                           if (Relevant(p)) extender_.OnPod(WithPriority(p));
                         },
                     .on_update =
                         [this, pod_refusals](const PodInfo& old, const PodInfo& cur) {
                           pod_refusals(cur, &old);
                           if (Relevant(cur)) {
                             extender_.OnPod(WithPriority(cur));
                           } else if (Relevant(old)) {
                             extender_.OnPodDeleted(old.uid);
                           }
                         },
                     .on_delete =
                         [this](const PodInfo& p) {
                           if (Relevant(p)) extender_.OnPodDeleted(p.uid);
                         }});
  // A class seen after its pods (informers sync independently): re-resolve those pods.
  auto upsert_class = [this](const PriorityClassInfo& pc) {
    for (const auto& p : pods_.List()) {
      if (Relevant(*p) && p->priority == 0 && p->priority_class == pc.name) extender_.OnPod(WithPriority(*p));
    }
  };
  classes_.AddHandlers({.on_add = upsert_class,
                        .on_update = [upsert_class](const PriorityClassInfo&, const PriorityClassInfo& cur) {
                          upsert_class(cur);
                        },
                        .on_delete = nullptr});
  jobs_.AddHandlers({.on_add = [this](const TrainingJobInfo& j) { extender_.OnTrainingJob(j); },
                     .on_update = [this](const TrainingJobInfo&, const TrainingJobInfo& cur) { extender_.OnTrainingJob(cur); },
                     .on_delete = [this](const TrainingJobInfo& j) { extender_.OnTrainingJobDeleted(j.Key()); }});
}

ClusterSync::~ClusterSync() { Stop(); }

bool ClusterSync::ClassesSynced() const { return !watch_classes_ || classes_.HasSynced(); }

PodInfo ClusterSync::WithPriority(const PodInfo& pod) const {
  if (pod.priority != 0 || pod.priority_class.empty()) return pod;
  auto pc = classes_.Get(pod.priority_class);
  if (!pc) return pod;
  PodInfo out = pod;
  out.priority = pc->value;
  return out;
}

void ClusterSync::Start() {
  // PriorityClasses and nodes first: pods are resolved against them as they arrive.
  if (watch_classes_) classes_.Start();
  nodes_.Start();
  // The CRD may not be installed (yet): a 404 is not an error, the extender runs on pods alone.
  auto probe = client_.List(kube::resources::kTrainingJobs, "", {.limit = 1});
  if (!probe.ok() && IsNotFound(probe.status())) {
    crd_missing_ = true;
    PHX_LOG_WARN(logger_, "TrainingJob CRD not installed: gangs from pod labels only; watching for it",
                 kv("resource", "trainingjobs.phalanx.io"));
    crd_thread_ = std::thread([this] { WatchForCrd(); });
  } else {
    jobs_started_ = true;
    jobs_.Start();
  }
  pods_.Start();
  if (watch_budgets_) pdbs_.Start();
  queue_watch_.Start();
}

void ClusterSync::WatchForCrd() {
  std::unique_lock lock(crd_mu_);
  while (!crd_cv_.wait_for(lock, crd_poll_period_, [this] { return stopping_; })) {
    lock.unlock();
    auto probe = client_.List(kube::resources::kTrainingJobs, "", {.limit = 1});
    lock.lock();
    if (stopping_) return;
    if (probe.ok() || !IsNotFound(probe.status())) {
      PHX_LOG_INFO(logger_, "TrainingJob CRD installed: watching TrainingJobs");
      jobs_started_ = true;
      jobs_.Start();
      crd_missing_ = false;
      return;
    }
  }
}

void ClusterSync::Stop() {
  {
    std::lock_guard lock(crd_mu_);
    stopping_ = true;
  }
  crd_cv_.notify_all();
  if (crd_thread_.joinable()) crd_thread_.join();
  queue_watch_.Stop();
  pdbs_.Stop();
  pods_.Stop();
  if (jobs_started_) jobs_.Stop();
  nodes_.Stop();
  classes_.Stop();
}

bool ClusterSync::JobsSynced() const { return crd_missing_ || (jobs_started_ && jobs_.HasSynced()); }
bool ClusterSync::BudgetsSynced() const { return !watch_budgets_ || pdbs_.HasSynced(); }

bool ClusterSync::Synced() const {
  return ClassesSynced() && nodes_.HasSynced() && JobsSynced() && pods_.HasSynced() && BudgetsSynced() &&
         queue_watch_.Synced();
}

std::vector<std::string> ClusterSync::Notes() const {
  std::vector<std::string> out;
  if (crd_missing_) out.push_back("TrainingJob CRD not installed: gangs from pod labels only");
  if (!watch_budgets_) out.push_back("not allowed to watch PodDisruptionBudgets: budgets learnt from refused evictions");
  for (std::string& note : queue_watch_.Notes()) out.push_back(std::move(note));
  return out;
}

std::vector<PdbInfo> ClusterSync::BudgetsIn(std::string_view ns) const {
  std::vector<PdbInfo> out;
  if (!watch_budgets_) return out;
  for (const auto& b : pdbs_.List()) {
    if (b->ns == ns) out.push_back(*b);
  }
  return out;
}

std::string ClusterSync::Pending() const {
  std::string out;
  auto add = [&out](bool synced, const char* name) {
    if (synced) return;
    if (!out.empty()) out += ", ";
    out += name;
  };
  add(nodes_.HasSynced(), "nodes");
  add(pods_.HasSynced(), "pods");
  add(JobsSynced(), "trainingjobs.phalanx.io");
  add(ClassesSynced(), "priorityclasses.scheduling.k8s.io");
  add(BudgetsSynced(), "poddisruptionbudgets.policy");
  add(queue_watch_.Synced(), "gpuqueues.phalanx.io");
  return out;
}

bool ClusterSync::WaitForSync(std::chrono::milliseconds timeout) const {
  const auto end = std::chrono::steady_clock::now() + timeout;
  auto left = [&] {
    return std::max(std::chrono::milliseconds(0),
                    std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now()));
  };
  const bool listed = (!watch_classes_ || classes_.WaitForSync(left())) && nodes_.WaitForSync(left()) &&
                      (crd_missing_ || jobs_.WaitForSync(left())) && pods_.WaitForSync(left()) &&
                      (!watch_budgets_ || pdbs_.WaitForSync(left()));
  while (listed && !queue_watch_.Synced() && left().count() > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // the queues are applied on their own thread
  }
  return listed && queue_watch_.Synced();
}

}  // namespace phalanx::extender
