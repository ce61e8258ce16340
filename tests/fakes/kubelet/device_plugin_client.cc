#include "tests/fakes/kubelet/device_plugin_client.h"

#include <sstream>

#include <fmt/format.h>

#include "tests/fakes/kubelet/grpc_status.h"

namespace phalanx::fake_kubelet {
namespace {

void SetDeadline(grpc::ClientContext& context, std::chrono::milliseconds timeout) {
  context.set_deadline(std::chrono::system_clock::now() + timeout);
}

}  // namespace

Result<std::unique_ptr<DevicePluginClient>> DevicePluginClient::Connect(
    const std::string& socket_path, bool follow, std::chrono::milliseconds timeout) {
  auto channel = grpc::CreateChannel("unix:" + socket_path, grpc::InsecureChannelCredentials());
  // kubelet dials with WithBlock and a timeout: the plugin must already be serving.
  if (!channel->WaitForConnected(std::chrono::system_clock::now() + timeout)) {
    return DeadlineExceededError(
        fmt::format("device plugin socket {} not reachable within {} ms", socket_path,
                    timeout.count()));
  }
  std::unique_ptr<DevicePluginClient> client(new DevicePluginClient(socket_path, channel));
  PHX_ASSIGN_OR_RETURN(client->options_, client->GetDevicePluginOptions(timeout));
  if (follow) client->stream_thread_ = std::thread([c = client.get()] { c->Follow(); });
  return client;
}

DevicePluginClient::DevicePluginClient(std::string socket_path,
                                       std::shared_ptr<grpc::Channel> channel)
    : socket_path_(std::move(socket_path)),
      channel_(std::move(channel)),
      stub_(v1beta1::DevicePlugin::NewStub(channel_)) {}

DevicePluginClient::~DevicePluginClient() {
  stream_context_.TryCancel();
  if (stream_thread_.joinable()) stream_thread_.join();
}

void DevicePluginClient::Follow() {
  v1beta1::Empty request;
  auto reader = stub_->ListAndWatch(&stream_context_, request);
  v1beta1::ListAndWatchResponse response;
  while (reader->Read(&response)) {
    std::lock_guard<std::mutex> lock(mu_);
    devices_.assign(response.devices().begin(), response.devices().end());
    ++updates_;
    cv_.notify_all();
  }
  const grpc::Status status = reader->Finish();
  std::lock_guard<std::mutex> lock(mu_);
  ended_ = true;
  stream_status_ = FromGrpc(status);
  cv_.notify_all();
}

Result<v1beta1::DevicePluginOptions> DevicePluginClient::GetDevicePluginOptions(
    std::chrono::milliseconds timeout) {
  grpc::ClientContext context;
  SetDeadline(context, timeout);
  v1beta1::DevicePluginOptions options;
  const grpc::Status s = stub_->GetDevicePluginOptions(&context, v1beta1::Empty(), &options);
  if (!s.ok()) return FromGrpc(s).WithContext("GetDevicePluginOptions");
  return options;
}

Result<v1beta1::PreferredAllocationResponse> DevicePluginClient::GetPreferredAllocation(
    const v1beta1::PreferredAllocationRequest& request, std::chrono::milliseconds timeout) {
  grpc::ClientContext context;
  SetDeadline(context, timeout);
  v1beta1::PreferredAllocationResponse response;
  const grpc::Status s = stub_->GetPreferredAllocation(&context, request, &response);
  if (!s.ok()) return FromGrpc(s).WithContext("GetPreferredAllocation");
  return response;
}

Result<v1beta1::AllocateResponse> DevicePluginClient::Allocate(
    const v1beta1::AllocateRequest& request, std::chrono::milliseconds timeout) {
  grpc::ClientContext context;
  SetDeadline(context, timeout);
  v1beta1::AllocateResponse response;
  const grpc::Status s = stub_->Allocate(&context, request, &response);
  if (!s.ok()) return FromGrpc(s).WithContext("Allocate");
  return response;
}

Result<v1beta1::PreStartContainerResponse> DevicePluginClient::PreStartContainer(
    const v1beta1::PreStartContainerRequest& request, std::chrono::milliseconds timeout) {
  grpc::ClientContext context;
  SetDeadline(context, timeout);
  v1beta1::PreStartContainerResponse response;
  const grpc::Status s = stub_->PreStartContainer(&context, request, &response);
  if (!s.ok()) return FromGrpc(s).WithContext("PreStartContainer");
  return response;
}

DevicePluginClient::Devices DevicePluginClient::devices() const {
  std::lock_guard<std::mutex> lock(mu_);
  return devices_;
}

int DevicePluginClient::updates() const {
  std::lock_guard<std::mutex> lock(mu_);
  return updates_;
}

bool DevicePluginClient::stream_ended() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ended_;
}

Status DevicePluginClient::stream_status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stream_status_;
}

std::string DevicePluginClient::DescribeLocked() const {
  std::ostringstream out;
  out << socket_path_ << ": " << updates_ << " ListAndWatch updates, stream "
      << (ended_ ? "ended (" + stream_status_.ToString() + ")" : "open") << ", last list [";
  for (size_t i = 0; i < devices_.size(); ++i) {
    out << (i ? ", " : "") << devices_[i].id() << "=" << devices_[i].health();
  }
  out << "]";
  return out.str();
}

::testing::AssertionResult DevicePluginClient::WaitForDevices(
    const std::function<bool(const Devices&)>& pred, std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  if (cv_.wait_for(lock, timeout, [&] { return pred(devices_); })) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << "device list condition not met within " << timeout.count() << " ms; "
         << DescribeLocked();
}

::testing::AssertionResult DevicePluginClient::WaitForUpdates(
    int n, std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  if (cv_.wait_for(lock, timeout, [&] { return updates_ >= n; })) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "wanted " << n << " updates within " << timeout.count()
                                       << " ms; " << DescribeLocked();
}

::testing::AssertionResult DevicePluginClient::WaitForStreamEnd(
    std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  if (cv_.wait_for(lock, timeout, [&] { return ended_; })) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "ListAndWatch still open after " << timeout.count()
                                       << " ms; " << DescribeLocked();
}

}  // namespace phalanx::fake_kubelet
