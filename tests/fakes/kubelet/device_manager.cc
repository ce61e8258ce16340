#include "tests/fakes/kubelet/device_manager.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "tests/fakes/kubelet/fake_kubelet.h"

namespace phalanx::fake_kubelet {
namespace {

constexpr std::chrono::seconds kRpcTimeout{10};

// Kubelet's order: initContainers, then containers, each in spec order.
std::vector<const ContainerSpec*> AdmissionOrder(const PodSpec& pod) {
  std::vector<const ContainerSpec*> out;
  for (bool init : {true, false}) {
    for (const auto& c : pod.containers) {
      if (c.init == init) out.push_back(&c);
    }
  }
  return out;
}

}  // namespace

Result<AdmittedPod> DeviceManager::Admit(const PodSpec& pod) {
  std::lock_guard<std::mutex> admitting(admit_mu_);
  AdmittedPod out{.pod = pod};
  const auto record = [&](const std::string& container, const std::string& resource, const char* method) {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back({pod.ns + "/" + pod.name, container, resource, method});
  };
  for (const ContainerSpec* c : AdmissionOrder(pod)) {
    for (const auto& [resource, n] : c->requests) {
      if (n <= 0) continue;
      DevicePluginClient* plugin = kubelet_.Plugin(resource);
      if (plugin == nullptr) {
        return FailedPreconditionError(fmt::format("UnexpectedAdmissionError: can't allocate unregistered device {}",
                                                   resource));
      }
      std::vector<std::string> available;
      {
        std::lock_guard<std::mutex> lock(mu_);
        std::set<std::string> held;
        for (const auto& [uid, a] : admitted_) {
          for (const auto& [cn, by_resource] : a.devices) {
            for (const auto& id : by_resource.count(resource) ? by_resource.at(resource) : std::vector<std::string>{}) {
              held.insert(id);
            }
          }
        }
        for (const auto& [cn, by_resource] : out.devices) {
          if (auto it = by_resource.find(resource); it != by_resource.end()) held.insert(it->second.begin(), it->second.end());
        }
        for (const auto& d : plugin->devices()) {
          if (d.health() == "Healthy" && !held.count(d.id())) available.push_back(d.id());
        }
      }
      std::sort(available.begin(), available.end());
      if (static_cast<int>(available.size()) < n) {
        return ResourceExhaustedError(fmt::format(
            "UnexpectedAdmissionError: requested number of devices unavailable for {}. Requested: {}, Available: {}",
            resource, n, available.size()));
      }
      std::vector<std::string> chosen;
      if (plugin->options().get_preferred_allocation_available()) {
        v1beta1::PreferredAllocationRequest request;
        auto* cr = request.add_container_requests();
        for (const auto& id : available) cr->add_available_deviceids(id);
        cr->set_allocation_size(n);
        record(c->name, resource, "GetPreferredAllocation");
        auto preferred = plugin->GetPreferredAllocation(request, kRpcTimeout);
        if (!preferred.ok()) {
          return Status(preferred.status().code(),
                        "UnexpectedAdmissionError: GetPreferredAllocation: " + preferred.status().message());
        }
        auto& answered = out.preferred[c->name][resource];
        if (preferred->container_responses_size() == 1) {
          for (const auto& id : preferred->container_responses(0).deviceids()) {
            answered.push_back(id);
            // Kubelet keeps only preferred devices that are available.
            if (std::find(available.begin(), available.end(), id) != available.end() &&
                std::find(chosen.begin(), chosen.end(), id) == chosen.end() && static_cast<int>(chosen.size()) < n) {
              chosen.push_back(id);
            }
          }
        }
      }
      for (const auto& id : available) {  // kubelet's fallback: any available device
        if (static_cast<int>(chosen.size()) >= n) break;
        if (std::find(chosen.begin(), chosen.end(), id) == chosen.end()) chosen.push_back(id);
      }
      v1beta1::AllocateRequest request;
      auto* cr = request.add_container_requests();
      for (const auto& id : chosen) cr->add_devices_ids(id);
      record(c->name, resource, "Allocate");
      auto allocated = plugin->Allocate(request, kRpcTimeout);
      if (!allocated.ok()) {
        return Status(allocated.status().code(), "UnexpectedAdmissionError: Allocate: " + allocated.status().message());
      }
      if (allocated->container_responses_size() == 1) out.responses[c->name] = allocated->container_responses(0);
      out.devices[c->name][resource] = chosen;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  admitted_[pod.uid] = out;
  PublishPodResourcesLocked();
  return out;
}

void DeviceManager::Release(const std::string& uid) {
  std::lock_guard<std::mutex> lock(mu_);
  if (admitted_.erase(uid) > 0) PublishPodResourcesLocked();
}

void DeviceManager::Republish() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!admitted_.empty()) PublishPodResourcesLocked();
}

std::vector<AdmissionCall> DeviceManager::calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_;
}

std::map<std::string, AdmittedPod> DeviceManager::admitted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return admitted_;
}

void DeviceManager::PublishPodResourcesLocked() {
  std::vector<v1::PodResources> list;
  for (const auto& [uid, a] : admitted_) {
    v1::PodResources p;
    p.set_namespace_(a.pod.ns);
    p.set_name(a.pod.name);
    for (const auto& [container, by_resource] : a.devices) {
      auto* c = p.add_containers();
      c->set_name(container);
      for (const auto& [resource, ids] : by_resource) {
        auto* d = c->add_devices();
        d->set_resource_name(resource);
        for (const auto& id : ids) d->add_device_ids(id);
      }
    }
    list.push_back(std::move(p));
  }
  kubelet_.pod_resources().SetPods(std::move(list));
}

}  // namespace phalanx::fake_kubelet
