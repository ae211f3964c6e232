#include "trainingjob/render/render.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "contract/pod_env.h"
#include "test_jobs.h"
#include "trainingjob/render/env.h"
#include "trainingjob/api/parse.h"
#include "trainingjob/decide/status.h"

namespace kubedist::trainingjob {
namespace {

using nlohmann::json;

std::map<std::string, std::string> env_of(const json& container) {
  std::map<std::string, std::string> env;
  for (const auto& e : container["env"]) env[e["name"]] = e.value("value", "");
  return env;
}

size_t count_env(const json& container, const std::string& name) {
  size_t n = 0;
  for (const auto& e : container["env"]) n += e["name"] == name ? 1 : 0;
  return n;
}

TEST(RenderService, IsHeadlessPublishesNotReadyAndSelectsTheJobsPods) {
  const auto svc = render_service(testing::example_job());
  EXPECT_EQ(svc["metadata"]["name"], "resnet");
  EXPECT_EQ(svc["metadata"]["namespace"], "team-a");
  EXPECT_EQ(svc["spec"]["clusterIP"], "None");
  EXPECT_EQ(svc["spec"]["publishNotReadyAddresses"], true);
  EXPECT_EQ(svc["spec"]["selector"], (json{{"kubedist.io/job-name", "resnet"}}));
  const auto& ref = svc["metadata"]["ownerReferences"][0];
  EXPECT_EQ(ref["uid"], "uid-1");
  EXPECT_EQ(ref["kind"], "TrainingJob");
  EXPECT_EQ(ref["controller"], true);
}

TEST(RenderNamespaceRdzvSecret, IsOneLabelledSecretOfTheNamespaceOwnedByNoJob) {
  const auto secret = render_namespace_rdzv_secret("team-a", "0123abcd");
  EXPECT_EQ(secret["kind"], "Secret");
  EXPECT_EQ(secret["metadata"]["name"], "kubedist-rendezvous");
  EXPECT_EQ(secret["metadata"]["namespace"], "team-a");
  EXPECT_EQ(secret["metadata"]["labels"],
            (json{{"kubedist.io/rendezvous-secret", "namespace"}, {"app.kubernetes.io/managed-by", "kubedist"}}));
  EXPECT_FALSE(secret["metadata"].contains("ownerReferences"));
  EXPECT_EQ(secret["stringData"], (json{{"secret", "0123abcd"}}));
}

TEST(RenderPod, OnlyTheInitContainerSeesTheNamespaceSecretAndDerivesTheJobsForTheTrainer) {
  PodOptions options;
  options.rdzv_secret = true;
  const auto pod = render_pod(testing::example_job(), 1, options);
  EXPECT_EQ(pod["spec"]["volumes"].back(),
            json::parse(R"({"name": "kubedist-rendezvous",
                            "secret": {"secretName": "kubedist-rendezvous", "defaultMode": 292}})"));
  const auto& init = pod["spec"]["initContainers"][0];
  EXPECT_EQ(init["command"], json::parse(R"(["/kubedist-launcher", "--install", "/kubedist/bin",
                                             "--rdzv-secret-from", "/kubedist/rendezvous/secret",
                                             "--rdzv-job", "uid-1"])"));
  EXPECT_EQ(init["volumeMounts"].back(),
            json::parse(R"({"name": "kubedist-rendezvous", "mountPath": "/kubedist/rendezvous", "readOnly": true})"));
  const auto& trainer = pod["spec"]["containers"][0];
  for (const auto& m : trainer["volumeMounts"]) EXPECT_NE(m["name"], "kubedist-rendezvous");
  EXPECT_EQ(env_of(trainer)["KUBEDIST_RDZV_SECRET_FILE"], "/kubedist/bin/rdzv-secret");  // in the launcher's emptyDir
  EXPECT_TRUE(parse_pod_facts(pod).rdzv_secret);
}

TEST(RenderPod, TheCheckpointClaimIsMountedInEveryTrainerSparesIncludedWithTheHelpersSettings) {
  json j = testing::example_job_json();
  j["spec"]["replicas"] = 2;
  j["spec"]["spares"] = 1;
  j["spec"]["checkpoint"] = {{"claimName", "ckpt"}, {"everySteps", 500}};
  const auto job = testing::job_from(j);
  ASSERT_EQ(job.spec_error, "");
  for (int rank : {0, 1, 10000}) {
    const auto pod = render_pod(job, rank, PodOptions{});
    const json volume = {{"name", "kubedist-checkpoint"}, {"persistentVolumeClaim", {{"claimName", "ckpt"}}}};
    EXPECT_EQ(std::count(pod["spec"]["volumes"].begin(), pod["spec"]["volumes"].end(), volume), 1) << rank;
    const auto& trainer = pod["spec"]["containers"][0];
    const json mount = {{"name", "kubedist-checkpoint"}, {"mountPath", "/checkpoints"}};
    EXPECT_EQ(std::count(trainer["volumeMounts"].begin(), trainer["volumeMounts"].end(), mount), 1) << rank;
    auto env = env_of(trainer);
    EXPECT_EQ(env["KUBEDIST_CHECKPOINT_DIR"], "/checkpoints");
    EXPECT_EQ(env["KUBEDIST_CHECKPOINT_EVERY_STEPS"], "500");
    EXPECT_EQ(env["KUBEDIST_CHECKPOINT_KEEP"], "2");
    EXPECT_EQ(count_env(trainer, "KUBEDIST_CHECKPOINT_TIMEOUT"), 0u) << "no budget set";
    // The launcher waits up to 65 s for a just-in-time checkpoint, then stops its workers in the 28 s of the
    // template's (default) 30: the pod's grace period is both.
    EXPECT_EQ(pod["spec"]["terminationGracePeriodSeconds"], 95) << rank;
    EXPECT_EQ(env["KUBEDIST_STOP_TIMEOUT"], "28");
  }
  j["spec"]["checkpoint"]["saveTimeoutSeconds"] = 20;
  j["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 10;
  const auto bounded = render_pod(testing::job_from(j), 0, PodOptions{});
  EXPECT_EQ(bounded["spec"]["terminationGracePeriodSeconds"], 35) << "the template's 10, and 20 + 5";
  EXPECT_EQ(env_of(bounded["spec"]["containers"][0])["KUBEDIST_STOP_TIMEOUT"], "8");
  const auto plain = render_pod(testing::example_job(), 1, PodOptions{});
  EXPECT_FALSE(plain["spec"].contains("terminationGracePeriodSeconds")) << "as the template says (nothing)";
  EXPECT_EQ(count_env(plain["spec"]["containers"][0], "KUBEDIST_CHECKPOINT_DIR"), 0u);
  for (const auto& v : plain["spec"]["volumes"]) EXPECT_NE(v["name"], "kubedist-checkpoint");
}

TEST(RenderPod, AJobWithItsOwnSecretFromAnEarlierOperatorKeepsMountingItIntoTheTrainer) {
  PodOptions options;
  options.rdzv_secret = true;
  options.job_rdzv_secret = true;
  const auto pod = render_pod(testing::example_job(), 1, options);
  EXPECT_EQ(pod["spec"]["volumes"].back(),
            json::parse(R"({"name": "kubedist-rdzv", "secret": {"secretName": "resnet-rdzv", "defaultMode": 292}})"));
  const auto& trainer = pod["spec"]["containers"][0];
  EXPECT_EQ(trainer["volumeMounts"].back(),
            json::parse(R"({"name": "kubedist-rdzv", "mountPath": "/kubedist/rdzv", "readOnly": true})"));
  EXPECT_EQ(env_of(trainer)["KUBEDIST_RDZV_SECRET_FILE"], "/kubedist/rdzv/secret");
  // The init container only installs the launcher: it needs no secret.
  for (const auto& m : pod["spec"]["initContainers"][0]["volumeMounts"]) EXPECT_NE(m["name"], "kubedist-rdzv");
  EXPECT_EQ(pod["spec"]["initContainers"][0]["command"].size(), 3u);
  // And the pod's facts say that its launcher signs.
  EXPECT_TRUE(parse_pod_facts(pod).rdzv_secret);
  EXPECT_FALSE(parse_pod_facts(render_pod(testing::example_job(), 1, PodOptions{})).rdzv_secret);
  EXPECT_EQ(env_of(render_pod(testing::example_job(), 1, PodOptions{})["spec"]["containers"][0]).count(
                "KUBEDIST_RDZV_SECRET_FILE"),
            0u);
}

TEST(RenderPod, APodDerivingFromTheNamespaceKeyRecordsItsFingerprintAndNoTemplateCanSetIt) {
  auto j = testing::example_job_json();
  j["spec"]["template"]["metadata"]["annotations"] = {{"kubedist.io/rendezvous-key", "forged"}, {"team", "a"}};
  const auto job = testing::job_from(j);
  PodOptions options;
  options.rdzv_secret = true;
  options.rdzv_key = "be11c37f5a79100d";
  auto pod = render_pod(job, 0, options);
  EXPECT_EQ(pod["metadata"]["annotations"]["kubedist.io/rendezvous-key"], "be11c37f5a79100d");
  EXPECT_EQ(pod["metadata"]["annotations"]["team"], "a");
  EXPECT_EQ(parse_pod_facts(pod).rdzv_key, "be11c37f5a79100d");
  options.job_rdzv_secret = true;  // mounts the job's own Secret: derives from no namespace key
  pod = render_pod(job, 0, options);
  EXPECT_FALSE(pod["metadata"]["annotations"].contains("kubedist.io/rendezvous-key"));
  EXPECT_EQ(pod["metadata"]["annotations"]["team"], "a");
}

TEST(RenderJobRdzvSecret, IsOwnedByTheJobLabelledWithItsNameAndHoldsTheSecret) {
  const auto secret = render_job_rdzv_secret(testing::example_job(), "0a1b");
  EXPECT_EQ(secret["metadata"]["name"], "resnet-rdzv");
  EXPECT_EQ(secret["metadata"]["namespace"], "team-a");
  EXPECT_EQ(secret["metadata"]["labels"]["kubedist.io/job-name"], "resnet");
  EXPECT_EQ(secret["metadata"]["ownerReferences"][0]["uid"], "uid-1");
  EXPECT_EQ(secret["stringData"], json::parse(R"({"secret": "0a1b"})"));
}

TEST(RenderPod, SetsNameDnsLabelsOwnerAndNeverRestart) {
  const auto pod = render_pod(testing::example_job(), 2, PodOptions{});
  EXPECT_EQ(pod["metadata"]["name"], "resnet-node-2");
  EXPECT_EQ(pod["metadata"]["namespace"], "team-a");
  EXPECT_EQ(pod["metadata"]["labels"]["kubedist.io/job-name"], "resnet");
  EXPECT_EQ(pod["metadata"]["labels"]["kubedist.io/node-rank"], "2");
  EXPECT_EQ(pod["metadata"]["labels"]["app"], "train");  // the template's labels are kept
  EXPECT_EQ(pod["spec"]["hostname"], "resnet-node-2");
  EXPECT_EQ(pod["spec"]["subdomain"], "resnet");
  EXPECT_EQ(pod["spec"]["restartPolicy"], "Never");
  const auto& ref = pod["metadata"]["ownerReferences"][0];
  EXPECT_EQ(ref, (json{{"apiVersion", "kubedist.io/v1alpha1"}, {"kind", "TrainingJob"}, {"name", "resnet"},
                       {"uid", "uid-1"}, {"controller", true}, {"blockOwnerDeletion", true}}));
}

TEST(RenderPod, WrapsTheTrainerCommandAndArgsInTheLauncher) {
  const auto pod = render_pod(testing::example_job(), 0, PodOptions{});
  const auto& trainer = pod["spec"]["containers"][0];
  EXPECT_EQ(trainer["command"], json::parse(R"(["/kubedist/bin/kubedist-launcher", "--no-python", "--",
                                                "python", "train.py", "--epochs", "10"])"));
  EXPECT_FALSE(trainer.contains("args"));
  EXPECT_EQ(trainer["volumeMounts"], json::parse(R"([{"name": "kubedist-bin", "mountPath": "/kubedist/bin"}])"));
}

TEST(RenderPod, AddsTheLauncherInitContainerAndSharedVolume) {
  const auto pod = render_pod(testing::example_job(), 0, PodOptions{"registry.local/launcher:dev"});
  const auto& init = pod["spec"]["initContainers"][0];
  EXPECT_EQ(init["name"], "kubedist-launcher");
  EXPECT_EQ(init["image"], "registry.local/launcher:dev");
  EXPECT_EQ(init["command"], json::parse(R"(["/kubedist-launcher", "--install", "/kubedist/bin"])"));
  EXPECT_EQ(init["volumeMounts"][0]["mountPath"], "/kubedist/bin");
  EXPECT_EQ(pod["spec"]["volumes"].back(), json::parse(R"({"name": "kubedist-bin", "emptyDir": {}})"));
}

// Pod Security "restricted" (https://kubernetes.io/docs/concepts/security/pod-security-standards/): every field it
// checks on a container, as the container the operator adds sets it.
TEST(RenderPod, TheLauncherInitContainerMeetsPodSecurityRestricted) {
  PodOptions options;
  options.rdzv_secret = true;
  const auto pod = render_pod(testing::example_job(), 1, options);
  const auto& sc = pod["spec"]["initContainers"][0]["securityContext"];
  EXPECT_EQ(sc["runAsNonRoot"], true);
  EXPECT_EQ(sc["runAsUser"], 65532);
  EXPECT_EQ(sc["allowPrivilegeEscalation"], false);
  EXPECT_EQ(sc["capabilities"]["drop"], json::array({"ALL"}));
  EXPECT_FALSE(sc["capabilities"].contains("add"));
  EXPECT_EQ(sc["seccompProfile"]["type"], "RuntimeDefault");
  EXPECT_EQ(sc["readOnlyRootFilesystem"], true);  // it writes only to the emptyDir
  EXPECT_FALSE(sc.contains("privileged"));
  // The user's trainer keeps the securityContext its template gives it: the operator adds nothing there.
  EXPECT_FALSE(pod["spec"]["containers"][0].contains("securityContext"));
}

// What Pod Security "restricted" (the policy of Kubernetes 1.34 to 1.37) finds wrong with a pod: its baseline and
// restricted checks of the pod's and each container's fields, each violation named "container: field".
std::vector<std::string> restricted_violations(const json& pod) {
  std::vector<std::string> out;
  const json& spec = pod["spec"];
  const json psc = spec.value("securityContext", json::object());
  for (const char* host : {"hostNetwork", "hostPID", "hostIPC"}) {
    if (spec.value(host, false)) out.push_back(std::string("pod: ") + host);
  }
  const std::vector<std::string> allowed_volumes = {"configMap", "csi",  "downwardAPI", "emptyDir",
                                                    "ephemeral", "persistentVolumeClaim", "projected", "secret"};
  for (const auto& v : spec.value("volumes", json::array())) {
    bool ok = false;
    for (const auto& [key, _] : v.items()) {
      if (key == "name") continue;
      ok = std::find(allowed_volumes.begin(), allowed_volumes.end(), key) != allowed_volumes.end();
      if (!ok) out.push_back("volume " + v.value("name", "") + ": " + key);
    }
    if (!ok && v.size() < 2) out.push_back("volume " + v.value("name", "") + ": no source");
  }
  auto seccomp_ok = [](const json& sc) {
    const std::string type = sc.value("seccompProfile", json::object()).value("type", "");
    return type == "RuntimeDefault" || type == "Localhost";
  };
  for (const char* list : {"initContainers", "containers"}) {
    for (const auto& c : spec.value(list, json::array())) {
      const std::string name = c.value("name", "") + ": ";
      const json sc = c.value("securityContext", json::object());
      if (sc.value("privileged", false)) out.push_back(name + "privileged");
      if (sc.value("allowPrivilegeEscalation", true)) out.push_back(name + "allowPrivilegeEscalation not false");
      if (!sc.value("runAsNonRoot", psc.value("runAsNonRoot", false))) out.push_back(name + "runAsNonRoot not true");
      if (sc.value("runAsUser", psc.value("runAsUser", 1)) == 0) out.push_back(name + "runAsUser 0");
      if (!seccomp_ok(sc) && !(seccomp_ok(psc) && !sc.contains("seccompProfile"))) {
        out.push_back(name + "seccompProfile not RuntimeDefault or Localhost");
      }
      const json caps = sc.value("capabilities", json::object());
      if (caps.value("drop", json::array()) != json::array({"ALL"})) out.push_back(name + "capabilities.drop not [ALL]");
      for (const auto& add : caps.value("add", json::array())) {
        if (add != "NET_BIND_SERVICE") out.push_back(name + "capabilities.add " + add.get<std::string>());
      }
      if (sc.value("procMount", "Default") != "Default") out.push_back(name + "procMount");
      for (const auto& port : c.value("ports", json::array())) {
        if (port.value("hostPort", 0) != 0) out.push_back(name + "hostPort");
      }
    }
  }
  return out;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : "; ") + x;
  return s;
}

// The operator's pods under a namespace enforcing "restricted": whatever the options and the rank, a template that
// meets it renders into a pod that meets it (the init container, the volumes and the ports the operator adds
// included), and each container the operator adds meets it on its own securityContext, with none at the pod's level.
TEST(RenderPod, EveryContainerTheOperatorAddsMeetsPodSecurityRestricted) {
  json j = testing::example_job_json();
  json& tmpl_spec = j["spec"]["template"]["spec"];
  tmpl_spec["securityContext"] = json::parse(R"({"runAsNonRoot": true, "runAsUser": 1000,
                                                 "seccompProfile": {"type": "RuntimeDefault"}})");
  tmpl_spec["containers"][0]["securityContext"] =
      json::parse(R"({"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}})");
  tmpl_spec["volumes"] = json::parse(R"([{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}])");
  const TrainingJob compliant = testing::job_from(j);
  ASSERT_EQ(joined(restricted_violations({{"spec", tmpl_spec}})), "") << "the template itself";
  json bare_spec = tmpl_spec;
  bare_spec.erase("securityContext");
  const TrainingJob bare = [&] {
    json b = j;
    b["spec"]["template"]["spec"] = bare_spec;
    return testing::job_from(b);
  }();

  int cases = 0;
  for (const bool rdzv_secret : {false, true}) {
    for (const bool job_rdzv_secret : {false, true}) {
      for (const int metrics_port : {0, 9402}) {
        for (const int rank : {0, 3}) {
          PodOptions options;
          options.rdzv_secret = rdzv_secret;
          options.job_rdzv_secret = job_rdzv_secret;
          options.launcher_metrics_port = metrics_port;
          const std::string what = "rdzv_secret " + std::to_string(rdzv_secret) + ", job_rdzv_secret " +
                                   std::to_string(job_rdzv_secret) + ", metrics port " +
                                   std::to_string(metrics_port) + ", rank " + std::to_string(rank);
          const json pod = render_pod(compliant, rank, options);
          EXPECT_EQ(joined(restricted_violations(pod)), "") << what;

          // Without the pod's securityContext, only the user's trainer may fall short: never what the operator adds.
          json added = render_pod(bare, rank, options);
          const auto& inits = added["spec"]["initContainers"];
          ASSERT_EQ(inits.size(), 1u) << what;
          added["spec"]["containers"] = json::array();
          EXPECT_EQ(joined(restricted_violations(added)), "") << what;
          ++cases;
        }
      }
    }
  }
  EXPECT_EQ(cases, 16);
  // The checker itself: it catches what the operator's container would get wrong.
  json broken = render_pod(bare, 0, PodOptions{});
  broken["spec"]["containers"] = json::array();
  broken["spec"]["initContainers"][0]["securityContext"].erase("seccompProfile");
  broken["spec"]["initContainers"][0]["ports"] = json::parse(R"([{"containerPort": 1, "hostPort": 1}])");
  broken["spec"]["volumes"].push_back(json::parse(R"({"name": "h", "hostPath": {"path": "/"}})"));
  EXPECT_EQ(joined(restricted_violations(broken)),
            "volume h: hostPath; kubedist-launcher: seccompProfile not RuntimeDefault or Localhost; "
            "kubedist-launcher: hostPort");
}

