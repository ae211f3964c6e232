#include "trainingjob/api/parse.h"

#include <gtest/gtest.h>

#include "test_jobs.h"

namespace kubedist::trainingjob {
namespace {

using nlohmann::json;
using testing::example_job_json;

TEST(ParseSpec, AppliesProductDefaults) {
  json j = example_job_json();
  j["spec"].erase("replicas");
  auto job = testing::job_from(j);
  ASSERT_TRUE(job.spec_error.empty()) << job.spec_error;
  EXPECT_EQ(job.spec.replicas, 1);
  EXPECT_EQ(job.spec.min_replicas, 1);
  EXPECT_EQ(job.spec.max_replicas, 1);
  EXPECT_EQ(job.spec.nproc_per_node.str(), "auto");
  EXPECT_EQ(job.spec.master_port, 29500);
  EXPECT_EQ(job.spec.max_restarts, 3);
  EXPECT_EQ(job.spec.backoff_limit, 6);
  EXPECT_EQ(job.spec.restart_policy, RestartPolicy::kOnFailure);
  EXPECT_FALSE(job.spec.suspend);
  EXPECT_FALSE(job.spec.active_deadline_seconds.has_value());
  EXPECT_FALSE(job.spec.ttl_seconds_after_finished.has_value());
  EXPECT_EQ(job.spec.clean_pod_policy, CleanPodPolicy::kRunning);
  EXPECT_EQ(job.spec.trainer_index, 0);
}

TEST(ParseSpec, MinAndMaxDefaultToReplicas) {
  auto job = testing::example_job();
  EXPECT_EQ(job.spec.min_replicas, 4);
  EXPECT_EQ(job.spec.max_replicas, 4);
}

TEST(ParseSpec, ReadsEveryField) {
  json j = example_job_json();
  j["spec"].update(json::parse(R"({"minReplicas": 2, "maxReplicas": 8, "nprocPerNode": 4, "masterPort": 1234,
    "maxRestarts": 0, "backoffLimit": 2, "restartPolicy": "ExitCode", "suspend": true,
    "activeDeadlineSeconds": 60, "ttlSecondsAfterFinished": 0, "cleanPodPolicy": "All"})"));
  auto job = testing::job_from(j);
  ASSERT_TRUE(job.spec_error.empty()) << job.spec_error;
  EXPECT_EQ(job.spec.min_replicas, 2);
  EXPECT_EQ(job.spec.max_replicas, 8);
  EXPECT_EQ(job.spec.nproc_per_node.count, 4);
  EXPECT_EQ(job.spec.master_port, 1234);
  EXPECT_EQ(job.spec.max_restarts, 0);
  EXPECT_EQ(job.spec.backoff_limit, 2);
  EXPECT_EQ(job.spec.restart_policy, RestartPolicy::kExitCode);
  EXPECT_TRUE(job.spec.suspend);
  EXPECT_EQ(job.spec.active_deadline_seconds, 60);
  EXPECT_EQ(job.spec.ttl_seconds_after_finished, 0);
  EXPECT_EQ(job.spec.clean_pod_policy, CleanPodPolicy::kAll);
}

TEST(ParseSpec, ReadsTheTopologyKeyOfEveryLabelKeyForm) {
  EXPECT_EQ(testing::example_job().spec.topology_key, "");
  const std::vector<std::string> keys = {"rack", "topology.kubernetes.io/zone", "nvidia.com/gpu.clique",
                                         "kubedist.io/test-rack", "A_b.c-9",
                                         std::string(253, 'p') + "/" + std::string(63, 'n')};
  for (const std::string& key : keys) {
    json j = example_job_json();
    j["spec"]["placement"]["topologyKey"] = key;
    auto job = testing::job_from(j);
    ASSERT_TRUE(job.spec_error.empty()) << key << ": " << job.spec_error;
    EXPECT_EQ(job.spec.topology_key, key);
  }
}

TEST(ParseSpec, ReadsTheCheckpointVolumeAndRefusesOneTheTrainerMountsAlready) {
  json j = example_job_json();
  j["spec"]["checkpoint"] = {{"claimName", "ckpt"}, {"everySteps", 500}, {"saveTimeoutSeconds", 60}};
  auto job = testing::job_from(j);
  ASSERT_TRUE(job.spec_error.empty()) << job.spec_error;
  ASSERT_TRUE(job.spec.checkpoint.has_value());
  EXPECT_EQ(*job.spec.checkpoint, (CheckpointSpec{"ckpt", "/checkpoints", 500, 60, 2}));
  j["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] = {{{"name", "data"}, {"mountPath", "/checkpoints"}}};
  EXPECT_EQ(testing::job_from(j).spec_error,
            "spec.checkpoint.mountPath: the trainer container mounts volume \"data\" at /checkpoints already; give the "
            "checkpoints another path");
  j["spec"]["checkpoint"]["mountPath"] = "/ckpt";
  EXPECT_EQ(testing::job_from(j).spec_error, "");
  j["spec"]["template"]["spec"]["volumes"] = {{{"name", "kubedist-checkpoint"}, {"emptyDir", json::object()}}};
  EXPECT_EQ(testing::job_from(j).spec_error,
            "spec.template.spec.volumes: the name kubedist-checkpoint is the operator's (spec.checkpoint's volume)");
}

TEST(ParseSpec, AcceptsEveryNprocForm) {
  struct Case {
    json value;
    std::string str;
  };
  for (const auto& c : std::vector<Case>{{json(2), "2"}, {json("3"), "3"}, {json("auto"), "auto"},
                                         {json("gpu"), "gpu"}, {json("cpu"), "cpu"}}) {
    json j = example_job_json();
    j["spec"]["nprocPerNode"] = c.value;
    auto job = testing::job_from(j);
    EXPECT_TRUE(job.spec_error.empty()) << c.value << ": " << job.spec_error;
    EXPECT_EQ(job.spec.nproc_per_node.str(), c.str);
  }
}

TEST(ParseSpec, PicksTheContainerNamedTrainerOrTheOnlyOne) {
  json j = example_job_json();
  auto& cs = j["spec"]["template"]["spec"]["containers"];
  cs[0]["name"] = "main";  // one container: the trainer, whatever its name
  EXPECT_EQ(testing::job_from(j).spec.trainer_index, 0);
  cs[0]["name"] = "trainer";
  cs.insert(cs.begin(), json{{"name", "sidecar"}, {"image", "x"}});
  EXPECT_EQ(testing::job_from(j).spec.trainer_index, 1);
}

TEST(ParseSpec, RefusesSeveralContainersNoneNamedTrainer) {
  json j = example_job_json();
  auto& cs = j["spec"]["template"]["spec"]["containers"];
  cs[0]["name"] = "main";
  cs.push_back(json{{"name", "sidecar"}, {"image", "x"}, {"command", json::array({"sleep", "1"})}});
  auto job = testing::job_from(j);
  EXPECT_EQ(job.spec_error,
            "spec.template.spec.containers: 2 containers and none named \"trainer\": name the one that runs under the "
            "launcher \"trainer\"");
}

// Every spec the schema cannot (or did not) refuse yields a clear message naming the field.
TEST(ParseSpec, RejectsBadSpecsWithAClearMessage) {
  struct Case {
    std::string name;
    json patch;  // JSON merge patch applied to the example's spec
    std::string message;
  };
  const std::vector<Case> cases = {
      {"replicas zero", {{"replicas", 0}}, "spec.replicas: must be between 1 and"},
      {"spares negative", {{"spares", -1}}, "spec.spares: must be between 0 and 64"},
      {"spares too many", {{"spares", 65}}, "spec.spares: must be between 0 and 64"},
      {"spares not a number", {{"spares", "two"}}, "spec.spares: must be an integer, got \"two\""},
      {"spares of a one-node job", {{"replicas", 1}, {"spares", 1}},
       "spec.spares: a spare takes the place of a lost node other than node 0 (which hosts the rendezvous), so it "
       "needs a job of 2 or more nodes (replicas or maxReplicas)"},
      {"replicas string", {{"replicas", "four"}}, "spec.replicas: must be an integer, got \"four\""},
      {"replicas fractional", {{"replicas", 1.5}}, "spec.replicas: must be an integer"},
      {"min above replicas", {{"minReplicas", 5}}, "minReplicas <= replicas <= maxReplicas"},
      {"max below replicas", {{"maxReplicas", 2}}, "minReplicas <= replicas <= maxReplicas"},
      {"min zero", {{"minReplicas", 0}}, "spec.minReplicas: must be between 1"},
      {"nproc zero", {{"nprocPerNode", 0}}, "spec.nprocPerNode: must be an integer from 1 to 1024, auto, gpu or cpu, got 0"},
      {"nproc word", {{"nprocPerNode", "many"}}, "spec.nprocPerNode"},
      {"nproc bool", {{"nprocPerNode", true}}, "spec.nprocPerNode"},
      {"port zero", {{"masterPort", 0}}, "spec.masterPort: must be between 1 and 65534"},
      {"port too high", {{"masterPort", 65535}}, "spec.masterPort"},
      {"negative maxRestarts", {{"maxRestarts", -1}}, "spec.maxRestarts"},
      {"negative backoffLimit", {{"backoffLimit", -1}}, "spec.backoffLimit"},
      {"bad restartPolicy", {{"restartPolicy", "Always"}}, "spec.restartPolicy: must be OnFailure, Never or ExitCode"},
      {"bad cleanPodPolicy", {{"cleanPodPolicy", "Some"}}, "spec.cleanPodPolicy: must be Running, All or None"},
      {"suspend string", {{"suspend", "yes"}}, "spec.suspend: must be true or false"},
      {"scheduling not object", {{"scheduling", "gang"}}, "spec.scheduling: must be an object, got \"gang\""},
      {"gang string", {{"scheduling", {{"gang", "yes"}}}}, "spec.scheduling.gang: must be true or false, got \"yes\""},
      {"placement not object", {{"placement", "spread"}}, "spec.placement: must be an object, got \"spread\""},
      {"bad onePodPerNode", {{"placement", {{"onePodPerNode", "Always"}}}},
       "spec.placement.onePodPerNode: must be Preferred, Required or None, got \"Always\""},
      {"onePodPerNode bool", {{"placement", {{"onePodPerNode", true}}}}, "spec.placement.onePodPerNode: must be"},
      {"topologyKey number", {{"placement", {{"topologyKey", 7}}}},
       "spec.placement.topologyKey: must be a node label key (such as topology.kubernetes.io/zone), got 7"},
      {"topologyKey empty", {{"placement", {{"topologyKey", ""}}}}, "spec.placement.topologyKey: must be a node"},
      {"topologyKey spaces", {{"placement", {{"topologyKey", "my rack"}}}}, "spec.placement.topologyKey: must be"},
      {"topologyKey empty prefix", {{"placement", {{"topologyKey", "/rack"}}}}, "spec.placement.topologyKey: must be"},
      {"topologyKey empty name", {{"placement", {{"topologyKey", "example.com/"}}}},
       "spec.placement.topologyKey: must be"},
      {"topologyKey two slashes", {{"placement", {{"topologyKey", "a/b/c"}}}}, "spec.placement.topologyKey: must be"},
      {"topologyKey upper-case prefix", {{"placement", {{"topologyKey", "Example.com/rack"}}}},
       "spec.placement.topologyKey: must be"},
      {"topologyKey name of 64", {{"placement", {{"topologyKey", std::string(64, 'r')}}}},
       "spec.placement.topologyKey: must be"},
      {"topologyKey prefix of 254", {{"placement", {{"topologyKey", std::string(254, 'p') + "/rack"}}}},
       "spec.placement.topologyKey: must be"},
      {"topologyKey of a megabyte", {{"placement", {{"topologyKey", std::string(1 << 20, 'r')}}}},
       "spec.placement.topologyKey: must be"},
      {"checkpoint not object", {{"checkpoint", "pvc"}}, "spec.checkpoint: must be an object, got \"pvc\""},
      {"checkpoint without claim", {{"checkpoint", {{"everySteps", 5}}}},
       "spec.checkpoint.claimName: must name a PersistentVolumeClaim of the job's namespace, got nothing"},
      {"checkpoint claim upper-case", {{"checkpoint", {{"claimName", "Ckpt"}}}},
       "spec.checkpoint.claimName: must name a PersistentVolumeClaim of the job's namespace, got \"Ckpt\""},
      {"checkpoint claim of 254", {{"checkpoint", {{"claimName", std::string(254, 'c')}}}},
       "spec.checkpoint.claimName: must name"},
      {"checkpoint relative path", {{"checkpoint", {{"claimName", "ckpt"}, {"mountPath", "ckpt"}}}},
       "spec.checkpoint.mountPath: must be an absolute path not under /kubedist, got \"ckpt\""},
      {"checkpoint path under /kubedist", {{"checkpoint", {{"claimName", "ckpt"}, {"mountPath", "/kubedist/bin"}}}},
       "spec.checkpoint.mountPath: must be an absolute path not under /kubedist"},
      {"checkpoint every 0 steps", {{"checkpoint", {{"claimName", "ckpt"}, {"everySteps", 0}}}},
       "spec.checkpoint.everySteps: must be between 1 and 1000000000, got 0"},
      {"checkpoint timeout word", {{"checkpoint", {{"claimName", "ckpt"}, {"saveTimeoutSeconds", "long"}}}},
       "spec.checkpoint.saveTimeoutSeconds: must be an integer, got \"long\""},
      {"checkpoint keep 0", {{"checkpoint", {{"claimName", "ckpt"}, {"keep", 0}}}},
       "spec.checkpoint.keep: must be between 1 and 100, got 0"},
      {"zero deadline", {{"activeDeadlineSeconds", 0}}, "spec.activeDeadlineSeconds"},
      {"negative ttl", {{"ttlSecondsAfterFinished", -5}}, "spec.ttlSecondsAfterFinished"},
      {"no template", {{"template", nullptr}}, "spec.template: required"},
      {"template not object", {{"template", "pod"}}, "spec.template: required, must be a pod template object"},
      {"no pod spec", {{"template", {{"spec", nullptr}}}}, "spec.template.spec: required"},
      {"no containers", {{"template", {{"spec", {{"containers", json::array()}}}}}},
       "spec.template.spec.containers: at least one container is required"},
      {"container without name",
       {{"template", {{"spec", {{"containers", json::array({{{"image", "x"}, {"command", {"a"}}}})}}}}}},
       "containers[0].name: required"},
      {"no command",
       {{"template", {{"spec", {{"containers", json::array({{{"name", "trainer"}, {"image", "x"}}})}}}}}},
       "containers[0] (trainer): command is required"},
      {"empty command",
       {{"template",
         {{"spec", {{"containers", json::array({{{"name", "t"}, {"image", "x"}, {"command", json::array()}}})}}}}}},
       "command is required"},
      {"command not strings",
       {{"template",
         {{"spec", {{"containers", json::array({{{"name", "t"}, {"command", json::array({"python", 3})}}})}}}}}},
       "command: every element must be a string"},
      {"args not a list",
       {{"template", {{"spec", {{"containers", json::array({{{"name", "t"}, {"command", {"a"}}, {"args", "b"}}})}}}}}},
       "args: must be a list of strings"},
      {"env not a list",
       {{"template", {{"spec", {{"containers", json::array({{{"name", "t"}, {"command", {"a"}}, {"env", "A=1"}}})}}}}}},
       "env: must be a list"},
      {"reserved volume",
       {{"template",
         {{"spec",
           {{"containers", json::array({{{"name", "t"}, {"command", {"a"}}}})},
            {"volumes", json::array({{{"name", "kubedist-bin"}, {"emptyDir", json::object()}}})}}}}}},
       "\"kubedist-bin\" is reserved"},
      {"reserved init container",
       {{"template",
         {{"spec",
           {{"containers", json::array({{{"name", "t"}, {"command", {"a"}}}})},
            {"initContainers", json::array({{{"name", "kubedist-launcher"}, {"image", "x"}}})}}}}}},
       "\"kubedist-launcher\" is the name of the operator's init container"},
  };
  for (const auto& c : cases) {
    json j = example_job_json();
    j["spec"].merge_patch(c.patch);
    auto job = parse_training_job(j);
    ASSERT_TRUE(job.ok()) << c.name;
    EXPECT_NE(job->spec_error.find(c.message), std::string::npos)
        << c.name << ": got \"" << job->spec_error << "\", want it to contain \"" << c.message << "\"";
  }
}

TEST(ParseSpec, RejectsAMissingSpec) {
  json j = example_job_json();
  j.erase("spec");
  EXPECT_EQ(testing::job_from(j).spec_error, "spec: required, must be an object");
}

TEST(ParseSpec, RejectsNamesThatCannotBecomeHostnames) {
  json j = example_job_json();
  j["metadata"]["name"] = "Has_Upper";
  EXPECT_NE(testing::job_from(j).spec_error.find("metadata.name: \"Has_Upper\" must be a DNS-1035 label"),
            std::string::npos);
  j["metadata"]["name"] = std::string(60, 'a');
  EXPECT_NE(testing::job_from(j).spec_error.find("fits in 63 characters"), std::string::npos);
  j["metadata"]["name"] = "1abc";
  EXPECT_FALSE(testing::job_from(j).spec_error.empty());
}

TEST(ParseTrainingJob, FailsOnlyWithoutNameOrNamespace) {
  EXPECT_FALSE(parse_training_job(json::object()).ok());
  EXPECT_FALSE(parse_training_job(json{{"metadata", {{"name", "x"}}}}).ok());
  auto job = parse_training_job(json{{"metadata", {{"name", "x"}, {"namespace", "y"}, {"generation", 3}}}});
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->generation, 3);
  EXPECT_FALSE(job->spec_error.empty());
}

TEST(ParseTrainingJob, ReadsMetadataAndStatus) {
  json j = example_job_json();
  j["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z";
  j["status"] = json::parse(R"({"phase": "Running", "restarts": 2, "replicas": 4, "readyReplicas": 3,
    "restartsByReason": {"worker_crash": 1, "pod_failure": 1, "bogus": "x"},
    "worldSize": 24, "observedGeneration": 1, "startTime": "2026-01-01T00:00:00Z", "selector": "s",
    "conditions": [{"type": "Running", "status": "True", "reason": "R", "message": "m",
                    "lastTransitionTime": "2026-01-01T00:00:00Z"}]})");
  auto job = testing::job_from(j);
  EXPECT_TRUE(job.deleting);
  EXPECT_EQ(job.uid, "uid-1");
  EXPECT_EQ(job.resource_version, "10");
  EXPECT_EQ(job.status.phase, JobPhase::kRunning);
  EXPECT_EQ(job.status.restarts, 2);
  EXPECT_EQ(job.status.restarts_by_reason,
            (std::map<std::string, int>{{"worker_crash", 1}, {"pod_failure", 1}}));  // "bogus" is no count
  EXPECT_EQ(job.status.ready_replicas, 3);
  ASSERT_EQ(job.status.conditions.size(), 1u);
  EXPECT_EQ(job.status.conditions[0].reason, "R");
  EXPECT_EQ(parse_status(status_to_json(job.status)), job.status);
}

TEST(ParseTrainingJob, SurvivesWronglyTypedMetadataAndStatus) {
  json j = example_job_json();
  j["metadata"]["generation"] = "three";
  j["status"] = {{"replicas", "many"}, {"phase", "Running"}};
  auto job = testing::job_from(j);
  EXPECT_EQ(job.generation, 0);
  EXPECT_EQ(job.status, Status{});
  EXPECT_TRUE(job.spec_error.empty());
}

TEST(ParsePodFacts, ReadsRankPhaseOwnerAndTrainerExitCode) {
  json pod = json::parse(R"({
    "metadata": {"name": "resnet-node-2", "uid": "p2",
                 "labels": {"kubedist.io/node-rank": "2"},
                 "ownerReferences": [{"uid": "other", "controller": false}, {"uid": "uid-1", "controller": true}]},
    "spec": {"containers": [{"name": "side"}, {"name": "trainer"}]},
    "status": {"phase": "Failed", "startTime": "2026-01-01T00:00:00Z",
               "conditions": [{"type": "Ready", "status": "False"}],
               "containerStatuses": [
                 {"name": "side", "state": {"terminated": {"exitCode": 0}}},
                 {"name": "trainer", "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]}
  })");
  PodFacts f = parse_pod_facts(pod);
  EXPECT_EQ(f.name, "resnet-node-2");
  EXPECT_EQ(f.rank, 2);
  EXPECT_EQ(f.owner_uid, "uid-1");
  EXPECT_EQ(f.phase, "Failed");
  EXPECT_EQ(f.exit_code, 137);
  EXPECT_EQ(f.failure_reason, "OOMKilled");
  EXPECT_FALSE(f.ready);
  EXPECT_FALSE(f.deleting);
}

TEST(ParsePodFacts, ToleratesMissingAndMalformedFields) {
  PodFacts f = parse_pod_facts(json::parse(R"({"metadata": {"name": "x", "labels": {"kubedist.io/node-rank": "01"},
    "deletionTimestamp": "2026-01-01T00:00:00Z"}})"));
  EXPECT_EQ(f.rank, -1);
  EXPECT_EQ(f.phase, "Pending");
  EXPECT_TRUE(f.deleting);
  EXPECT_FALSE(f.exit_code.has_value());
  EXPECT_EQ(parse_pod_facts(json::object()).rank, -1);
}

}  // namespace
}  // namespace kubedist::trainingjob

namespace kubedist::trainingjob {
namespace {

TEST(ParseSpec, SchedulingSwitchesAreUnsetUnlessTheJobSetsThem) {
  auto spec = testing::example_job_json()["spec"];
  EXPECT_TRUE(parse_spec(spec, "resnet")->scheduling.empty());
  spec["scheduling"] = {{"gang", false}};
  EXPECT_EQ(parse_spec(spec, "resnet")->scheduling, (std::map<std::string, bool>{{"gang", false}}));
  spec["scheduling"] = {{"gang", true}, {"other", nullptr}};
  EXPECT_EQ(parse_spec(spec, "resnet")->scheduling, (std::map<std::string, bool>{{"gang", true}}));
}

TEST(ParseTrainingJob, KeepsItsLabelsForTheIntegrations) {
  json j = testing::example_job_json();
  j["metadata"]["labels"] = {{"kueue.x-k8s.io/queue-name", "team"}, {"odd", 3}};
  EXPECT_EQ(testing::job_from(j).labels, (std::map<std::string, std::string>{{"kueue.x-k8s.io/queue-name", "team"}}));
}

TEST(ParseNodeFacts, ReadyCordonedAndNotReadySince) {
  auto n = parse_node_facts(nlohmann::json::parse(R"({"metadata": {"name": "gpu-1"}, "spec": {"unschedulable": true},
    "status": {"conditions": [{"type": "Ready", "status": "Unknown", "lastTransitionTime": "2026-12-03T05:00:00Z"}]}})"));
  EXPECT_EQ(n, (NodeFacts{"gpu-1", false, "2026-12-03T05:00:00Z", true, ""}));
  EXPECT_EQ(parse_node_facts(nlohmann::json::parse(R"({"metadata": {"name": "x"}, "spec": "bad", "status": 3})")),
            (NodeFacts{"x", true, "", false, ""}));
  auto fresh = parse_node_facts(nlohmann::json::parse(R"({"metadata": {"name": "y", "creationTimestamp": "2026-12-03T05:00:09Z"},
    "status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-12-03T05:00:05Z"}]}})"));
  EXPECT_EQ(fresh.schedulable_since, "2026-12-03T05:00:09Z");
}

