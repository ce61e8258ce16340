// Filter request/reply for the HTTP benchmark (see filter_payload.h).
#include "bench/core/http/filter_payload.h"

#include <nlohmann/json.hpp>

#include <cstdio>

namespace phalanx::bench {
namespace {

constexpr std::string_view kReplyTail = R"(],"FailedNodes":{},"FailedAndUnresolvableNodes":{},"Error":""})";

}  // namespace

std::string MakePodJson() {
  // Shaped after a TrainingJob worker pod as kube-scheduler sends it (managedFields stripped).
  return R"({"metadata":{"name":"llama-70b-pretrain-worker-17","generateName":"llama-70b-pretrain-worker-",)"
         R"("namespace":"ml-research","uid":"6f1c2a0e-9b7d-4c3e-8a55-2f0d4b1e9c71","resourceVersion":"81723645",)"
         R"("creationTimestamp":"2026-11-20T08:14:22Z","labels":{"app.kubernetes.io/name":"llama-70b-pretrain",)"
         R"("app.kubernetes.io/component":"worker","phalanx.io/training-job":"llama-70b-pretrain",)"
         R"("phalanx.io/replica-index":"17","phalanx.io/attempt":"3","team":"foundation-models"},)"
         R"("annotations":{"phalanx.io/gang":"ml-research/llama-70b-pretrain","phalanx.io/gang-min-members":"32",)"
         R"("phalanx.io/gang-timeout-seconds":"600","phalanx.io/tier":"production",)"
         R"("phalanx.io/topology-level":"rack","kubectl.kubernetes.io/default-container":"trainer"},)"
         R"("ownerReferences":[{"apiVersion":"phalanx.io/v1alpha1","kind":"TrainingJob","name":"llama-70b-pretrain",)"
         R"("uid":"0b8e4d2c-6a1f-4e7b-9c3d-5a2f8e1b7d40","controller":true,"blockOwnerDeletion":true}]},)"
         R"("spec":{"schedulerName":"phalanx-scheduler","priorityClassName":"phalanx-production","priority":100000,)"
         R"("restartPolicy":"Never","terminationGracePeriodSeconds":300,"serviceAccountName":"trainer",)"
         R"("hostname":"llama-70b-pretrain-worker-17","subdomain":"llama-70b-pretrain",)"
         R"("containers":[{"name":"trainer","image":"registry.example.com/ml/llama-train:2026.11.3",)"
         R"("command":["torchrun"],"args":["--nnodes=32","--nproc-per-node=8","train.py","--config=/etc/job/config.yaml"],)"
         R"("env":[{"name":"WORLD_SIZE","value":"256"},{"name":"RANK","value":"136"},)"
         R"({"name":"MASTER_ADDR","value":"llama-70b-pretrain-worker-0.llama-70b-pretrain"},)"
         R"({"name":"MASTER_PORT","value":"29500"},{"name":"PHALANX_ATTEMPT","value":"3"},)"
         R"({"name":"PHALANX_CHECKPOINT_DIR","value":"/checkpoints/llama-70b-pretrain"},)"
         R"({"name":"NCCL_IB_HCA","value":"mlx5_0,mlx5_1,mlx5_2,mlx5_3"}],)"
         R"("resources":{"limits":{"nvidia.com/gpu":"8","cpu":"96","memory":"1600Gi","rdma/ib":"4"},)"
         R"("requests":{"nvidia.com/gpu":"8","cpu":"96","memory":"1600Gi","rdma/ib":"4"}},)"
         R"("volumeMounts":[{"name":"checkpoints","mountPath":"/checkpoints"},{"name":"dshm","mountPath":"/dev/shm"},)"
         R"({"name":"job-config","mountPath":"/etc/job","readOnly":true}]},)"
         R"({"name":"log-shipper","image":"registry.example.com/infra/log-shipper:1.9.2",)"
         R"("resources":{"limits":{"cpu":"500m","memory":"256Mi"},"requests":{"cpu":"100m","memory":"128Mi"}}}],)"
         R"("volumes":[{"name":"checkpoints","persistentVolumeClaim":{"claimName":"llama-70b-checkpoints"}},)"
         R"({"name":"dshm","emptyDir":{"medium":"Memory","sizeLimit":"512Gi"}},)"
         R"({"name":"job-config","configMap":{"name":"llama-70b-pretrain-config"}}],)"
         R"("tolerations":[{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"},)"
         R"({"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}],)"
         R"("affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[)"
         R"({"matchExpressions":[{"key":"phalanx.io/gpu.product","operator":"In","values":["NVIDIA-H100-80GB-HBM3"]}]}]}}},)"
         R"("schedulingGates":[]},)"
         R"("status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False",)"
         R"("lastTransitionTime":"2026-11-20T08:14:22Z","reason":"Unschedulable",)"
         R"("message":"0/5000 nodes are available: waiting for gang members."}],"qosClass":"Burstable"}})";
}