TEST(RenderPod, KeepsUserInitContainersAfterTheLauncher) {
  json j = testing::example_job_json();
  j["spec"]["template"]["spec"]["initContainers"] = json::array({{{"name", "fetch"}, {"image", "x"}}});
  const auto pod = render_pod(testing::job_from(j), 0, PodOptions{});
  ASSERT_EQ(pod["spec"]["initContainers"].size(), 2u);
  EXPECT_EQ(pod["spec"]["initContainers"][1]["name"], "fetch");
}

TEST(RenderPod, InjectsTheNodeEnvAndOverridesUserEntriesOfTheSameName) {
  const auto pod = render_pod(testing::example_job(), 3, PodOptions{});
  const auto& trainer = pod["spec"]["containers"][0];
  auto env = env_of(trainer);
  EXPECT_EQ(env["FOO"], "bar");
  EXPECT_EQ(env["MASTER_ADDR"], "resnet-node-0.resnet.team-a.svc");
  EXPECT_EQ(env["MASTER_PORT"], "29500");
  EXPECT_EQ(count_env(trainer, "MASTER_PORT"), 1u);
  EXPECT_EQ(env["NODE_RANK"], "3");
  EXPECT_EQ(env["NNODES"], "4");
  EXPECT_EQ(env["NPROC_PER_NODE"], "auto");
  EXPECT_EQ(env["KUBEDIST_JOB"], "resnet");
  EXPECT_EQ(env["PET_MASTER_ADDR"], env["MASTER_ADDR"]);
  EXPECT_EQ(env["PET_MASTER_PORT"], "29500");
  EXPECT_EQ(env["PET_NODE_RANK"], "3");
  EXPECT_EQ(env["PET_NNODES"], "4");
  EXPECT_EQ(env["PET_NPROC_PER_NODE"], "auto");
  EXPECT_EQ(env["PET_MAX_RESTARTS"], "3");
  EXPECT_EQ(env["KUBEDIST_RESTART_POLICY"], "OnFailure");
}

