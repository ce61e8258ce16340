#include "bench/core/kube/canned_objects.h"

#include <fmt/format.h>

namespace phalanx::kube::bench {

std::string PodJson(int i, int nodes) {
  const int job = i / 8;
  const int rank = i % 8;
  std::string env;
  for (int e = 0; e < 12; ++e) {
    env += fmt::format(R"({}{{"name":"TRAINING_ENV_VAR_{}","value":"value-{}-{}-some-longer-configuration-string"}})",
                       e ? "," : "", e, job, e);
  }
  return fmt::format(
      R"json({{"kind":"Pod","apiVersion":"v1","metadata":{{"name":"job-{job}-worker-{rank}","generateName":"job-{job}-worker-","namespace":"team-{ns}","uid":"6f1c{i:08x}-1f2e-4c3b-9a8d-{i:012x}","resourceVersion":"{rv}","creationTimestamp":"2026-11-20T10:00:00Z","labels":{{"phalanx.io/gang":"job-{job}-a1","phalanx.io/attempt":"1","training.phalanx.io/job":"job-{job}","training.phalanx.io/rank":"{rank}","app.kubernetes.io/managed-by":"phalanx-operator"}},"annotations":{{"phalanx.io/gang-min-members":"8","phalanx.io/topology":"phalanx.io/nvlink-domain","phalanx.io/devices":"{{\"trainer\":[\"GPU-3b2f0c1e-8d7a-4e6b-9c5d-{i:012x}\",\"GPU-9a8b7c6d-5e4f-4a3b-8c2d-{i:012x}\"]}}","kubectl.kubernetes.io/last-applied-configuration":"{{}}"}},"ownerReferences":[{{"apiVersion":"phalanx.io/v1alpha1","kind":"TrainingJob","name":"job-{job}","uid":"aa11bb22-cc33-dd44-ee55-{job:012x}","controller":true,"blockOwnerDeletion":true}}],"finalizers":["phalanx.io/checkpoint"],"managedFields":[{{"manager":"phalanx-operator","operation":"Update","apiVersion":"v1","time":"2026-11-20T10:00:00Z","fieldsType":"FieldsV1","fieldsV1":{{"f:metadata":{{"f:labels":{{".":{{}},"f:phalanx.io/gang":{{}},"f:phalanx.io/attempt":{{}}}},"f:ownerReferences":{{".":{{}}}}}},"f:spec":{{"f:containers":{{"k:{{\"name\":\"trainer\"}}":{{".":{{}},"f:env":{{}},"f:image":{{}},"f:resources":{{}}}}}}}}}}}},{{"manager":"kubelet","operation":"Update","apiVersion":"v1","time":"2026-11-20T10:01:00Z","fieldsType":"FieldsV1","fieldsV1":{{"f:status":{{"f:conditions":{{}},"f:containerStatuses":{{}},"f:phase":{{}},"f:podIP":{{}}}}}},"subresource":"status"}}]}},"spec":{{"volumes":[{{"name":"kube-api-access-{rank}","projected":{{"sources":[{{"serviceAccountToken":{{"expirationSeconds":3607,"path":"token"}}}},{{"configMap":{{"name":"kube-root-ca.crt","items":[{{"key":"ca.crt","path":"ca.crt"}}]}}}}],"defaultMode":420}}}},{{"name":"checkpoints","persistentVolumeClaim":{{"claimName":"ckpt-job-{job}"}}}}],"containers":[{{"name":"trainer","image":"registry.example.com/ml/trainer:2026.11.1","command":["torchrun"],"args":["--nnodes=8","--nproc-per-node=2","train.py","--config=/etc/job/config.yaml"],"ports":[{{"containerPort":29500,"protocol":"TCP"}}],"env":[{env}],"resources":{{"limits":{{"cpu":"16","memory":"128Gi","nvidia.com/gpu":"2"}},"requests":{{"cpu":"16","memory":"128Gi","nvidia.com/gpu":"2"}}}},"volumeMounts":[{{"name":"kube-api-access-{rank}","readOnly":true,"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}},{{"name":"checkpoints","mountPath":"/ckpt"}}],"readinessProbe":{{"httpGet":{{"path":"/healthz","port":8080,"scheme":"HTTP"}},"periodSeconds":10}},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}}],"restartPolicy":"Never","terminationGracePeriodSeconds":60,"dnsPolicy":"ClusterFirst","serviceAccountName":"default","nodeName":"gpu-node-{node}","schedulerName":"phalanx-scheduler","priorityClassName":"phalanx-standard","priority":1000,"tolerations":[{{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}},{{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}}]}},"status":{{"phase":"Running","conditions":[{{"type":"Initialized","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-11-20T10:00:05Z"}},{{"type":"Ready","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-11-20T10:01:00Z"}},{{"type":"ContainersReady","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-11-20T10:01:00Z"}},{{"type":"PodScheduled","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-11-20T10:00:01Z"}}],"hostIP":"10.1.{a}.{b}","podIP":"10.244.{a}.{b}","podIPs":[{{"ip":"10.244.{a}.{b}"}}],"startTime":"2026-11-20T10:00:05Z","containerStatuses":[{{"name":"trainer","state":{{"running":{{"startedAt":"2026-11-20T10:00:59Z"}}}},"lastState":{{}},"ready":true,"restartCount":0,"image":"registry.example.com/ml/trainer:2026.11.1","imageID":"registry.example.com/ml/trainer@sha256:{i:064x}","containerID":"containerd://{i:064x}","started":true}}],"qosClass":"Guaranteed"}}}})json",
      fmt::arg("job", job), fmt::arg("rank", rank), fmt::arg("ns", job % 50), fmt::arg("i", i),
      fmt::arg("rv", 1000 + i), fmt::arg("env", env), fmt::arg("node", (i / 4) % nodes),
      fmt::arg("a", (i / 250) % 250), fmt::arg("b", i % 250));
}

std::string NodeJson(int i) {
  std::string images;
  for (int k = 0; k < 25; ++k) {
    images += fmt::format(R"({}{{"names":["registry.example.com/ml/image-{}@sha256:{:064x}","registry.example.com/ml/image-{}:v{}"],"sizeBytes":{}}})",
                          k ? "," : "", k, k * 7919 + i, k, k, 1000000000 + k * 12345);
  }
  std::string links;
  for (int a = 0; a < 8; ++a) {
    links += a ? "," : "";
    links += "[";
    for (int b = 0; b < 8; ++b) links += fmt::format("{}{}", b ? "," : "", a == b ? 0 : 18);
    links += "]";
  }
  std::string gpus;
  for (int g = 0; g < 8; ++g) {
    gpus += fmt::format(R"({}{{\"index\":{},\"uuid\":\"GPU-{:08x}-0000-4000-8000-{:012x}\",\"product\":\"NVIDIA H100 80GB HBM3\",\"memoryMiB\":81559,\"numa\":{}}})",
                        g ? "," : "", g, i, g, g / 4);
  }
  return fmt::format(
      R"json({{"kind":"Node","apiVersion":"v1","metadata":{{"name":"gpu-node-{i}","uid":"0d0e{i:08x}-aaaa-bbbb-cccc-{i:012x}","resourceVersion":"{rv}","creationTimestamp":"2026-01-01T00:00:00Z","labels":{{"kubernetes.io/hostname":"gpu-node-{i}","kubernetes.io/os":"linux","kubernetes.io/arch":"amd64","node.kubernetes.io/instance-type":"p5.48xlarge","topology.kubernetes.io/zone":"zone-{z}","topology.kubernetes.io/rack":"rack-{rack}","phalanx.io/gpu.product":"NVIDIA-H100-80GB-HBM3","phalanx.io/gpu.count":"8","phalanx.io/gpu.memory-mib":"81559","phalanx.io/nvlink-domain":"nvl-{i}"}},"annotations":{{"node.alpha.kubernetes.io/ttl":"0","volumes.kubernetes.io/controller-managed-attach-detach":"true","phalanx.io/gpu-topology":"{{\"version\":1,\"gpus\":[{gpus}],\"links\":[{links}]}}","phalanx.io/gpu-state":"{{\"version\":1,\"devices\":{{}}}}"}}}},"spec":{{"podCIDR":"10.244.{z}.0/24","providerID":"aws:///zone-{z}/i-{i:017x}","taints":[{{"key":"nvidia.com/gpu","value":"present","effect":"NoSchedule"}}]}},"status":{{"capacity":{{"cpu":"192","ephemeral-storage":"3904652264Ki","hugepages-1Gi":"0","memory":"2097152000Ki","nvidia.com/gpu":"8","pods":"110"}},"allocatable":{{"cpu":"191","ephemeral-storage":"3598495009705","memory":"2090000000Ki","nvidia.com/gpu":"8","pods":"110"}},"conditions":[{{"type":"MemoryPressure","status":"False","lastHeartbeatTime":"2026-11-20T10:00:00Z","lastTransitionTime":"2026-01-01T00:00:00Z","reason":"KubeletHasSufficientMemory","message":"kubelet has sufficient memory available"}},{{"type":"DiskPressure","status":"False","lastHeartbeatTime":"2026-11-20T10:00:00Z","lastTransitionTime":"2026-01-01T00:00:00Z","reason":"KubeletHasNoDiskPressure","message":"kubelet has no disk pressure"}},{{"type":"PIDPressure","status":"False","lastHeartbeatTime":"2026-11-20T10:00:00Z","lastTransitionTime":"2026-01-01T00:00:00Z","reason":"KubeletHasSufficientPID","message":"kubelet has sufficient PID available"}},{{"type":"Ready","status":"True","lastHeartbeatTime":"2026-11-20T10:00:00Z","lastTransitionTime":"2026-01-01T00:00:00Z","reason":"KubeletReady","message":"kubelet is posting ready status"}}],"addresses":[{{"type":"InternalIP","address":"10.1.{z}.{b}"}},{{"type":"Hostname","address":"gpu-node-{i}"}}],"daemonEndpoints":{{"kubeletEndpoint":{{"Port":10250}}}},"nodeInfo":{{"machineID":"{i:032x}","systemUUID":"ec2{i:08x}","bootID":"{i:032x}","kernelVersion":"6.1.0-27-amd64","osImage":"Debian GNU/Linux 12 (bookworm)","containerRuntimeVersion":"containerd://1.7.22","kubeletVersion":"v1.29.6","kubeProxyVersion":"v1.29.6","operatingSystem":"linux","architecture":"amd64"}},"images":[{images}]}}}})json",
      fmt::arg("i", i), fmt::arg("rv", 500 + i), fmt::arg("z", i % 4), fmt::arg("rack", i / 40),
      fmt::arg("gpus", gpus), fmt::arg("links", links), fmt::arg("images", images), fmt::arg("b", i % 250));
}

}  // namespace phalanx::kube::bench
