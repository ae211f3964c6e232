// Builders for TrainingJob JSON, and its pods' facts, used across the operator's unit tests.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "trainingjob/api/parse.h"

namespace kubedist::trainingjob::testing {

inline nlohmann::json example_job_json() {
  return nlohmann::json::parse(R"({
    "apiVersion": "kubedist.io/v1alpha1", "kind": "TrainingJob",
    "metadata": {"name": "resnet", "namespace": "team-a", "uid": "uid-1", "generation": 1,
                 "resourceVersion": "10"},
    "spec": {
      "replicas": 4,
      "template": {"metadata": {"labels": {"app": "train"}},
                   "spec": {"containers": [{"name": "trainer", "image": "pytorch:2.4",
                                            "command": ["python", "train.py"], "args": ["--epochs", "10"],
                                            "env": [{"name": "FOO", "value": "bar"},
                                                    {"name": "MASTER_PORT", "value": "1"}],
                                            "resources": {"limits": {"nvidia.com/gpu": 8}}}]}}
    }
  })");
}

inline TrainingJob job_from(const nlohmann::json& j) {
  auto r = parse_training_job(j);
  if (!r) throw std::runtime_error(r.error().message);
  return *r;
}

inline TrainingJob example_job() { return job_from(example_job_json()); }

// Pod resnet-node-<rank> of the example job (uid pod-<rank>) in this phase; a Running one is ready.
inline PodFacts example_pod(int rank, const std::string& phase) {
  PodFacts p;
  p.name = "resnet-node-" + std::to_string(rank);
  p.uid = "pod-" + std::to_string(rank);
  p.owner_uid = "uid-1";
  p.rank = rank;
  p.phase = phase;
  p.ready = phase == "Running";
  return p;
}

}  // namespace kubedist::trainingjob::testing