TEST(RenderPod, DeclaresTheStoreAndRendezvousPorts) {
  json j = testing::example_job_json();
  j["spec"]["masterPort"] = 4000;
  const auto pod = render_pod(testing::job_from(j), 0, PodOptions{"img", 0});
  const auto& ports = pod["spec"]["containers"][0]["ports"];
  ASSERT_EQ(ports.size(), 2u);
  EXPECT_EQ(ports[0]["containerPort"], 4000);
  EXPECT_EQ(ports[1]["containerPort"], 4001);
}

TEST(RenderPod, LetsTheLauncherServeMetricsOnThePodsAddress) {
  json j = testing::example_job_json();
  j["spec"]["template"]["spec"]["containers"][0]["env"].push_back({{"name", "KUBEDIST_METRICS_ADDR"}, {"value", "0.0.0.0"}});
  const auto pod = render_pod(testing::job_from(j), 1, PodOptions{});
  const auto& trainer = pod["spec"]["containers"][0];
  EXPECT_EQ(env_of(trainer)["KUBEDIST_METRICS_PORT"], "9402");
  EXPECT_EQ(count_env(trainer, "KUBEDIST_METRICS_ADDR"), 1u);  // ours replaces the user's
  for (const auto& e : trainer["env"]) {
    if (e["name"] == "KUBEDIST_METRICS_ADDR") {
      EXPECT_EQ(e["valueFrom"]["fieldRef"]["fieldPath"], "status.podIP");
    }
  }
  ASSERT_EQ(trainer["ports"].size(), 3u);
  EXPECT_EQ(trainer["ports"][2], json::parse(R"({"name": "kd-metrics", "containerPort": 9402, "protocol": "TCP"})"));
}

