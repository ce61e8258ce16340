// Smoke tests of the fake kubelet against a trivial device plugin (test_device_plugin.h).

#include "tests/fakes/kubelet/fake_kubelet.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "tests/fakes/kubelet/test_device_plugin.h"

namespace phalanx::fake_kubelet {
namespace {

using std::chrono::milliseconds;

// Only catches hangs; everything here completes in milliseconds.
constexpr milliseconds kDeadline{10'000};
constexpr const char* kResource = "example.com/gpu";

class FakeKubeletTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/phx-kl-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    plugin_.reset();
    kubelet_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  void StartKubelet(FakeKubeletOptions options = {}) {
    auto kubelet = FakeKubelet::Start(dir_, options);
    ASSERT_TRUE(kubelet.ok()) << kubelet.status();
    kubelet_ = std::move(kubelet).value();
  }

  void StartPlugin(std::vector<v1beta1::Device> devices) {
    // The old server must go first: a gRPC server unlinks its unix socket path on
    // shutdown, which would delete the new server's socket.
    plugin_.reset();
    plugin_ = std::make_unique<TestDevicePlugin>(kubelet_->device_plugin_dir() + "/test.sock",
                                           std::move(devices));
    ASSERT_TRUE(plugin_->serving());
  }

  std::string dir_;
  std::unique_ptr<FakeKubelet> kubelet_;
  std::unique_ptr<TestDevicePlugin> plugin_;
};

TEST_F(FakeKubeletTest, RegisteredPluginIsFollowedThroughListAndWatch) {
  StartKubelet();
  EXPECT_EQ(kubelet_->registration_socket(), dir_ + "/device-plugins/kubelet.sock");
  EXPECT_TRUE(std::filesystem::exists(kubelet_->registration_socket()));
  StartPlugin({MakeDevice("GPU-a", "Healthy", 0), MakeDevice("GPU-b", "Healthy", 1)});

  grpc::Status s = plugin_->Register(kubelet_->registration_socket(), "v1beta1", kResource);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_TRUE(kubelet_->WaitForRegistrations(1, kDeadline));
  auto registrations = kubelet_->registrations();
  ASSERT_EQ(registrations.size(), 1u);
  EXPECT_EQ(registrations[0].request.endpoint(), "test.sock");
  EXPECT_TRUE(registrations[0].result.ok());

  DevicePluginClient* client = kubelet_->Plugin(kResource);
  ASSERT_NE(client, nullptr);
  EXPECT_TRUE(client->options().get_preferred_allocation_available());
  ASSERT_TRUE(client->WaitForDevices([](const auto& d) { return d.size() == 2; }, kDeadline));
  EXPECT_EQ(client->devices()[1].topology().nodes(0).id(), 1);

  // A health change is a new complete list.
  plugin_->SetDevices({MakeDevice("GPU-a", "Healthy", 0), MakeDevice("GPU-b", "Unhealthy", 1)});
  ASSERT_TRUE(client->WaitForDevices(
      [](const auto& d) { return d.size() == 2 && d[1].health() == "Unhealthy"; }, kDeadline));
  EXPECT_GE(client->updates(), 2);

  v1beta1::PreferredAllocationRequest preferred;
  auto* want = preferred.add_container_requests();
  want->add_available_deviceids("GPU-a");
  want->add_available_deviceids("GPU-b");
  want->add_must_include_deviceids("GPU-b");
  want->set_allocation_size(1);
  auto chosen = client->GetPreferredAllocation(preferred, kDeadline);
  ASSERT_TRUE(chosen.ok()) << chosen.status();
  ASSERT_EQ(chosen->container_responses_size(), 1);
  EXPECT_EQ(chosen->container_responses(0).deviceids(0), "GPU-b");

  v1beta1::AllocateRequest allocate;
  allocate.add_container_requests()->add_devices_ids("GPU-a");
  auto allocated = client->Allocate(allocate, kDeadline);
  ASSERT_TRUE(allocated.ok()) << allocated.status();
  EXPECT_EQ(allocated->container_responses(0).envs().at("NVIDIA_VISIBLE_DEVICES"), "GPU-a");
}

TEST_F(FakeKubeletTest, WrongVersionIsRejectedLikeKubelet) {
  StartKubelet();
  StartPlugin({});
  grpc::Status s = plugin_->Register(kubelet_->registration_socket(), "v1alpha", kResource);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNKNOWN);
  EXPECT_EQ(s.error_message(),
            "requested API version \"v1alpha\" is not supported by kubelet. Supported versions "
            "are [\"v1beta1\"]");
  auto registrations = kubelet_->registrations();
  ASSERT_EQ(registrations.size(), 1u);
  EXPECT_EQ(registrations[0].result.code(), StatusCode::kUnknown);
  EXPECT_EQ(kubelet_->Plugin(kResource), nullptr);
}

TEST_F(FakeKubeletTest, InvalidResourceNameIsRejected) {
  StartKubelet();
  StartPlugin({});
  grpc::Status s = plugin_->Register(kubelet_->registration_socket(), "v1beta1", "gpu");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNKNOWN);
  EXPECT_EQ(s.error_message(), "the ResourceName \"gpu\" is invalid");
}

