#include "tests/fakes/kubelet/fake_kubelet.h"

#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <system_error>

#include <fmt/format.h>

namespace phalanx::fake_kubelet {
namespace {

constexpr const char* kSocketName = "kubelet.sock";
constexpr const char* kCheckpointName = "kubelet_internal_checkpoint";

bool IsDnsSubdomain(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool alnum = std::islower(static_cast<unsigned char>(c)) ||
                       std::isdigit(static_cast<unsigned char>(c));
    if (!alnum && c != '-' && c != '.') return false;
    if ((i == 0 || i + 1 == s.size()) && !alnum) return false;
  }
  return true;
}

bool IsQualifiedNamePart(const std::string& s) {
  if (s.empty() || s.size() > 63) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool alnum = std::isalnum(static_cast<unsigned char>(c)) != 0;
    if (!alnum && c != '-' && c != '_' && c != '.') return false;
    if ((i == 0 || i + 1 == s.size()) && !alnum) return false;
  }
  return true;
}

}  // namespace

bool IsExtendedResourceName(const std::string& name) {
  // Native resources have no '/' or live under kubernetes.io/; quota's "requests." prefix
  // is reserved. What remains must be a qualified name once "requests." is prepended.
  const size_t slash = name.find('/');
  if (slash == std::string::npos || name.find("kubernetes.io/") != std::string::npos ||
      name.rfind("requests.", 0) == 0) {
    return false;
  }
  if (name.find('/', slash + 1) != std::string::npos) return false;
  return IsDnsSubdomain("requests." + name.substr(0, slash)) &&
         IsQualifiedNamePart(name.substr(slash + 1));
}

class FakeKubelet::RegistrationService final : public v1beta1::Registration::Service {
 public:
  explicit RegistrationService(FakeKubelet& kubelet) : kubelet_(kubelet) {}
  grpc::Status Register(grpc::ServerContext*, const v1beta1::RegisterRequest* request,
                        v1beta1::Empty*) override {
    return kubelet_.HandleRegister(*request);
  }

 private:
  FakeKubelet& kubelet_;
};

Result<std::unique_ptr<FakeKubelet>> FakeKubelet::Start(const std::string& kubelet_dir,
                                                        FakeKubeletOptions options) {
  std::unique_ptr<FakeKubelet> kubelet(new FakeKubelet(kubelet_dir, options));
  PHX_RETURN_IF_ERROR(kubelet->CleanPluginDir());
  PHX_RETURN_IF_ERROR(kubelet->StartServers());
  return kubelet;
}

FakeKubelet::FakeKubelet(std::string kubelet_dir, FakeKubeletOptions options)
    : kubelet_dir_(std::move(kubelet_dir)), options_(options) {
  service_ = std::make_unique<RegistrationService>(*this);
  devices_ = std::make_unique<DeviceManager>(*this);
}

FakeKubelet::~FakeKubelet() { StopServers(); }

std::string FakeKubelet::device_plugin_dir() const { return kubelet_dir_ + "/device-plugins"; }
std::string FakeKubelet::registration_socket() const {
  return device_plugin_dir() + "/" + kSocketName;
}
std::string FakeKubelet::pod_resources_socket() const {
  return kubelet_dir_ + "/pod-resources/" + kSocketName;
}
FakePodResources& FakeKubelet::pod_resources() { return *pod_resources_; }
std::string FakeKubelet::checkpoint_path() const { return device_plugin_dir() + "/" + kCheckpointName; }

// devicemanager.ManagerImpl.removeContents: every entry but the checkpoint and directories.
Status FakeKubelet::CleanPluginDir() {
  std::error_code ec;
  std::filesystem::create_directories(device_plugin_dir(), ec);
  if (ec) return InternalError(fmt::format("cannot create {}: {}", device_plugin_dir(), ec.message()));
  for (const auto& entry : std::filesystem::directory_iterator(device_plugin_dir(), ec)) {
    if (entry.path().filename() == kCheckpointName || entry.is_directory()) continue;
    std::filesystem::remove(entry.path(), ec);
  }
  std::ofstream(checkpoint_path()) << R"({"Data":{"PodDeviceEntries":null,"RegisteredDevices":{}},"Checksum":0})";
  return OkStatus();
}

