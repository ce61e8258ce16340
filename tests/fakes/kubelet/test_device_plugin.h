// TestDevicePlugin: a minimal device plugin for exercising the fake kubelet (callback API:
// ListAndWatch is a reactor that pushes a new complete list whenever SetDevices is called;
// GetPreferredAllocation takes must-include devices, then available ones in order;
// Allocate answers NVIDIA_VISIBLE_DEVICES). Serves until destroyed. Header-only test code.
//
// Note for real plugins: a gRPC server unlinks its unix socket path on shutdown, so an old
// server must be destroyed before a new one binds the same path.
// Thread-safety: all methods are thread-safe.
#pragma once

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "proto/deviceplugin/v1beta1/api.grpc.pb.h"

namespace phalanx::fake_kubelet {

inline v1beta1::Device MakeDevice(const std::string& id, const std::string& health, int numa) {
  v1beta1::Device d;
  d.set_id(id);
  d.set_health(health);
  d.mutable_topology()->add_nodes()->set_id(numa);
  return d;
}

class TestDevicePlugin final : public v1beta1::DevicePlugin::CallbackService {
 public:
  TestDevicePlugin(std::string socket_path, std::vector<v1beta1::Device> devices)
      : socket_path_(std::move(socket_path)), state_(std::make_shared<State>()) {
    state_->devices = std::move(devices);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + socket_path_, grpc::InsecureServerCredentials());
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  ~TestDevicePlugin() override {
    if (server_ == nullptr) return;
    server_->Shutdown(std::chrono::system_clock::now());
    server_->Wait();
  }
  bool serving() const { return server_ != nullptr; }

  // Registers with kubelet the way a plugin does.
  grpc::Status Register(const std::string& kubelet_socket, const std::string& version,
                        const std::string& resource,
                        std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    auto channel = grpc::CreateChannel("unix:" + kubelet_socket, grpc::InsecureChannelCredentials());
    auto stub = v1beta1::Registration::NewStub(channel);
    v1beta1::RegisterRequest request;
    request.set_version(version);
    request.set_endpoint(std::filesystem::path(socket_path_).filename());
    request.set_resource_name(resource);
    request.mutable_options()->set_get_preferred_allocation_available(true);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + timeout);
    v1beta1::Empty empty;
    return stub->Register(&context, request, &empty);
  }

  // Replaces the device list and streams it to every open ListAndWatch.
  void SetDevices(std::vector<v1beta1::Device> devices) {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->devices = std::move(devices);
    v1beta1::ListAndWatchResponse response;
    for (const auto& d : state_->devices) *response.add_devices() = d;
    // Under the lock so no reactor is deleted meanwhile (OnDone takes it); Push never blocks.
    for (Reactor* r : state_->reactors) r->Push(response);
  }

  grpc::ServerUnaryReactor* GetDevicePluginOptions(grpc::CallbackServerContext* context,
                                                   const v1beta1::Empty*,
                                                   v1beta1::DevicePluginOptions* options) override {
    options->set_get_preferred_allocation_available(true);
    auto* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  grpc::ServerWriteReactor<v1beta1::ListAndWatchResponse>* ListAndWatch(
      grpc::CallbackServerContext*, const v1beta1::Empty*) override {
    auto* reactor = new Reactor(state_);
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->reactors.insert(reactor);
    v1beta1::ListAndWatchResponse response;
    for (const auto& d : state_->devices) *response.add_devices() = d;
    reactor->Push(response);
    return reactor;
  }

  // Prefers the must-include devices, then the available ones in order.
  grpc::ServerUnaryReactor* GetPreferredAllocation(
      grpc::CallbackServerContext* context, const v1beta1::PreferredAllocationRequest* request,
      v1beta1::PreferredAllocationResponse* response) override {
    for (const auto& c : request->container_requests()) {
      auto* out = response->add_container_responses();
      for (const auto& id : c.must_include_deviceids()) *out->add_deviceids() = id;
      for (const auto& id : c.available_deviceids()) {
        if (out->deviceids_size() >= c.allocation_size()) break;
        if (std::find(out->deviceids().begin(), out->deviceids().end(), id) ==
            out->deviceids().end()) {
          *out->add_deviceids() = id;
        }
      }
    }
    auto* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  grpc::ServerUnaryReactor* Allocate(grpc::CallbackServerContext* context,
                                     const v1beta1::AllocateRequest* request,
                                     v1beta1::AllocateResponse* response) override {
    for (const auto& c : request->container_requests()) {
      std::string ids;
      for (const auto& id : c.devices_ids()) ids += (ids.empty() ? "" : ",") + id;
      (*response->add_container_responses()->mutable_envs())["NVIDIA_VISIBLE_DEVICES"] = ids;
    }
    auto* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

 private:
  class Reactor;
  struct State {
    std::mutex mu;
    std::vector<v1beta1::Device> devices;
    std::set<Reactor*> reactors;
  };

  class Reactor final : public grpc::ServerWriteReactor<v1beta1::ListAndWatchResponse> {
   public:
    explicit Reactor(std::shared_ptr<State> state) : state_(std::move(state)) {}

    // Sends `response` now, or after the write in flight (only the newest list is kept).
    void Push(const v1beta1::ListAndWatchResponse& response) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (finished_) return;
        if (writing_) {
          pending_ = response;
          return;
        }
        writing_ = true;
        current_ = response;
      }
      StartWrite(&current_);
    }

    void OnWriteDone(bool ok) override {
      bool write = false;
      bool finish = false;
      {
        std::lock_guard<std::mutex> lock(mu_);
        writing_ = false;
        if (!ok) {
          finish = !finished_;
          finished_ = true;
        } else if (pending_ && !finished_) {
          current_ = *pending_;
          pending_.reset();
          writing_ = write = true;
        }
      }
      if (write) StartWrite(&current_);
      if (finish) Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "write failed"));
    }

    void OnCancel() override {
      bool finish = false;
      {
        std::lock_guard<std::mutex> lock(mu_);
        finish = !finished_;
        finished_ = true;
      }
      if (finish) Finish(grpc::Status::CANCELLED);
    }

    void OnDone() override {
      {
        std::lock_guard<std::mutex> lock(state_->mu);
        state_->reactors.erase(this);
      }
      delete this;
    }

   private:
    std::shared_ptr<State> state_;
    std::mutex mu_;
    bool writing_ = false;
    bool finished_ = false;
    v1beta1::ListAndWatchResponse current_;
    std::optional<v1beta1::ListAndWatchResponse> pending_;
  };

  std::string socket_path_;
  std::shared_ptr<State> state_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace phalanx::fake_kubelet