TEST(IsExtendedResourceNameTest, FollowsKubeletRules) {
  EXPECT_TRUE(IsExtendedResourceName("nvidia.com/gpu"));
  EXPECT_TRUE(IsExtendedResourceName("nvidia.com/mig-1g.10gb"));
  EXPECT_FALSE(IsExtendedResourceName("gpu"));                      // no domain
  EXPECT_FALSE(IsExtendedResourceName("kubernetes.io/gpu"));        // native namespace
  EXPECT_FALSE(IsExtendedResourceName("requests.nvidia.com/gpu"));  // quota prefix
  EXPECT_FALSE(IsExtendedResourceName("Nvidia.com/gpu"));           // domain not lower case
  EXPECT_FALSE(IsExtendedResourceName("nvidia.com/-gpu"));          // bad name start
  EXPECT_FALSE(IsExtendedResourceName("nvidia.com/a/b"));
}

TEST_F(FakeKubeletTest, RegistrationFailsWhenPluginIsNotServing) {
  FakeKubeletOptions options;
  options.connect_timeout = milliseconds(200);
  StartKubelet(options);
  auto channel = grpc::CreateChannel("unix:" + kubelet_->registration_socket(),
                                     grpc::InsecureChannelCredentials());
  auto stub = v1beta1::Registration::NewStub(channel);
  v1beta1::RegisterRequest request;
  request.set_version("v1beta1");
  request.set_endpoint("nobody-home.sock");
  request.set_resource_name(kResource);
  grpc::ClientContext context;
  v1beta1::Empty empty;
  grpc::Status s = stub->Register(&context, request, &empty);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNKNOWN);
  EXPECT_NE(s.error_message().find("nobody-home.sock not reachable within 200 ms"),
            std::string::npos)
      << s.error_message();
}