Status FakeKubelet::StartServers() {
  std::error_code ec;
  for (const std::string& dir : {device_plugin_dir(), kubelet_dir_ + "/pod-resources"}) {
    std::filesystem::create_directories(dir, ec);
    if (ec) return InternalError(fmt::format("cannot create {}: {}", dir, ec.message()));
  }
  unlink(registration_socket().c_str());
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + registration_socket(), grpc::InsecureServerCredentials());
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (server_ == nullptr) {
    return UnavailableError(fmt::format("cannot serve Registration on {}", registration_socket()));
  }
  PHX_ASSIGN_OR_RETURN(pod_resources_, FakePodResources::Start(pod_resources_socket()));
  return OkStatus();
}

void FakeKubelet::StopServers() {
  if (server_ != nullptr) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    server_->Wait();
    server_.reset();
  }
  pod_resources_.reset();
  std::map<std::string, std::unique_ptr<DevicePluginClient>> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    dropped.swap(plugins_);
  }
  // `dropped` goes out of scope here, cancelling the ListAndWatch streams unlocked.
}

Status FakeKubelet::Restart(RestartMode mode) {
  StopServers();
  std::error_code ec;
  if (mode == RestartMode::kWipeDirectory) {
    PHX_RETURN_IF_ERROR(CleanPluginDir());
  } else {
    std::filesystem::remove(registration_socket(), ec);
    if (ec) return InternalError(fmt::format("cannot remove {}: {}", registration_socket(), ec.message()));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++generation_;
    accepted_since_restart_ = 0;
  }
  PHX_RETURN_IF_ERROR(StartServers());
  devices_->Republish();
  return OkStatus();
}

grpc::Status FakeKubelet::HandleRegister(const v1beta1::RegisterRequest& request) {
  Registration record{request, OkStatus(), generation()};
  grpc::Status answer = grpc::Status::OK;
  std::unique_ptr<DevicePluginClient> client;
  // kubelet returns plain Go errors, which reach the plugin as UNKNOWN.
  if (request.version() != kSupportedVersion) {
    answer = grpc::Status(
        grpc::StatusCode::UNKNOWN,
        fmt::format("requested API version \"{}\" is not supported by kubelet. Supported "
                    "versions are [\"{}\"]",
                    request.version(), kSupportedVersion));
  } else if (!IsExtendedResourceName(request.resource_name())) {
    answer = grpc::Status(grpc::StatusCode::UNKNOWN,
                          fmt::format("the ResourceName \"{}\" is invalid", request.resource_name()));
  } else {
    auto connected = DevicePluginClient::Connect(device_plugin_dir() + "/" + request.endpoint(),
                                                 options_.follow_list_and_watch,
                                                 options_.connect_timeout);
    if (connected.ok()) {
      client = std::move(connected).value();
    } else {
      answer = grpc::Status(grpc::StatusCode::UNKNOWN, connected.status().ToString());
    }
  }
  record.result = answer.ok() ? OkStatus()
                              : Status(static_cast<StatusCode>(answer.error_code()),
                                       answer.error_message());
  std::unique_ptr<DevicePluginClient> replaced;
  {
    std::lock_guard<std::mutex> lock(mu_);
    registrations_.push_back(std::move(record));
    if (client != nullptr) {
      replaced = std::move(plugins_[request.resource_name()]);
      plugins_[request.resource_name()] = std::move(client);
      ++accepted_since_restart_;
    }
    cv_.notify_all();
  }
  return answer;  // `replaced` (the previous plugin connection) is dropped unlocked
}

std::vector<Registration> FakeKubelet::registrations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return registrations_;
}

int FakeKubelet::generation() const {
  std::lock_guard<std::mutex> lock(mu_);
  return generation_;
}

::testing::AssertionResult FakeKubelet::WaitForRegistrations(
    int n, std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  if (cv_.wait_for(lock, timeout, [&] { return accepted_since_restart_ >= n; })) {
    return ::testing::AssertionSuccess();
  }
  auto failure = ::testing::AssertionFailure();
  failure << "wanted " << n << " accepted registrations within " << timeout.count()
          << " ms, got " << accepted_since_restart_ << "; requests so far:";
  for (const Registration& r : registrations_) {
    failure << " [" << r.request.resource_name() << " v=" << r.request.version() << " -> "
            << r.result << "]";
  }
  return failure;
}

DevicePluginClient* FakeKubelet::Plugin(const std::string& resource_name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = plugins_.find(resource_name);
  return it != plugins_.end() ? it->second.get() : nullptr;
}

}  // namespace phalanx::fake_kubelet
