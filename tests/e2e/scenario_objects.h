// Objects the scenarios create: TrainingJobs and plain GPU pods, as a user would write them.
#pragma once

#include <string>

#include "core/kube/client.h"

namespace phalanx::e2e {

struct JobShape {
  std::string name;
  int replicas = 2;
  int gpus_per_replica = 8;
  std::string priority_class = "phalanx-standard";
  std::string checkpoint_dir;  // "" = no checkpointing
  int flush_seconds = 0;
  int gang_timeout_seconds = 60;
  std::string queue;  // spec.scheduling.queue (a GpuQueue); "" = none
};

inline kube::Json TrainingJob(const JobShape& s) {
  kube::Json job = {
      {"apiVersion", "phalanx.io/v1alpha1"},
      {"kind", "TrainingJob"},
      {"metadata", {{"name", s.name}}},
      {"spec",
       {{"replicas", s.replicas},
        {"gpusPerReplica", s.gpus_per_replica},
        {"scheduling", {{"priorityClassName", s.priority_class}, {"gang", {{"timeoutSeconds", s.gang_timeout_seconds}}}}},
        {"failurePolicy", {{"maxFailures", 3}, {"backoff", {{"initialSeconds", 1}, {"maxSeconds", 2}}}}},
        {"template",
         {{"spec",
           {{"terminationGracePeriodSeconds", 30},
            {"containers", kube::Json::array({{{"name", "trainer"}, {"image", "trainer:e2e"}}})}}}}}}}};
  if (!s.queue.empty()) job["spec"]["scheduling"]["queue"] = s.queue;
  if (!s.checkpoint_dir.empty()) {
    job["spec"]["checkpoint"] = {{"dir", s.checkpoint_dir}, {"flushSeconds", s.flush_seconds}};
  }
  return job;
}

// A pod for the Phalanx scheduler asking for `gpus` whole GPUs.
inline kube::Json GpuPod(const std::string& name, int gpus, const std::string& priority_class) {
  kube::Json pod = {{"apiVersion", "v1"},
                    {"kind", "Pod"},
                    {"metadata", {{"name", name}, {"labels", {{"app", name}}}}},
                    {"spec",
                     {{"schedulerName", "phalanx-scheduler"},
                      {"restartPolicy", "Never"},
                      {"containers", kube::Json::array({{{"name", "main"},
                                                         {"image", "server:e2e"},
                                                         {"resources",
                                                          {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}},
                                                           {"requests", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}})}}}};
  if (!priority_class.empty()) pod["spec"]["priorityClassName"] = priority_class;
  return pod;
}

}  // namespace phalanx::e2e