TEST(ParseNodeFacts, KeepsItsTaintsAndVersionForATaintWriteAndSeesTheAvoidedTaint) {
  auto n = parse_node_facts(nlohmann::json::parse(R"({"metadata": {"name": "gpu-1", "resourceVersion": "42"},
    "spec": {"taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}, {"key": "kubedist.io/avoided", "effect": "NoSchedule"}]}})"));
  EXPECT_EQ(n.resource_version, "42");
  EXPECT_TRUE(n.avoided_taint);
  EXPECT_FALSE(n.out_of_service);
  EXPECT_EQ(n.taints.size(), 2u);
  auto plain = parse_node_facts(nlohmann::json::parse(R"({"metadata": {"name": "gpu-2"}, "spec": {"taints": [{"key": 3}]}})"));
  EXPECT_FALSE(plain.avoided_taint);
  EXPECT_TRUE(parse_node_facts(nlohmann::json::parse(R"({"metadata": {"name": "gpu-3"}})")).taints.empty());
}

TEST(ParseNodeFacts, TheOutOfServiceTaintAloneMarksANodeOutOfService) {
  auto n = parse_node_facts(nlohmann::json::parse(R"({"metadata": {"name": "gpu-1"}, "spec": {"taints": [
    {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown", "effect": "NoExecute"}]}})"));
  EXPECT_TRUE(n.out_of_service);
  for (const char* spec : {R"({"taints": [{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}]})",
                           R"({"taints": "bad"})", R"({"taints": [3, null, {"key": 5}]})", R"({"taints": {}})"}) {
    nlohmann::json node = {{"metadata", {{"name", "x"}}}, {"spec", nlohmann::json::parse(spec)}};
    EXPECT_FALSE(parse_node_facts(node).out_of_service) << spec;
  }
}

TEST(ParsePodFacts, NodeIpAndUnschedulableSince) {
  auto p = parse_pod_facts(nlohmann::json::parse(R"({"metadata": {"name": "j-node-0", "namespace": "n"},
    "spec": {"nodeName": "gpu-2", "containers": [{"name": "trainer"}]},
    "status": {"phase": "Pending", "podIP": "10.0.0.7", "conditions": [
      {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "lastTransitionTime": "2026-12-03T05:00:01Z",
       "message": "0/3 nodes are available: persistentvolumeclaim \"ckpt\" not found.\nsecond line"}]}})"));
  EXPECT_EQ(p.node_name, "gpu-2");
  EXPECT_EQ(p.pod_ip, "10.0.0.7");
  EXPECT_EQ(p.unschedulable_since, "2026-12-03T05:00:01Z");
  EXPECT_EQ(p.unschedulable_message, "0/3 nodes are available: persistentvolumeclaim \"ckpt\" not found.");
}

TEST(ParsePodFacts, KeepsTheFirstLineOfTheTrainersTerminationMessage) {
  json pod = json::parse(R"({
    "metadata": {"name": "j-node-1"},
    "spec": {"containers": [{"name": "trainer"}]},
    "status": {"phase": "Failed", "containerStatuses": [{"name": "trainer", "state": {"terminated": {
      "exitCode": 3, "reason": "Error", "finishedAt": "2026-12-03T05:00:07Z",
      "message": "\nworker rank 3 (local rank 1) on j-node-1 exited with code 3: ValueError: bad batch\nmore"}}}]}
  })");
  PodFacts f = parse_pod_facts(pod);
  EXPECT_EQ(f.termination_message, "worker rank 3 (local rank 1) on j-node-1 exited with code 3: ValueError: bad batch");
  EXPECT_EQ(f.finished_at, "2026-12-03T05:00:07Z");

  // A message longer than kept is cut, never inside a UTF-8 character.
  std::string long_message(kMaxTerminationMessage - 1, 'x');
  long_message += "\u00e9\u00e9";  // two 2-byte characters straddling the limit
  pod["status"]["containerStatuses"][0]["state"]["terminated"]["message"] = long_message;
  f = parse_pod_facts(pod);
  EXPECT_EQ(f.termination_message, std::string(kMaxTerminationMessage - 1, 'x'));
}

TEST(StatusJson, LauncherElasticLostAndFailedPodsAndLastFailureRoundTripAndClear) {
  Status s;
  s.launcher = {"uid-0", {{"worker_crash", 2}}, 0, {1, 3}, 0, ""};
  s.elastic = {3, "Unschedulable", "2026-12-03T05:00:01Z", 4};
  s.lost_pods = {"p1"};
  s.failed_pods = {"p2", "p3"};
  s.last_failure = LastFailure{"2026-12-03T05:00:07Z", "j-node-1", "n1", 3, "Error", "worker rank 3 exited with code 3"};
  EXPECT_EQ(parse_status(status_to_json(s)), s);
  s.last_failure->exit_code.reset();  // ended by a signal the kubelet reported without a code, or evicted
  EXPECT_EQ(parse_status(status_to_json(s)), s);
  const auto cleared = status_to_json(Status{});
  EXPECT_TRUE(cleared["launcher"].is_null());
  EXPECT_TRUE(cleared["elastic"].is_null());
  EXPECT_TRUE(cleared["lostPods"].is_null());
  EXPECT_TRUE(cleared["failedPods"].is_null());
  EXPECT_TRUE(cleared["lastFailure"].is_null());
}

TEST(StatusJson, TheRendezvousSecretAndLostKeyRoundTripAndClear) {
  Status s;
  s.rendezvous_secret = "j-rdzv";
  s.rendezvous_key_lost = "be11c37f5a79100d";
  s.rendezvous_secret_key = "0123456789abcdef";
  EXPECT_EQ(parse_status(status_to_json(s)), s);
  const auto cleared = status_to_json(Status{});
  EXPECT_TRUE(cleared["rendezvousSecret"].is_null());
  EXPECT_TRUE(cleared["rendezvousKeyLost"].is_null());
  EXPECT_TRUE(cleared["rendezvousSecretKey"].is_null());
}

TEST(StatusJson, TheSparesRoundTripClearAndForeignStandInsAreLeftOut) {
  Status s;
  s.spares = 2;
  s.spares_ready = 1;
  s.stand_ins = {{1, 10000}, {3, 10002}};
  EXPECT_EQ(parse_status(status_to_json(s)), s);
  const auto cleared = status_to_json(Status{});
  EXPECT_TRUE(cleared["spares"].is_null());
  EXPECT_TRUE(cleared["sparesReady"].is_null());
  EXPECT_TRUE(cleared["standIns"].is_null());
  // Someone else's writes: only places other than node 0's, below the spare ranks, held by a node rank, are read.
  json st = json::parse(R"({"spares": "two", "standIns": [{"nodeRank": 2, "podNodeRank": 10001}, 7, null,
      {"nodeRank": 0, "podNodeRank": 10000}, {"nodeRank": -1, "podNodeRank": 10000}, {"nodeRank": "3"},
      {"nodeRank": 10000, "podNodeRank": 10003}, {"nodeRank": 4, "podNodeRank": 0}, {"nodeRank": 5, "podNodeRank": 1e12},
      {"nodeRank": 6}]})");
  const Status foreign = parse_status(st);
  EXPECT_EQ(foreign.spares, 0);
  EXPECT_EQ(foreign.stand_ins, (std::map<int, int>{{2, 10001}}));
}