TEST_F(FakeKubeletTest, RestartDeletesSocketsAndAcceptsReRegistration) {
  StartKubelet();
  StartPlugin({MakeDevice("GPU-a", "Healthy", 0)});
  ASSERT_TRUE(plugin_->Register(kubelet_->registration_socket(), "v1beta1", kResource).ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations(1, kDeadline));
  const std::string plugin_socket = kubelet_->device_plugin_dir() + "/test.sock";
  ASSERT_TRUE(std::filesystem::exists(plugin_socket));

  ASSERT_TRUE(kubelet_->Restart().ok());
  EXPECT_EQ(kubelet_->generation(), 1);
  // kubelet wiped the directory: the plugin's socket is gone, kubelet.sock is new.
  EXPECT_FALSE(std::filesystem::exists(plugin_socket));
  EXPECT_TRUE(std::filesystem::exists(kubelet_->registration_socket()));
  EXPECT_EQ(kubelet_->Plugin(kResource), nullptr);

  // The plugin serves a fresh socket and registers again.
  StartPlugin({MakeDevice("GPU-a", "Healthy", 0)});
  ASSERT_TRUE(plugin_->Register(kubelet_->registration_socket(), "v1beta1", kResource).ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations(1, kDeadline));
  ASSERT_NE(kubelet_->Plugin(kResource), nullptr);
  EXPECT_TRUE(kubelet_->Plugin(kResource)->WaitForDevices(
      [](const auto& d) { return d.size() == 1; }, kDeadline));
  auto registrations = kubelet_->registrations();
  ASSERT_EQ(registrations.size(), 2u);
  EXPECT_EQ(registrations[1].generation, 1);
}

// Kubelet's device manager on start: every file in device-plugins/ but its checkpoint goes
// (sockets, a lock file kept there), directories stay.
TEST_F(FakeKubeletTest, StartAndRestartCleanEveryFileButTheCheckpoint) {
  const std::string plugins = dir_ + "/device-plugins";
  std::filesystem::create_directories(plugins + "/sub");
  std::ofstream(plugins + "/phalanx-device-plugin.lock") << "";
  StartKubelet();
  EXPECT_FALSE(std::filesystem::exists(plugins + "/phalanx-device-plugin.lock"));
  EXPECT_TRUE(std::filesystem::is_directory(plugins + "/sub"));
  EXPECT_TRUE(std::filesystem::exists(kubelet_->checkpoint_path()));
  std::ofstream(plugins + "/other.lock") << "";
  ASSERT_TRUE(kubelet_->Restart().ok());
  EXPECT_FALSE(std::filesystem::exists(plugins + "/other.lock"));
  EXPECT_TRUE(std::filesystem::exists(kubelet_->checkpoint_path()));
  EXPECT_TRUE(std::filesystem::exists(kubelet_->registration_socket()));
}

// Kubelet's admission: one pod at a time; per container (init containers first)
// GetPreferredAllocation over the free healthy devices, then Allocate of the preferred ones;
// the pod in pod-resources; too few devices rejects it and frees what it had.
TEST_F(FakeKubeletTest, DeviceManagerAdmitsContainerByContainerLikeKubelet) {
  StartKubelet();
  StartPlugin({MakeDevice("GPU-a", "Healthy", 0), MakeDevice("GPU-b", "Healthy", 0), MakeDevice("GPU-c", "Unhealthy", 0)});
  ASSERT_TRUE(plugin_->Register(kubelet_->registration_socket(), "v1beta1", kResource).ok());
  ASSERT_TRUE(kubelet_->Plugin(kResource)->WaitForDevices([](const auto& d) { return d.size() == 3; }, kDeadline));
  PodSpec pod{.ns = "ml", .name = "p", .uid = "u1",
              .containers = {{.name = "main", .requests = {{kResource, 1}}},
                             {.name = "setup", .init = true, .requests = {{kResource, 1}}},
                             {.name = "cpu-only"}}};
  auto admitted = kubelet_->devices().Admit(pod);
  ASSERT_TRUE(admitted.ok()) << admitted.status();
  std::vector<std::string> seq;
  for (const auto& c : kubelet_->devices().calls()) seq.push_back(c.container + ":" + c.method);
  EXPECT_EQ(seq, (std::vector<std::string>{"setup:GetPreferredAllocation", "setup:Allocate",
                                           "main:GetPreferredAllocation", "main:Allocate"}));
  EXPECT_EQ(admitted->devices["setup"][kResource], std::vector<std::string>{"GPU-a"});
  EXPECT_EQ(admitted->devices["main"][kResource], std::vector<std::string>{"GPU-b"});
  EXPECT_EQ(admitted->responses["main"].envs().at("NVIDIA_VISIBLE_DEVICES"), "GPU-b");
  // No healthy device left: rejected, nothing kept.
  auto rejected = kubelet_->devices().Admit({.ns = "ml", .name = "q", .uid = "u2",
                                             .containers = {{.name = "main", .requests = {{kResource, 1}}}}});
  ASSERT_FALSE(rejected.ok());
  EXPECT_NE(rejected.status().message().find("UnexpectedAdmissionError"), std::string::npos);
  EXPECT_EQ(kubelet_->devices().admitted().size(), 1u);
  kubelet_->devices().Release("u1");
  EXPECT_TRUE(kubelet_->devices().Admit({.ns = "ml", .name = "q", .uid = "u2",
                                         .containers = {{.name = "main", .requests = {{kResource, 2}}}}})
                  .ok());
}