std::string MakeFilterRequest(int node_count) {
  std::string out = R"({"Pod":)" + MakePodJson() + R"(,"Nodes":null,"NodeNames":[)";
  char name[32];
  for (int i = 0; i < node_count; ++i) {
    std::snprintf(name, sizeof(name), "%s\"gpu-node-%04d\"", i == 0 ? "" : ",", i);
    out += name;
  }
  out += "]}";
  return out;
}

Result<std::string> FilterReplyNlohmann(std::string_view request) {
  try {
    const nlohmann::json body = nlohmann::json::parse(request);
    const nlohmann::json& pod = body.at("Pod");
    // What the extender reads before deciding: identity and GPU request.
    const auto& name = pod.at("metadata").at("name").get_ref<const std::string&>();
    const auto& gpus = pod.at("spec").at("containers").at(0).at("resources").at("limits").at(
        "nvidia.com/gpu").get_ref<const std::string&>();
    if (name.empty() || gpus.empty()) return InvalidArgumentError("pod without name or GPUs");
    nlohmann::json reply;
    reply["NodeNames"] = body.at("NodeNames");
    reply["FailedNodes"] = nlohmann::json::object();
    reply["FailedAndUnresolvableNodes"] = nlohmann::json::object();
    reply["Error"] = "";
    return reply.dump();
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgumentError(std::string("filter request: ") + e.what());
  }
}

Result<std::string> FilterReplySimdjson(json::FastJsonParser& parser, std::string_view request) {
  PHX_ASSIGN_OR_RETURN(simdjson::ondemand::document * doc, parser.Iterate(request));
  std::string reply;
  reply.reserve(request.size() / 2 + 128);
  reply += R"({"NodeNames":[)";
  simdjson::ondemand::object root;
  if (auto err = doc->get_object().get(root)) return json::SimdjsonError(err, "filter request");
  bool have_pod = false;
  for (auto field : root) {
    std::string_view key;
    if (auto err = field.unescaped_key().get(key)) return json::SimdjsonError(err, "filter key");
    if (key == "Pod") {
      std::string_view name, gpus;
      auto pod = field.value();
      if (auto err = pod["metadata"]["name"].get_string().get(name)) {
        return json::SimdjsonError(err, "Pod.metadata.name");
      }
      auto containers = pod["spec"]["containers"];
      for (auto container : containers) {
        if (auto err = container["resources"]["limits"]["nvidia.com/gpu"].get_string().get(gpus)) {
          return json::SimdjsonError(err, "Pod.spec.containers[0].resources.limits");
        }
        break;
      }
      have_pod = !name.empty() && !gpus.empty();
    } else if (key == "NodeNames") {
      bool first = true;
      for (auto element : field.value().get_array()) {
        // Copy each name's JSON token verbatim (already quoted and escaped): no decode/encode.
        simdjson::ondemand::json_type type;
        if (auto err = element.type().get(type)) return json::SimdjsonError(err, "NodeNames");
        if (type != simdjson::ondemand::json_type::string) {
          return InvalidArgumentError("NodeNames: element is not a string");
        }
        std::string_view token;
        if (auto err = element.raw_json_token().get(token)) return json::SimdjsonError(err, "NodeNames");
        while (!token.empty() && (token.back() == ' ' || token.back() == '\n' ||
                                  token.back() == '\t' || token.back() == '\r')) {
          token.remove_suffix(1);
        }
        if (!first) reply.push_back(',');
        first = false;
        reply.append(token);
      }
    }
  }
  if (!have_pod) return InvalidArgumentError("pod without name or GPUs");
  reply += kReplyTail;
  return reply;
}

}  // namespace phalanx::bench
