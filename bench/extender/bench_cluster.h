// Synthetic clusters and requests for the extender benches (docs/architecture.md §6): DGX H100 nodes
// (8 GPUs, NVSwitch) named node-00000.., 32 per rack, 8 racks per zone, all in pool "H100";
// a realistic ~2.3 KB worker pod (the shape kube-scheduler sends, from the v1.26 fixtures);
// the same cluster as a `kubectl get nodes,pods -A -o json` List for --cluster-snapshot.
// Header-only bench code.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/json/json.h"
#include "core/topology/reference_machines.h"
#include "core/topology/topology_codec.h"
#include "extender/objects/k8s_objects.h"
#include "extender/verbs/wire.h"

namespace phalanx::extender::bench {

inline constexpr int kNodesPerRack = 32;
inline constexpr int kRacksPerZone = 8;

inline std::string NodeName(int i) { return fmt::format("node-{:05d}", i); }
inline std::string RackOf(int i) { return fmt::format("rack-{:03d}", i / kNodesPerRack); }
inline std::string ZoneOf(int i) { return fmt::format("zone-{:02d}", i / (kNodesPerRack * kRacksPerZone)); }

inline topology::NodeTopology NodeTopologyOf(int i) {
  auto topo = topology::MakeDgxH100Node();
  for (size_t g = 0; g < topo.gpus.size(); ++g) topo.gpus[g].uuid = GpuUuid(fmt::format("GPU-{}-{}", NodeName(i), g));
  return topo;
}

inline NodeInfo BenchNode(int i) {
  NodeInfo n;
  n.name = phalanx::NodeName(NodeName(i));
  n.labels["kubernetes.io/hostname"] = NodeName(i);
  n.labels["topology.kubernetes.io/rack"] = RackOf(i);
  n.labels["topology.kubernetes.io/zone"] = ZoneOf(i);
  n.labels[std::string(kProductLabel)] = "H100";
  n.topology = NodeTopologyOf(i);
  n.allocatable_gpus = 8;
  return n;
}

inline PodInfo BenchPod(const std::string& name, int gpus, const std::string& node = "") {
  PodInfo p;
  p.uid = PodUid("uid-" + name);
  p.ns = "bench";
  p.name = name;
  p.gpus = gpus;
  p.gpu_container = "main";
  p.node_name = node;
  p.phase = node.empty() ? PodPhase::kPending : PodPhase::kRunning;
  return p;
}

// A worker pod as kube-scheduler sends it (managedFields, projected token volume, tolerations).
inline std::string WorkerPodJson(const std::string& name, int gpus, const std::string& extra_labels = "") {
  return fmt::format(
      R"({{"metadata":{{"name":"{0}","namespace":"bench","uid":"uid-{0}","resourceVersion":"251","creationTimestamp":"2026-11-22T01:45:56Z",)"
      R"("labels":{{"app":"trainer"{2}}},"managedFields":[{{"manager":"phalanx-operator","operation":"Update","apiVersion":"v1","time":"2026-11-22T01:45:56Z","fieldsType":"FieldsV1",)"
      R"("fieldsV1":{{"f:spec":{{"f:containers":{{"k:{{\"name\":\"main\"}}":{{".":{{}},"f:image":{{}},"f:imagePullPolicy":{{}},"f:name":{{}},"f:resources":{{".":{{}},"f:limits":{{".":{{}},"f:nvidia.com/gpu":{{}}}},"f:requests":{{".":{{}},"f:cpu":{{}},"f:nvidia.com/gpu":{{}}}}}},"f:terminationMessagePath":{{}},"f:terminationMessagePolicy":{{}}}}}},"f:dnsPolicy":{{}},"f:enableServiceLinks":{{}},"f:restartPolicy":{{}},"f:schedulerName":{{}},"f:securityContext":{{}},"f:terminationGracePeriodSeconds":{{}}}}}}}}]}},)"
      R"("spec":{{"volumes":[{{"name":"kube-api-access-p5l9z","projected":{{"sources":[{{"serviceAccountToken":{{"expirationSeconds":3607,"path":"token"}}}},{{"configMap":{{"name":"kube-root-ca.crt","items":[{{"key":"ca.crt","path":"ca.crt"}}]}}}},)"
      R"({{"downwardAPI":{{"items":[{{"path":"namespace","fieldRef":{{"apiVersion":"v1","fieldPath":"metadata.namespace"}}}}]}}}}],"defaultMode":420}}}}],)"
      R"("containers":[{{"name":"main","image":"registry.invalid/trainer:1.0","resources":{{"limits":{{"nvidia.com/gpu":"{1}"}},"requests":{{"cpu":"8","nvidia.com/gpu":"{1}"}}}},)"
      R"("volumeMounts":[{{"name":"kube-api-access-p5l9z","readOnly":true,"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}}],"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}}],)"
      R"("restartPolicy":"Never","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"default","serviceAccount":"default","securityContext":{{}},)"
      R"("schedulerName":"phalanx-scheduler","tolerations":[{{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}},{{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}}],)"
      R"("priority":0,"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority"}},"status":{{"phase":"Pending","qosClass":"Burstable"}}}})",
      name, gpus, extra_labels);
}