TEST_F(FakeKubeletTest, StoppedPluginEndsTheStream) {
  StartKubelet();
  StartPlugin({MakeDevice("GPU-a", "Healthy", 0)});
  ASSERT_TRUE(plugin_->Register(kubelet_->registration_socket(), "v1beta1", kResource).ok());
  DevicePluginClient* client = kubelet_->Plugin(kResource);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->WaitForUpdates(1, kDeadline));
  plugin_.reset();
  ASSERT_TRUE(client->WaitForStreamEnd(kDeadline));
  EXPECT_FALSE(client->stream_status().ok());
}

TEST_F(FakeKubeletTest, PodResourcesAnswersWhatTheTestSet) {
  StartKubelet();
  EXPECT_EQ(kubelet_->pod_resources_socket(), dir_ + "/pod-resources/kubelet.sock");
  kubelet_->pod_resources().SetPods(
      {FakePodResources::MakePod("ml", "trainer-0", "main", "nvidia.com/gpu", {"GPU-a", "GPU-b"})});

  auto channel = grpc::CreateChannel("unix:" + kubelet_->pod_resources_socket(),
                                     grpc::InsecureChannelCredentials());
  auto stub = v1::PodResourcesLister::NewStub(channel);
  {
    grpc::ClientContext context;
    v1::ListPodResourcesResponse list;
    ASSERT_TRUE(stub->List(&context, v1::ListPodResourcesRequest(), &list).ok());
    ASSERT_EQ(list.pod_resources_size(), 1);
    const auto& devices = list.pod_resources(0).containers(0).devices(0);
    EXPECT_EQ(devices.resource_name(), "nvidia.com/gpu");
    EXPECT_EQ(devices.device_ids_size(), 2);
  }
  {
    grpc::ClientContext context;
    v1::GetPodResourcesRequest request;
    request.set_pod_namespace("ml");
    request.set_pod_name("missing");
    v1::GetPodResourcesResponse got;
    grpc::Status s = stub->Get(&context, request, &got);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNKNOWN);
    EXPECT_EQ(s.error_message(), "pod missing in namespace ml not found");
  }
  {
    grpc::ClientContext context;
    v1::GetPodResourcesRequest request;
    request.set_pod_namespace("ml");
    request.set_pod_name("trainer-0");
    v1::GetPodResourcesResponse got;
    ASSERT_TRUE(stub->Get(&context, request, &got).ok());
    EXPECT_EQ(got.pod_resources().containers(0).name(), "main");
  }
  kubelet_->pod_resources().FailNext(
      grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "rejected by rate limit"));
  {
    grpc::ClientContext context;
    v1::ListPodResourcesResponse list;
    grpc::Status s = stub->List(&context, v1::ListPodResourcesRequest(), &list);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  }
  EXPECT_EQ(kubelet_->pod_resources().list_calls(), 2);
  EXPECT_EQ(kubelet_->pod_resources().get_calls(), 2);
}

}  // namespace
}  // namespace phalanx::fake_kubelet
