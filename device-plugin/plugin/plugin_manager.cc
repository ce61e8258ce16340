#include "device-plugin/plugin/plugin_manager.h"

#include <sys/stat.h>

#include <filesystem>

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>

#include "core/log/log.h"

namespace phalanx::device_plugin {
namespace {

// A file's identity: inode plus change time. The inode alone is not enough: a socket
// deleted and recreated at once often gets the same inode number back.
FileId FileIdOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  return FileId{.ino = st.st_ino,
                .ctime_ns = static_cast<int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec};
}


}  // namespace

PluginManager::PluginManager(ManagerOptions options, std::vector<ResourceSpec> resources, ServerDeps deps)
    : options_(std::move(options)),
      resources_(std::move(resources)),
      deps_(std::move(deps)),
      backoff_(Backoff::Options{.base = std::chrono::milliseconds(200), .cap = options_.backoff_cap}) {
  registered_.assign(resources_.size(), false);
}

PluginManager::~PluginManager() { Stop(); }

std::string PluginManager::KubeletSocket() const { return options_.plugin_dir + "/kubelet.sock"; }

void PluginManager::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void PluginManager::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  StopServers();
}

void PluginManager::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    lock.unlock();
    Tick();
    lock.lock();
    cv_.wait_for(lock, options_.poll_interval, [this] { return stop_; });
  }
}

void PluginManager::StopServers() {
  for (auto& s : servers_) s->Stop();
  servers_.clear();
  socket_ids_.clear();
  registered_.assign(resources_.size(), false);
}

Status PluginManager::ServeAll() {
  StopServers();
  for (const auto& spec : resources_) {
    auto s = ResourceServer::Start(spec, options_.plugin_dir + "/" + SocketNameFor(spec.name), deps_);
    if (!s.ok()) {
      StopServers();
      return s.status();
    }
    socket_ids_.push_back(FileIdOf((*s)->socket_path()));
    servers_.push_back(std::move(s).value());
  }
  return OkStatus();
}

void PluginManager::Tick() {
  std::vector<size_t> to_register;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    const FileId kubelet = FileIdOf(KubeletSocket());
    const ino_t ino = kubelet.ino;
    bool restart = false;
    if (ino != 0 && kubelet_id_.ino != 0 && !(kubelet == kubelet_id_)) {
      PHX_LOG_INFO(deps_.logger, "Saw kubelet.sock recreated, restarting plugin servers");
      restart = true;
    }
    for (size_t i = 0; i < servers_.size() && !restart; ++i) {
      const FileId now_id = FileIdOf(servers_[i]->socket_path());
      if (now_id.ino == 0) {
        PHX_LOG_INFO(deps_.logger, "Saw plugin socket removed, restarting plugin servers",
                     kv("socket", servers_[i]->socket_path()));
        restart = true;
      } else if (!(now_id == socket_ids_[i])) {
        // Another process bound our path (kubelet now talks to it): serve and register again,
        // so kubelet's connection is ours. A second phalanx-device-plugin cannot get here: the
        // --lock-file outside the directory kubelet cleans stops it at start.
        PHX_LOG_WARN(deps_.logger, "Saw plugin socket replaced by another process, serving and registering again",
                     kv("socket", servers_[i]->socket_path()));
        restart = true;
      }
    }
    if (ino != 0) kubelet_id_ = kubelet;
    if (restart) {
      ++restarts_;
      if (deps_.metrics && deps_.metrics->kubelet_restarts) deps_.metrics->kubelet_restarts->Inc();
      StopServers();
      backoff_.Reset();
      next_attempt_ = {};
    }
    const auto now = std::chrono::steady_clock::now();
    if (now < next_attempt_) return;
    if (servers_.size() != resources_.size()) {
      if (Status s = ServeAll(); !s.ok()) {
        next_attempt_ = now + backoff_.Next();
        PHX_LOG_WARN(deps_.logger, "Failed to serve plugin sockets, will retry", kv("err", s));
        return;
      }
    }
    if (ino == 0) {
      // Kubelet is not there (yet): wait for kubelet.sock before registering.
      return;
    }
    for (size_t i = 0; i < resources_.size(); ++i) {
      if (!registered_[i]) to_register.push_back(i);
    }
  }
  bool failed = false;
  for (size_t i : to_register) {
    Status s = RegisterOne(resources_[i]);
    if (options_.on_register) options_.on_register(resources_[i], s);
    std::lock_guard<std::mutex> lock(mu_);
    if (deps_.metrics) deps_.metrics->Inc(deps_.metrics->registrations, {resources_[i].name, s.ok() ? "ok" : "error"});
    if (s.ok()) {
      registered_[i] = true;
      ++successes_;
      PHX_LOG_INFO(deps_.logger, "Registered with kubelet", kv("resource", resources_[i].name),
                   kv("devices", resources_[i].devices.size()));
    } else {
      failed = true;
      PHX_LOG_WARN(deps_.logger, "Failed to register with kubelet, will retry",
                   kv("resource", resources_[i].name), kv("err", s));
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (failed) {
    next_attempt_ = std::chrono::steady_clock::now() + backoff_.Next();
  } else if (!to_register.empty()) {
    backoff_.Reset();
  }
}

Status PluginManager::RegisterOne(const ResourceSpec& spec) {
  auto channel = grpc::CreateChannel("unix:" + KubeletSocket(), grpc::InsecureChannelCredentials());
  auto stub = v1beta1::Registration::NewStub(channel);
  v1beta1::RegisterRequest req;
  req.set_version("v1beta1");
  req.set_endpoint(SocketNameFor(spec.name));
  req.set_resource_name(spec.name);
  req.mutable_options()->set_get_preferred_allocation_available(true);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + options_.register_timeout);
  v1beta1::Empty empty;
  grpc::Status s = stub->Register(&ctx, req, &empty);
  if (s.ok()) return OkStatus();
  return Status(static_cast<StatusCode>(s.error_code()),
                fmt::format("Register {} with {}: {}", spec.name, KubeletSocket(), s.error_message()));
}

bool PluginManager::AllRegistered() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (servers_.size() != resources_.size()) return false;
  for (bool r : registered_) {
    if (!r) return false;
  }
  return true;
}

int PluginManager::successful_registrations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return successes_;
}

int PluginManager::kubelet_restarts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return restarts_;
}

std::vector<std::string> PluginManager::SocketPaths() const {
  std::vector<std::string> out;
  for (const auto& r : resources_) out.push_back(options_.plugin_dir + "/" + SocketNameFor(r.name));
  return out;
}

}  // namespace phalanx::device_plugin
