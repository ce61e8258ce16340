#include "operator/controller/controller.h"

#include <charconv>

#include <fmt/format.h>

#include "core/kube/api_error.h"
#include "core/kube/resource.h"
#include "core/log/log.h"
#include "operator/api/keys.h"
#include "operator/api/time_format.h"
#include "operator/api/training_job_codec.h"
#include "operator/controller/slow_start.h"
#include "operator/lifecycle/restart_policy.h"

namespace phalanx::op {

namespace {

using kube::Json;
namespace res = kube::resources;

constexpr const char* kByJob = "job";

std::string Key(const std::string& ns, const std::string& name) { return ns + "/" + name; }

std::pair<std::string, std::string> SplitKey(const std::string& key) {
  auto slash = key.find('/');
  if (slash == std::string::npos) return {"", key};
  return {key.substr(0, slash), key.substr(slash + 1)};
}

// Numeric resourceVersion comparison (etcd revisions); unknown formats compare as "not newer".
bool NewerThan(const std::string& a, const std::string& b) {
  uint64_t x = 0, y = 0;
  auto r1 = std::from_chars(a.data(), a.data() + a.size(), x);
  auto r2 = std::from_chars(b.data(), b.data() + b.size(), y);
  if (r1.ec != std::errc() || r2.ec != std::errc()) return false;
  return x > y;
}

}  // namespace

Result<CachedJob> DecodeCachedJob(const Json& object) {
  CachedJob c;
  c.raw = object;
  auto job = DecodeTrainingJob(object);
  if (job.ok()) {
    c.job = std::move(job).value();
  } else {
    c.error = job.status();
    auto meta = DecodeObjectMeta(object.value("metadata", Json::object()));
    if (!meta.ok()) return meta.status();
    c.job.meta = *meta;
  }
  return c;
}

Controller::Controller(kube::KubeClient& client, ControllerOptions options, OperatorMetrics& metrics,
                       std::shared_ptr<spdlog::logger> logger, const Clock& clock)
    : client_(client), options_(std::move(options)), metrics_(metrics), logger_(std::move(logger)), clock_(clock),
      queue_(kube::WorkQueueOptions{std::chrono::milliseconds(50), std::chrono::milliseconds(300'000), 50, 500,
                                    "trainingjobs"},
             &clock),
      node_products_(client, clock) {
  kube::InformerOptions jo;
  jo.resource = res::kTrainingJobs;
  jo.ns = options_.ns;
  jo.min_watch_timeout = options_.min_watch_timeout;
  jobs_ = std::make_unique<kube::Informer<CachedJob>>(client_, jo, DecodeCachedJob);
  jobs_->AddHandlers({
      [this](const CachedJob& j) { Enqueue(j.job.meta.namespace_, j.job.meta.name); },
      [this](const CachedJob&, const CachedJob& j) { Enqueue(j.job.meta.namespace_, j.job.meta.name); },
      [this](const CachedJob& j) {
        metrics_.ForgetJob(Key(j.job.meta.namespace_, j.job.meta.name));
        Enqueue(j.job.meta.namespace_, j.job.meta.name);  // orphaned pods lose their finalizer
      },
  });

  kube::InformerOptions po;
  po.resource = res::kPods;
  po.ns = options_.ns;
  po.label_selector = std::string(kLabelJobName);
  po.min_watch_timeout = options_.min_watch_timeout;
  pods_ = std::make_unique<kube::Informer<ObservedPod>>(client_, po, DecodeObservedPod);
  pods_->AddIndex(kByJob, [](const ObservedPod& p) -> std::vector<std::string> {
    if (p.job_name.empty()) return {};
    return {Key(p.namespace_, p.job_name)};
  });
  auto pod_changed = [this](const ObservedPod& p) { Enqueue(p.namespace_, p.job_name); };
  pods_->AddHandlers({pod_changed, [pod_changed](const ObservedPod&, const ObservedPod& p) { pod_changed(p); },
                      pod_changed});

  kube::InformerOptions so;
  so.resource = res::kServices;
  so.ns = options_.ns;
  so.label_selector = std::string(kLabelJobName);
  so.min_watch_timeout = options_.min_watch_timeout;
  services_ = std::make_unique<kube::Informer<NamedObject>>(client_, so, [](const Json& j) -> Result<NamedObject> {
    const Json& m = j.value("metadata", Json::object());
    return NamedObject{m.value("namespace", std::string()), m.value("name", std::string())};
  });
  services_->AddHandlers({[this](const NamedObject& s) { Enqueue(s.namespace_, s.name); }, nullptr,
                          [this](const NamedObject& s) { Enqueue(s.namespace_, s.name); }});
}

Controller::~Controller() {
  Stop();
  if (jobs_) jobs_->Stop();
  if (pods_) pods_->Stop();
  if (services_) services_->Stop();
}

Status Controller::StartInformers(std::chrono::milliseconds timeout) {
  jobs_->Start();
  pods_->Start();
  services_->Start();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto left = [&] {
    return std::max(std::chrono::milliseconds(0), std::chrono::duration_cast<std::chrono::milliseconds>(
                                                      deadline - std::chrono::steady_clock::now()));
  };
  if (!jobs_->WaitForSync(left()) || !pods_->WaitForSync(left()) || !services_->WaitForSync(left())) {
    return UnavailableError("informers did not sync: is the TrainingJob CRD installed and the API server reachable?");
  }
  return OkStatus();
}

bool Controller::Synced() const { return jobs_->HasSynced() && pods_->HasSynced() && services_->HasSynced(); }

void Controller::Enqueue(const std::string& ns, const std::string& name) {
  if (name.empty()) return;
  queue_.Add(Key(ns, name));
  metrics_.SetQueueDepth(static_cast<double>(queue_.Len()));
}

void Controller::Run() {
  queue_.Run(options_.workers, [this](const std::string& key) {
    const auto start = std::chrono::steady_clock::now();
    Status s = ReconcileKey(key);
    metrics_.ObserveReconcile(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), s.ok());
    metrics_.SetQueueDepth(static_cast<double>(queue_.Len()));
    if (!s.ok()) PHX_LOG_WARN(logger_, "Failed to reconcile TrainingJob", kv("job", key), kv("err", s.ToString()));
    return s;
  });
}

void Controller::Stop() { queue_.ShutDown(); }

std::shared_ptr<const CachedJob> Controller::Latest(const std::string& key) {
  auto cached = jobs_->Get(key);
  std::lock_guard lock(written_mu_);
  auto it = written_.find(key);
  if (it == written_.end()) return cached;
  if (!cached) {
    written_.erase(it);  // the job is gone
    return nullptr;
  }
  if (cached->job.meta.uid == it->second->job.meta.uid &&
      NewerThan(it->second->job.meta.resource_version, cached->job.meta.resource_version)) {
    return it->second;
  }
  written_.erase(it);  // the cache caught up
  return cached;
}

std::vector<ObservedPod> Controller::PodsOf(const std::string& ns, const std::string& job) {
  std::vector<ObservedPod> out;
  for (const auto& p : pods_->ByIndex(kByJob, Key(ns, job))) out.push_back(*p);
  return out;
}

Status Controller::ReconcileKey(const std::string& key) {
  std::optional<Json> fresh;
  for (int i = 0; i <= options_.max_conflict_retries; ++i) {
    bool conflict = false;
    Status s = ReconcileOnce(key, fresh ? &*fresh : nullptr, conflict);
    if (!conflict) return s;
    // 409: someone (or our own earlier write) changed the job; re-read it and decide again.
    auto [ns, name] = SplitKey(key);
    auto got = client_.Get(kube::resources::kTrainingJobs, ns, name);
    if (!got.ok()) {
      if (IsNotFound(got.status())) return OkStatus();
      return got.status();
    }
    fresh = std::move(*got);
  }
  return AbortedError(fmt::format("status of {} kept conflicting", key));
}

Status Controller::ReconcileOnce(const std::string& key, const Json* fresh, bool& conflict) {
  auto [ns, name] = SplitKey(key);
  std::shared_ptr<const CachedJob> cached;
  if (fresh != nullptr) {
    PHX_ASSIGN_OR_RETURN(CachedJob c, DecodeCachedJob(*fresh));
    cached = std::make_shared<const CachedJob>(std::move(c));
  } else {
    cached = Latest(key);
  }
  std::vector<ObservedPod> pods = PodsOf(ns, name);
  if (!cached) {
    ReconcilePlan plan = ReconcileOrphanPods(pods);
    return ApplyPods(ns, plan, pods);
  }
  if (!cached->error.ok()) {
    // Never overwrite a status we cannot read: it may hold the only checkpoint record.
    return cached->error.WithContext(fmt::format("TrainingJob {}", key));
  }
  const TrainingJob& job = cached->job;
  // Pods of an earlier job with the same name belong to the garbage collector.
  std::vector<ObservedPod> mine, orphans;
  for (auto& p : pods) {
    (p.controller_uid == job.meta.uid ? mine : orphans).push_back(std::move(p));
  }
  if (!orphans.empty()) PHX_RETURN_IF_ERROR(ApplyPods(ns, ReconcileOrphanPods(orphans), orphans));
  const bool service = services_->Get(key) != nullptr;
  if (options_.reconcile.prices != nullptr) {
    // Only pods that held GPUs are priced; the node's model is read once per node per hour.
    for (ObservedPod& p : mine) {
      if (p.start_time && p.gpus > 0) p.gpu_product = node_products_.Product(p.node_name);
    }
  }
  ReconcilePlan plan = Reconcile(job, mine, service, clock_.WallNow(), options_.reconcile);
  PHX_RETURN_IF_ERROR(Apply(*cached, plan, conflict));
  if (conflict) return OkStatus();
  const TrainingJobStatus& st = plan.status ? *plan.status : job.status;
  const double age = st.last_committed ? SecondsBetween(st.last_committed->time, clock_.WallNow()) : 0;
  metrics_.SetJob(key, st.phase, job.spec_error.ok() ? job.spec.TotalGpus() : 0, age);
  metrics_.SetIdleGpus(key, ns, plan.tier, plan.idle_gpus);
  if (plan.requeue_after) queue_.AddAfter(key, *plan.requeue_after);
  return OkStatus();
}

Status Controller::Apply(const CachedJob& cached, const ReconcilePlan& plan, bool& conflict) {
  const TrainingJob& job = cached.job;
  const std::string& ns = job.meta.namespace_;
  const std::string key = Key(ns, job.meta.name);
  if (plan.status) {
    Json obj = cached.raw;
    obj["status"] = EncodeStatus(*plan.status);
    auto written = client_.UpdateStatus(kube::resources::kTrainingJobs, ns, obj,
                                        kube::WriteOptions{.field_manager = options_.field_manager});
    if (!written.ok()) {
      if (kube::IsConflict(written.status())) {
        conflict = true;
        return OkStatus();
      }
      if (IsNotFound(written.status())) return OkStatus();
      return written.status().WithContext("write status");
    }
    auto decoded = DecodeCachedJob(*written);
    if (decoded.ok()) {
      std::lock_guard lock(written_mu_);
      written_[key] = std::make_shared<const CachedJob>(std::move(*decoded));
    }
    if (plan.restart_decided) metrics_.CountRestart(plan.restart_decided->restart_class, plan.restart_decided->reason);
    if (plan.lost_gpu_seconds_added > 0) metrics_.AddLostGpuSeconds(plan.lost_gpu_seconds_added);
    if (plan.preempt_request_refused) metrics_.CountPreemptRequestRefused();
    if (!plan.usage_added.empty()) {
      const PriceTable* prices = options_.reconcile.prices;
      metrics_.AddUsage(ns, plan.tier, prices != nullptr ? prices->currency : "", plan.usage_added);
    }
    if (plan.seconds_to_restart) metrics_.ObserveTimeToRestart(*plan.seconds_to_restart);
    const TrainingJobStatus& next = *plan.status;
    if (next.running_since && !job.status.running_since && next.attempt_start_time &&
        next.attempt == job.status.attempt) {
      metrics_.ObserveGangWait(SecondsBetween(*next.attempt_start_time, *next.running_since));
    }
    if (plan.status->phase != job.status.phase) {
      PHX_LOG_INFO(logger_, "Changed TrainingJob phase", kv("job", key), kv("from", PhaseName(job.status.phase)),
                   kv("to", PhaseName(plan.status->phase)), kv("attempt", plan.status->attempt));
    }
  }
  if (plan.create_service) {
    auto s = client_.Create(kube::resources::kServices, ns, *plan.create_service,
                            kube::WriteOptions{.field_manager = options_.field_manager});
    if (!s.ok() && !IsAlreadyExists(s.status())) return s.status().WithContext("create service");
  }
  // In parallel (slow start): 64 serial creates were the longest stage of a 64 x 8 gang's start
  // (bench/RESULTS.md "Issue 23 item 7").
  PHX_RETURN_IF_ERROR(SlowStartBatch(static_cast<int>(plan.create_pods.size()), options_.max_parallel_creates,
                                     [&](int i) -> Status {
                                       const Json& pod = plan.create_pods[static_cast<size_t>(i)];
                                       auto s = client_.Create(kube::resources::kPods, ns, pod,
                                                               kube::WriteOptions{.field_manager = options_.field_manager});
                                       if (s.ok() || IsAlreadyExists(s.status())) return OkStatus();
                                       return s.status().WithContext(
                                           fmt::format("create pod {}", pod["metadata"].value("name", "")));
                                     }));
  PHX_RETURN_IF_ERROR(ApplyPods(ns, plan, PodsOf(ns, job.meta.name)));
  if (plan.delete_job) {
    auto d = client_.Delete(kube::resources::kTrainingJobs, ns, job.meta.name,
                            kube::DeleteOptions{.propagation_policy = "Background", .precondition_uid = job.meta.uid});
    if (!d.ok() && !IsNotFound(d.status())) return d.status().WithContext("delete finished job (TTL)");
    PHX_LOG_INFO(logger_, "Deleted finished TrainingJob", kv("job", key), kv("reason", "ttlSecondsAfterFinished"));
  }
  EmitEvents(job, plan);
  return OkStatus();
}

Status Controller::ApplyPods(const std::string& ns, const ReconcilePlan& plan, const std::vector<ObservedPod>& pods) {
  for (const auto& a : plan.annotate_pods) {
    Json patch = {{"metadata", {{"annotations", {{a.key, a.value}}}}}};
    auto s = client_.Patch(kube::resources::kPods, ns, a.name, kube::PatchType::kMerge, patch);
    if (!s.ok() && !IsNotFound(s.status())) return s.status().WithContext("annotate pod " + a.name);
  }
  for (const auto& d : plan.delete_pods) {
    if (d.mark_disruption) {
      Json cond = {{"type", "DisruptionTarget"},      {"status", "True"},
                   {"reason", d.disruption_reason},   {"message", d.disruption_message},
                   {"lastTransitionTime", FormatRfc3339(clock_.WallNow())}};
      Json patch = Json::array({Json{{"op", "add"}, {"path", "/status/conditions/-"}, {"value", cond}}});
      auto s = client_.Patch(kube::resources::kPods, ns, d.name, kube::PatchType::kJsonPatch, patch,
                             kube::PatchOptions{.subresource = "status"});
      if (!s.ok() && !IsNotFound(s.status())) {
        // The condition explains the restart; the drain itself must not wait on it.
        PHX_LOG_WARN(logger_, "Failed to mark pod DisruptionTarget", kv("pod", ns + "/" + d.name),
                     kv("err", s.status().ToString()));
      }
    }
    kube::DeleteOptions opts;
    opts.precondition_uid = d.uid;
    if (d.force) opts.grace_period_seconds = 0;
    auto s = client_.Delete(kube::resources::kPods, ns, d.name, opts);
    if (!s.ok() && !IsNotFound(s.status()) && !kube::IsConflict(s.status())) {
      return s.status().WithContext("delete pod " + d.name);
    }
  }
  for (const auto& f : plan.remove_finalizers) {
    const ObservedPod* pod = nullptr;
    for (const auto& p : pods) {
      if (p.name == f.name) pod = &p;
    }
    if (pod == nullptr) continue;
    Json keep = Json::array();
    for (const auto& x : pod->finalizers) {
      if (x != kFinalizerCheckpoint) keep.push_back(x);
    }
    // resourceVersion precondition: never drop a finalizer someone added meanwhile.
    Json patch = {{"metadata", {{"finalizers", keep}, {"resourceVersion", pod->resource_version}}}};
    auto s = client_.Patch(kube::resources::kPods, ns, f.name, kube::PatchType::kMerge, patch);
    if (!s.ok() && !IsNotFound(s.status())) {
      if (kube::IsConflict(s.status())) return UnavailableError("pod " + f.name + " changed; finalizer removal retried");
      return s.status().WithContext("remove finalizer from pod " + f.name);
    }
  }
  return OkStatus();
}

void Controller::EmitEvents(const TrainingJob& job, const ReconcilePlan& plan) {
  const std::string now = FormatRfc3339(clock_.WallNow());
  for (const auto& e : plan.events) {
    Json ev = {{"apiVersion", "v1"},
               {"kind", "Event"},
               {"metadata", {{"generateName", job.meta.name + "."}, {"namespace", job.meta.namespace_}}},
               {"involvedObject",
                {{"apiVersion", kApiVersion},
                 {"kind", kKind},
                 {"name", job.meta.name},
                 {"namespace", job.meta.namespace_},
                 {"uid", job.meta.uid}}},
               {"reason", e.reason},
               {"message", e.message},
               {"type", e.warning ? "Warning" : "Normal"},
               {"source", {{"component", "phalanx-operator"}}},
               {"reportingComponent", "phalanx-operator"},
               {"firstTimestamp", now},
               {"lastTimestamp", now},
               {"count", 1}};
    auto s = client_.Create(kube::resources::kCoreEvents, job.meta.namespace_, ev);
    if (!s.ok()) PHX_LOG_DEBUG(logger_, "Failed to record event", kv("reason", e.reason), kv("err", s.status().ToString()));
  }
}

Result<bool> Controller::ReportProgress(const std::string& ns, const std::string& pod_name, const std::string& pod_uid,
                                        const CheckpointReport& report) {
  auto pod = pods_->Get(Key(ns, pod_name));
  if (!pod) return NotFoundError(fmt::format("pod {}/{} is not a TrainingJob member", ns, pod_name));
  if (!pod_uid.empty() && pod->uid != pod_uid) {
    return PermissionDeniedError(fmt::format("token belongs to an earlier pod named {}/{}", ns, pod_name));
  }
  const std::string key = Key(ns, pod->job_name);
  for (int i = 0; i <= options_.max_conflict_retries; ++i) {
    PHX_ASSIGN_OR_RETURN(Json obj, client_.Get(kube::resources::kTrainingJobs, ns, pod->job_name));
    PHX_ASSIGN_OR_RETURN(CachedJob c, DecodeCachedJob(obj));
    PHX_RETURN_IF_ERROR(c.error);
    if (c.job.meta.uid != pod->controller_uid) {
      return PermissionDeniedError(fmt::format("pod {}/{} does not belong to TrainingJob {}", ns, pod_name, key));
    }
    TrainingJobStatus st = c.job.status;
    const SystemTime now = clock_.WallNow();
    if (!ApplyCheckpointReport(st, report, pod->attempt, now)) return false;
    if (!c.job.spec_error.ok()) return false;
    st.preemption_cost = ComputePreemptionCost(c.job.spec, st, now);
    obj["status"] = EncodeStatus(st);
    auto w = client_.UpdateStatus(kube::resources::kTrainingJobs, ns, obj,
                                  kube::WriteOptions{.field_manager = options_.field_manager});
    if (w.ok()) {
      queue_.Add(key);  // a graceful preemption may be waiting for exactly this
      return true;
    }
    if (!kube::IsConflict(w.status())) return w.status();
  }
  return AbortedError("status kept conflicting");
}

}  // namespace phalanx::op
