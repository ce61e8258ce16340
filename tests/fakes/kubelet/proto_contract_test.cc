// Guards the wire contract of proto/: kubelet matches on package, service and method names
// and on field numbers, so an accidental edit must fail here rather than on a node.

#include <string>

#include <gtest/gtest.h>

#include "proto/deviceplugin/v1beta1/api.pb.h"
#include "proto/podresources/v1/api.pb.h"

namespace phalanx::fake_kubelet {
namespace {

using google::protobuf::Descriptor;

int Field(const Descriptor* message, const std::string& name) {
  const auto* field = message->FindFieldByName(name);
  return field != nullptr ? field->number() : -1;
}

TEST(ProtoContractTest, DevicePluginServicesKeepUpstreamNames) {
  const auto* file = v1beta1::RegisterRequest::descriptor()->file();
  EXPECT_EQ(file->package(), "v1beta1");
  const auto* registration = file->FindServiceByName("Registration");
  ASSERT_NE(registration, nullptr);
  EXPECT_EQ(registration->full_name(), "v1beta1.Registration");
  EXPECT_NE(registration->FindMethodByName("Register"), nullptr);
  const auto* plugin = file->FindServiceByName("DevicePlugin");
  ASSERT_NE(plugin, nullptr);
  for (const char* method : {"GetDevicePluginOptions", "ListAndWatch", "GetPreferredAllocation",
                             "Allocate", "PreStartContainer"}) {
    EXPECT_NE(plugin->FindMethodByName(method), nullptr) << method;
  }
  EXPECT_TRUE(plugin->FindMethodByName("ListAndWatch")->server_streaming());
}

TEST(ProtoContractTest, DevicePluginFieldNumbersMatchUpstream) {
  EXPECT_EQ(Field(v1beta1::DevicePluginOptions::descriptor(), "pre_start_required"), 1);
  EXPECT_EQ(Field(v1beta1::DevicePluginOptions::descriptor(), "get_preferred_allocation_available"), 2);
  EXPECT_EQ(Field(v1beta1::RegisterRequest::descriptor(), "version"), 1);
  EXPECT_EQ(Field(v1beta1::RegisterRequest::descriptor(), "endpoint"), 2);
  EXPECT_EQ(Field(v1beta1::RegisterRequest::descriptor(), "resource_name"), 3);
  EXPECT_EQ(Field(v1beta1::RegisterRequest::descriptor(), "options"), 4);
  EXPECT_EQ(Field(v1beta1::Device::descriptor(), "ID"), 1);
  EXPECT_EQ(Field(v1beta1::Device::descriptor(), "health"), 2);
  EXPECT_EQ(Field(v1beta1::Device::descriptor(), "topology"), 3);
  EXPECT_EQ(Field(v1beta1::NUMANode::descriptor(), "ID"), 1);
  const auto* preferred = v1beta1::ContainerPreferredAllocationRequest::descriptor();
  EXPECT_EQ(Field(preferred, "available_deviceIDs"), 1);
  EXPECT_EQ(Field(preferred, "must_include_deviceIDs"), 2);
  EXPECT_EQ(Field(preferred, "allocation_size"), 3);
  EXPECT_EQ(Field(v1beta1::ContainerPreferredAllocationResponse::descriptor(), "deviceIDs"), 1);
  const auto* allocate = v1beta1::ContainerAllocateResponse::descriptor();
  EXPECT_EQ(Field(allocate, "envs"), 1);
  EXPECT_EQ(Field(allocate, "mounts"), 2);
  EXPECT_EQ(Field(allocate, "devices"), 3);
  EXPECT_EQ(Field(allocate, "annotations"), 4);
  EXPECT_EQ(Field(allocate, "cdi_devices"), 5);
  EXPECT_EQ(Field(v1beta1::DeviceSpec::descriptor(), "permissions"), 3);
  EXPECT_EQ(Field(v1beta1::Mount::descriptor(), "read_only"), 3);
  EXPECT_EQ(Field(v1beta1::CDIDevice::descriptor(), "name"), 1);
  EXPECT_EQ(Field(v1beta1::PreStartContainerRequest::descriptor(), "devices_ids"), 1);
}

TEST(ProtoContractTest, PodResourcesMatchesUpstream) {
  const auto* file = v1::PodResources::descriptor()->file();
  EXPECT_EQ(file->package(), "v1");
  const auto* lister = file->FindServiceByName("PodResourcesLister");
  ASSERT_NE(lister, nullptr);
  for (const char* method : {"List", "GetAllocatableResources", "Get"}) {
    EXPECT_NE(lister->FindMethodByName(method), nullptr) << method;
  }
  EXPECT_EQ(Field(v1::ContainerResources::descriptor(), "devices"), 2);
  EXPECT_EQ(Field(v1::ContainerResources::descriptor(), "dynamic_resources"), 5);
  EXPECT_EQ(Field(v1::ContainerDevices::descriptor(), "device_ids"), 2);
  EXPECT_EQ(Field(v1::ContainerDevices::descriptor(), "topology"), 3);
  EXPECT_EQ(Field(v1::GetPodResourcesRequest::descriptor(), "pod_name"), 1);
  EXPECT_EQ(Field(v1::GetPodResourcesRequest::descriptor(), "pod_namespace"), 2);
  EXPECT_EQ(Field(v1::DynamicResource::descriptor(), "claim_name"), 2);
  EXPECT_EQ(Field(v1::ClaimResource::descriptor(), "device_name"), 4);
  EXPECT_EQ(Field(v1::AllocatableResourcesResponse::descriptor(), "memory"), 3);
}

}  // namespace
}  // namespace phalanx::fake_kubelet
