// Builders for operator unit tests: a valid TrainingJob JSON and helpers to evolve pods.
#pragma once

#include <string>

#include "core/json/json.h"
#include "operator/api/training_job_codec.h"

namespace phalanx::op::testing {

inline json::Json ValidJobJson(int replicas = 2, int gpus = 8) {
  return json::Json::parse(R"({
    "apiVersion": "phalanx.io/v1alpha1", "kind": "TrainingJob",
    "metadata": {"name": "llama", "namespace": "ml", "uid": "uid-1", "generation": 1,
                 "resourceVersion": "10"},
    "spec": {
      "replicas": )" + std::to_string(replicas) + R"(, "gpusPerReplica": )" + std::to_string(gpus) + R"(,
      "template": {"metadata": {"labels": {"team": "nlp"}},
                   "spec": {"terminationGracePeriodSeconds": 120,
                            "containers": [{"name": "trainer", "image": "ghcr.io/x/trainer:1",
                                            "env": [{"name": "FOO", "value": "bar"}]}]}},
      "scheduling": {"priorityClassName": "phalanx-high", "gang": {"timeoutSeconds": 60},
                     "topology": {"level": "phalanx.io/nvlink-domain", "mode": "required"}},
      "checkpoint": {"dir": "/ckpt", "flushSeconds": 60, "expectedIntervalSeconds": 600},
      "failurePolicy": {"maxFailures": 2, "maxDisruptions": 5, "backoff": {"initialSeconds": 10, "maxSeconds": 40}},
      "runPolicy": {"cleanPodPolicy": "Running"}
    }})");
}

inline TrainingJob DecodeOrDie(const json::Json& j) {
  auto r = DecodeTrainingJob(j);
  if (!r.ok()) throw std::runtime_error(r.status().ToString());
  return *r;
}

}  // namespace phalanx::op::testing
