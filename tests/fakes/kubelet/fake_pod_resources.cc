#include "tests/fakes/kubelet/fake_pod_resources.h"

#include <unistd.h>

#include <fmt/format.h>

namespace phalanx::fake_kubelet {

class FakePodResources::Service final : public v1::PodResourcesLister::Service {
 public:
  explicit Service(std::string socket_path) : socket_path_(std::move(socket_path)) {}

  grpc::Status List(grpc::ServerContext*, const v1::ListPodResourcesRequest*,
                    v1::ListPodResourcesResponse* response) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++list_calls_;
    if (auto failure = TakeFailureLocked()) return *failure;
    for (const v1::PodResources& pod : pods_) *response->add_pod_resources() = pod;
    return grpc::Status::OK;
  }

  grpc::Status Get(grpc::ServerContext*, const v1::GetPodResourcesRequest* request,
                   v1::GetPodResourcesResponse* response) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++get_calls_;
    if (auto failure = TakeFailureLocked()) return *failure;
    for (const v1::PodResources& pod : pods_) {
      if (pod.name() == request->pod_name() && pod.namespace_() == request->pod_namespace()) {
        *response->mutable_pod_resources() = pod;
        return grpc::Status::OK;
      }
    }
    // kubelet returns a plain Go error here, which gRPC sends as UNKNOWN.
    return grpc::Status(grpc::StatusCode::UNKNOWN,
                        fmt::format("pod {} in namespace {} not found", request->pod_name(),
                                    request->pod_namespace()));
  }

  grpc::Status GetAllocatableResources(grpc::ServerContext*,
                                       const v1::AllocatableResourcesRequest*,
                                       v1::AllocatableResourcesResponse* response) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto failure = TakeFailureLocked()) return *failure;
    *response = allocatable_;
    return grpc::Status::OK;
  }

  std::optional<grpc::Status> TakeFailureLocked() {
    std::optional<grpc::Status> failure;
    failure.swap(fail_next_);
    return failure;
  }

  const std::string socket_path_;
  mutable std::mutex mu_;
  std::vector<v1::PodResources> pods_;
  v1::AllocatableResourcesResponse allocatable_;
  std::optional<grpc::Status> fail_next_;
  int list_calls_ = 0;
  int get_calls_ = 0;
};

Result<std::unique_ptr<FakePodResources>> FakePodResources::Start(const std::string& socket_path) {
  unlink(socket_path.c_str());  // a stale socket from a previous run would make bind fail
  auto service = std::make_unique<Service>(socket_path);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket_path, grpc::InsecureServerCredentials());
  builder.RegisterService(service.get());
  std::unique_ptr<FakePodResources> fake(new FakePodResources(std::move(service)));
  fake->server_ = builder.BuildAndStart();
  if (fake->server_ == nullptr) {
    return UnavailableError(fmt::format("cannot serve pod-resources on {}", socket_path));
  }
  return fake;
}

FakePodResources::FakePodResources(std::unique_ptr<Service> service)
    : service_(std::move(service)) {}

FakePodResources::~FakePodResources() {
  if (server_ != nullptr) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    server_->Wait();
  }
}

const std::string& FakePodResources::socket_path() const { return service_->socket_path_; }

void FakePodResources::SetPods(std::vector<v1::PodResources> pods) {
  std::lock_guard<std::mutex> lock(service_->mu_);
  service_->pods_ = std::move(pods);
}

void FakePodResources::SetAllocatable(v1::AllocatableResourcesResponse allocatable) {
  std::lock_guard<std::mutex> lock(service_->mu_);
  service_->allocatable_ = std::move(allocatable);
}

void FakePodResources::FailNext(grpc::Status status) {
  std::lock_guard<std::mutex> lock(service_->mu_);
  service_->fail_next_ = std::move(status);
}

int FakePodResources::list_calls() const {
  std::lock_guard<std::mutex> lock(service_->mu_);
  return service_->list_calls_;
}

int FakePodResources::get_calls() const {
  std::lock_guard<std::mutex> lock(service_->mu_);
  return service_->get_calls_;
}

v1::PodResources FakePodResources::MakePod(const std::string& ns, const std::string& name,
                                           const std::string& container,
                                           const std::string& resource_name,
                                           const std::vector<std::string>& device_ids) {
  v1::PodResources pod;
  pod.set_name(name);
  pod.set_namespace_(ns);
  v1::ContainerResources* c = pod.add_containers();
  c->set_name(container);
  v1::ContainerDevices* devices = c->add_devices();
  devices->set_resource_name(resource_name);
  for (const std::string& id : device_ids) devices->add_device_ids(id);
  return pod;
}

}  // namespace phalanx::fake_kubelet