TEST(StatusJson, ForeignValuesInTheRendezvousAndPrepaidFieldsAreLeftOut) {
  // Someone else's writes to the status: prepaidNodes keeps only node ranks (at most kMaxLostNodes), the key names
  // only strings.
  json st = json::parse(R"({"launcher": {"podUID": "u", "prepaidNodes": ["1", -1, 2.5, 1e12, null, 3, 7]},
                            "rendezvousSecret": 5, "rendezvousSecretKey": {"a": 1}})");
  Status s = parse_status(st);
  EXPECT_EQ(s.launcher.prepaid_nodes, (std::vector<int>{3, 7}));
  EXPECT_EQ(s.rendezvous_secret, "");
  EXPECT_EQ(s.rendezvous_secret_key, "");
  st["launcher"]["prepaidNodes"] = json::array();
  for (int i = 0; i < 200; ++i) st["launcher"]["prepaidNodes"].push_back(i);
  EXPECT_EQ(parse_status(st).launcher.prepaid_nodes.size(), contract::kMaxLostNodes);
}

TEST(ParsePodFacts, ReadsTheFingerprintOfTheNamespaceKeyThePodDerivesFrom) {
  const json pod = json::parse(R"({"metadata": {"name": "j-node-0", "annotations": {
    "kubedist.io/rendezvous-key": "be11c37f5a79100d"}}, "spec": {"volumes": [{"name": "kubedist-rendezvous"}]}})");
  const PodFacts f = parse_pod_facts(pod);
  EXPECT_EQ(f.rdzv_key, "be11c37f5a79100d");
  EXPECT_TRUE(f.rdzv_secret);
  EXPECT_FALSE(f.job_rdzv_secret);
  EXPECT_EQ(parse_pod_facts(json::parse(R"({"metadata": {"annotations": {"kubedist.io/rendezvous-key": 7}}})")).rdzv_key,
            "");
}

}  // namespace
}  // namespace kubedist::trainingjob