// ExtenderArgs with `names` candidate node names (nodeCacheCapable: "Nodes":null).
inline std::string FilterBody(const std::string& pod_json, int names, int first_node = 0) {
  std::string body = "{\"Pod\":" + pod_json + ",\"Nodes\":null,\"NodeNames\":[";
  body.reserve(body.size() + static_cast<size_t>(names) * 14);
  for (int i = 0; i < names; ++i) {
    if (i) body += ',';
    body += '"';
    body += NodeName(first_node + i);
    body += '"';
  }
  body += "]}";
  return body;
}

// The cluster as a kubectl List: `nodes` DGX H100 nodes with the device plugin's topology
// annotation, `bound_pods` 1-GPU pods running on them (round robin), `cpu_pods` pods that
// request no GPU, `pending_pods` 1-GPU pods waiting to be bound (PendingPodName(i), for bind
// load), and one gang `gang` of `gang_members` gated 1-GPU members (min = all).
struct SnapshotShape {
  int nodes = 5000;
  int bound_pods = 0;
  int cpu_pods = 0;
  int pending_pods = 0;
  std::string gang;
  int gang_members = 0;
};

inline std::string PendingPodName(int i) { return fmt::format("pending-{:06d}", i); }

inline std::string SnapshotJson(const SnapshotShape& shape) {
  std::string out = "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[";
  bool first = true;
  auto item = [&](const json::Json& j) {
    if (!first) out += ',';
    first = false;
    out += json::Dump(j);
  };
  for (int i = 0; i < shape.nodes; ++i) {
    auto topo = topology::EncodeTopology(NodeTopologyOf(i));
    item({{"kind", "Node"},
          {"apiVersion", "v1"},
          {"metadata",
           {{"name", NodeName(i)},
            {"labels",
             {{"kubernetes.io/hostname", NodeName(i)},
              {"topology.kubernetes.io/rack", RackOf(i)},
              {"topology.kubernetes.io/zone", ZoneOf(i)},
              {std::string(kProductLabel), "H100"}}},
            {"annotations", {{"phalanx.io/gpu-topology", topo.ok() ? *topo : std::string()}}}}},
          {"status",
           {{"allocatable", {{"nvidia.com/gpu", "8"}, {"cpu", "224"}}},
            {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}});
  }
  auto pod = [&](const std::string& name, int gpus, const std::string& node, const json::Json& labels,
                 const json::Json& annotations, bool gated) {
    json::Json container = {{"name", "main"}, {"image", "registry.invalid/trainer:1.0"}};
    if (gpus > 0) {
      container["resources"] = {{"requests", {{"nvidia.com/gpu", std::to_string(gpus)}, {"cpu", "8"}}},
                                {"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}};
    } else {
      container["resources"] = {{"requests", {{"cpu", "1"}}}};
    }
    json::Json p = {{"kind", "Pod"},
                    {"apiVersion", "v1"},
                    {"metadata", {{"name", name}, {"namespace", "bench"}, {"uid", "uid-" + name}, {"labels", labels},
                      {"annotations", annotations}}},
                    {"spec", {{"schedulerName", "phalanx-scheduler"}, {"containers", {container}}}},
                    {"status", {{"phase", node.empty() ? "Pending" : "Running"}}}};
    if (!node.empty()) p["spec"]["nodeName"] = node;
    if (gated) p["spec"]["schedulingGates"] = {{{"name", "phalanx.io/gang"}}};
    item(p);
  };
  for (int i = 0; i < shape.bound_pods; ++i) {
    pod(fmt::format("running-{:06d}", i), 1, NodeName(i % shape.nodes), json::Json::object(), json::Json::object(),
        false);
  }
  for (int i = 0; i < shape.cpu_pods; ++i) {
    pod(fmt::format("cpu-{:06d}", i), 0, "", json::Json::object(), json::Json::object(), false);
  }
  for (int i = 0; i < shape.pending_pods; ++i) {
    pod(PendingPodName(i), 1, "", json::Json::object(), json::Json::object(), false);
  }
  for (int i = 0; i < shape.gang_members; ++i) {
    json::Json labels = {{"phalanx.io/gang", shape.gang}};
    json::Json annotations = {{"phalanx.io/gang-min-members", std::to_string(shape.gang_members)},
                              {"phalanx.io/gang-timeout-seconds", "600"}};
    pod(fmt::format("{}-{:05d}", shape.gang, i), 1, "", labels, annotations, true);
  }
  out += "]}";
  return out;
}

}  // namespace phalanx::extender::bench