TEST(RenderPod, TellsTheLauncherWhereTheTerminationMessageGoes) {
  const auto pod = render_pod(testing::example_job(), 0, PodOptions{});
  EXPECT_EQ(env_of(pod["spec"]["containers"][0])["KUBEDIST_TERMINATION_LOG"], "/dev/termination-log");
  json j = testing::example_job_json();
  j["spec"]["template"]["spec"]["containers"][0]["terminationMessagePath"] = "/tmp/why";
  j["spec"]["template"]["spec"]["containers"][0]["env"].push_back({{"name", "KUBEDIST_TERMINATION_LOG"}, {"value", "x"}});
  const auto custom = render_pod(testing::job_from(j), 0, PodOptions{});
  const auto& trainer = custom["spec"]["containers"][0];
  EXPECT_EQ(env_of(trainer)["KUBEDIST_TERMINATION_LOG"], "/tmp/why");  // the container's own path wins
  EXPECT_EQ(count_env(trainer, "KUBEDIST_TERMINATION_LOG"), 1u);
}

TEST(RenderPod, TheLaunchersStopTimeoutFollowsThePodsGracePeriod) {
  EXPECT_EQ(env_of(render_pod(testing::example_job(), 0, PodOptions{})["spec"]["containers"][0])["KUBEDIST_STOP_TIMEOUT"],
            "28")
      << "Kubernetes' default 30 s, less 2 s for the launcher's own exit";
  const std::vector<std::pair<json, std::string>> cases = {
      {120, "118"}, {4, "2"}, {3, "1.5"}, {1, "0.5"}, {0, "0"}, {"60", "28"}, {-5, "28"}, {2.5, "28"},
      // A grace beyond the launcher's longest duration (it would refuse to start) is cut to it.
      {100000002, "100000000"}, {json(9223372036854775807LL), "100000000"}};
  for (const auto& [grace, want] : cases) {
    json j = testing::example_job_json();
    j["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = grace;
    j["spec"]["template"]["spec"]["containers"][0]["env"].push_back({{"name", "KUBEDIST_STOP_TIMEOUT"}, {"value", "1"}});
    const auto pod = render_pod(testing::job_from(j), 0, PodOptions{});
    const auto& trainer = pod["spec"]["containers"][0];
    EXPECT_EQ(env_of(trainer)["KUBEDIST_STOP_TIMEOUT"], want) << grace;
    EXPECT_EQ(count_env(trainer, "KUBEDIST_STOP_TIMEOUT"), 1u) << "ours replaces the template's";
  }
}

TEST(RenderPod, LauncherMetricsPortZeroServesNone) {
  const auto pod = render_pod(testing::example_job(), 0, PodOptions{"img", 0});
  const auto& trainer = pod["spec"]["containers"][0];
  EXPECT_EQ(count_env(trainer, "KUBEDIST_METRICS_PORT"), 0u);
  EXPECT_EQ(count_env(trainer, "KUBEDIST_METRICS_ADDR"), 0u);
  EXPECT_EQ(trainer["ports"].size(), 2u);
}

TEST(RenderPod, WrapsOnlyTheTrainerContainer) {
  json j = testing::example_job_json();
  auto& cs = j["spec"]["template"]["spec"]["containers"];
  cs.insert(cs.begin(), json{{"name", "proxy"}, {"image", "envoy"}, {"command", {"envoy"}}});
  const auto pod = render_pod(testing::job_from(j), 1, PodOptions{});
  EXPECT_EQ(pod["spec"]["containers"][0]["command"], json::array({"envoy"}));
  EXPECT_FALSE(pod["spec"]["containers"][0].contains("env"));
  EXPECT_EQ(pod["spec"]["containers"][1]["command"][0], kLauncherPath);
}

// spec.placement.onePodPerNode: the job's pods keep off each other's nodes, as a preference by default, beside the
// template's own anti-affinity terms.
TEST(RenderPod, SpreadsTheJobsPodsOverNodesAsThePlacementSays) {
  const json term = {{"labelSelector", {{"matchLabels", {{"kubedist.io/job-name", "resnet"}}}}},
                     {"topologyKey", "kubernetes.io/hostname"}};
  json tmpl = testing::example_job_json();
  const json own = {{"weight", 5}, {"podAffinityTerm", {{"topologyKey", "zone"}}}};
  tmpl["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] =
      json::array({own});
  const json by_default = render_pod(testing::job_from(tmpl), 1, PodOptions{})["spec"]["affinity"]["podAntiAffinity"];
  EXPECT_EQ(by_default["preferredDuringSchedulingIgnoredDuringExecution"],
            json::array({own, {{"weight", 100}, {"podAffinityTerm", term}}}));
  EXPECT_FALSE(by_default.contains("requiredDuringSchedulingIgnoredDuringExecution"));

  json required = testing::example_job_json();
  required["spec"]["placement"]["onePodPerNode"] = "Required";
  const json anti = render_pod(testing::job_from(required), 0, PodOptions{})["spec"]["affinity"]["podAntiAffinity"];
  EXPECT_EQ(anti, json({{"requiredDuringSchedulingIgnoredDuringExecution", json::array({term})}}));

  json off = testing::example_job_json();
  off["spec"]["placement"]["onePodPerNode"] = "None";
  EXPECT_FALSE(render_pod(testing::job_from(off), 0, PodOptions{})["spec"].contains("affinity"));
  // A template's affinity of another shape is left for the API server to refuse.
  json odd = testing::example_job_json();
  odd["spec"]["template"]["spec"]["affinity"] = "anywhere";
  EXPECT_EQ(render_pod(testing::job_from(odd), 0, PodOptions{})["spec"]["affinity"], "anywhere");
}

// spec.placement.topologyKey: every pod of the job, a spare as a member, prefers the domain the job runs in, beside
// the template's own pod affinity; nothing without the key, nothing for a pinned pod.
TEST(RenderPod, GathersTheJobsPodsInTheDomainOfItsTopologyKey) {
  const json term = {{"weight", 100},
                     {"podAffinityTerm",
                      {{"labelSelector", {{"matchLabels", {{"kubedist.io/job-name", "resnet"}}}}},
                       {"topologyKey", "kubedist.io/rack"}}}};
  json j = testing::example_job_json();
  j["spec"]["placement"]["topologyKey"] = "kubedist.io/rack";
  j["spec"]["spares"] = 1;
  const json own = {{"weight", 5}, {"podAffinityTerm", {{"topologyKey", "zone"}}}};
  j["spec"]["template"]["spec"]["affinity"]["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] =
      json::array({own});
  const auto job = testing::job_from(j);
  for (const int rank : {0, 3, contract::kSpareNodeRankBase}) {
    const json affinity = render_pod(job, rank, PodOptions{})["spec"]["affinity"];
    EXPECT_EQ(affinity["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"], json::array({own, term}))
        << rank;
    EXPECT_TRUE(affinity.contains("podAntiAffinity")) << "one pod per node stays";
  }
  EXPECT_FALSE(render_pod(testing::example_job(), 0, PodOptions{})["spec"]["affinity"].contains("podAffinity"));
  json pinned = j;
  pinned["spec"]["template"]["spec"]["nodeName"] = "gpu-1";
  EXPECT_EQ(render_pod(testing::job_from(pinned), 0, PodOptions{})["spec"]["affinity"]["podAffinity"]
                ["preferredDuringSchedulingIgnoredDuringExecution"],
            json::array({own}));
  json odd = j;
  odd["spec"]["template"]["spec"]["affinity"]["podAffinity"] = "close";
  EXPECT_EQ(render_pod(testing::job_from(odd), 0, PodOptions{})["spec"]["affinity"]["podAffinity"], "close");
}

TEST(NodeEnv, ElasticJobsGetMinMaxNnodes) {
  json j = testing::example_job_json();
  j["spec"]["minReplicas"] = 2;
  j["spec"]["maxReplicas"] = 8;
  j["spec"]["nprocPerNode"] = 4;
  auto job = testing::job_from(j);
  EXPECT_EQ(nnodes_value(job.spec), "2:8");
  auto env = node_env(job, 0);
  EXPECT_EQ(env[3], (std::pair<std::string, std::string>{"NNODES", "2:8"}));
  EXPECT_EQ(env[4], (std::pair<std::string, std::string>{"NPROC_PER_NODE", "4"}));
}

TEST(ProcsPerNode, FollowsNprocThenGpuThenCpuLimits) {
  json j = testing::example_job_json();
  EXPECT_EQ(procs_per_node(testing::job_from(j).spec), 8);  // auto: 8 GPUs
  j["spec"]["nprocPerNode"] = 3;
  EXPECT_EQ(procs_per_node(testing::job_from(j).spec), 3);
  j["spec"]["nprocPerNode"] = "cpu";
  EXPECT_EQ(procs_per_node(testing::job_from(j).spec), 1);  // no cpu limit
  j["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"] = "4";
  EXPECT_EQ(procs_per_node(testing::job_from(j).spec), 4);
  j["spec"]["nprocPerNode"] = "auto";
  j["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"].erase("nvidia.com/gpu");
  EXPECT_EQ(procs_per_node(testing::job_from(j).spec), 1);
}

}  // namespace
}  // namespace kubedist::trainingjob
