// What the plugin prints about a job, and the exit code `run` gives for it.
#include <gtest/gtest.h>

#include "kubectl/act/report.h"

namespace kubedist::kubectl {
namespace {

using nlohmann::json;

json failed_job() {
  return json::parse(R"({
    "metadata": {"name": "train-x", "namespace": "ns", "creationTimestamp": "2026-01-01T00:00:00Z"},
    "spec": {"replicas": 2, "minReplicas": 1, "maxReplicas": 2},
    "status": {"phase": "Failed", "readyReplicas": 0, "worldSize": 0, "restarts": 3,
               "restartsByReason": {"worker_crash": 2, "pod_failure": 1, "scale": 0},
               "startTime": "2026-01-01T00:00:05Z", "completionTime": "2026-01-01T00:01:10Z",
               "conditions": [{"type": "Failed", "status": "True", "reason": "PodFailed", "message": "pod x failed"}],
               "lastFailure": {"pod": "train-x-node-1", "node": "worker-0", "exitCode": 3, "reason": "Error",
                               "message": "rank 1 (local rank 1) on train-x-node-1 exited with code 3: ValueError: boom"}}
  })");
}

TEST(Report, RestartsByReasonSkipZeros) {
  EXPECT_EQ(restarts_text(failed_job()["status"]), "3 (pod_failure 1, worker_crash 2)");
  EXPECT_EQ(restarts_text(json::object()), "0");
}

TEST(Report, LastFailureNamesPodNodeCodeAndTheLaunchersLine) {
  EXPECT_EQ(last_failure_text(failed_job()["status"]),
            "pod train-x-node-1 on worker-0 exited with code 3 (Error): rank 1 (local rank 1) on train-x-node-1 "
            "exited with code 3: ValueError: boom");
  EXPECT_EQ(last_failure_text(json::object()), "");
}

TEST(Report, ExitCodeIsTheFailingWorkersWhenKnown) {
  json job = failed_job();
  EXPECT_EQ(exit_code_for(job), 3);
  job["status"]["lastFailure"].erase("exitCode");
  EXPECT_EQ(exit_code_for(job), 1);
  job["status"]["lastFailure"]["exitCode"] = 0;  // a pod that was deleted, say
  EXPECT_EQ(exit_code_for(job), 1);
  job["status"]["phase"] = "Succeeded";
  EXPECT_EQ(exit_code_for(job), 0);
}

TEST(Report, FinalReportSaysPhaseDurationRestartsAndWhy) {
  const std::string r = final_report(failed_job(), 4);
  EXPECT_NE(r.find("tj/train-x Failed after 1m5s: world size 4, restarts 3 (pod_failure 1, worker_crash 2)"),
            std::string::npos) << r;
  EXPECT_NE(r.find("failed: PodFailed: pod x failed"), std::string::npos) << r;
  EXPECT_NE(r.find("last failure: pod train-x-node-1"), std::string::npos) << r;
}

// status.progress as the operator writes it from the workers' reports (issue 21); timestamps and goodput's counters
// are not shown, the time left is counted from now.
TEST(Report, ProgressWhenTheJobReportsIt) {
  const UnixSeconds now = *parse_rfc3339("2026-01-01T00:10:00Z");
  EXPECT_EQ(progress_text(json::object(), now), "");
  json st = json::parse(R"j({"progress": {"step": 40, "totalSteps": 100, "percent": 40, "summary": "40% (40/100)",
      "epoch": 2, "samples": 1280, "stepsPerSecond": 3.1, "metrics": {"loss": 0.41},
      "lastStepTime": "2026-01-01T00:09:59Z", "estimatedCompletionTime": "2026-01-01T00:10:20Z",
      "slowestRank": {"rank": 3, "pod": "train-x-node-1", "node": "worker-1", "stepSeconds": 0.5, "ratio": 1.83},
      "startedAt": "2026-01-01T00:00:00Z", "productiveSeconds": 582, "lostSeconds": 18, "goodput": 0.97}})j");
  EXPECT_EQ(progress_text(st, now),
            "40% (40/100), epoch 2, 3.100 steps/s, loss 0.4100, eta 20s, slowest rank 3 on train-x-node-1 (1.8x the "
            "others' step time), goodput 97%");
  // Without a total: steps only; an estimate already past is not shown.
  json bare = {{"progress", {{"step", 7}, {"estimatedCompletionTime", "2026-01-01T00:09:00Z"}}}};
  EXPECT_EQ(progress_text(bare, now), "step 7");
  EXPECT_EQ(progress_text(json{{"progress", "garbage"}}, now), "");
}

TEST(Report, StatusShowsNodesConditionsAndAPodTable) {
  json pod = json::parse(R"({"metadata": {"name": "train-x-node-1", "labels": {"kubedist.io/node-rank": "1"},
      "creationTimestamp": "2026-01-01T00:00:00Z"}, "spec": {"nodeName": "worker-0"},
      "status": {"phase": "Failed", "podIP": "10.244.0.3", "containerStatuses": [{"name": "trainer",
      "state": {"terminated": {"exitCode": 3}}}]}})");
  const std::string s = status_report(failed_job(), {pod}, 90 + *parse_rfc3339("2026-01-01T00:00:00Z"));
  EXPECT_NE(s.find("TrainingJob train-x in ns: Failed (age 1m30s)"), std::string::npos) << s;
  EXPECT_NE(s.find("0/2 running (elastic 1..2)"), std::string::npos) << s;
  EXPECT_NE(s.find("restarts:     3 (pod_failure 1, worker_crash 2)"), std::string::npos) << s;
  EXPECT_NE(s.find("condition:    Failed=True PodFailed: pod x failed"), std::string::npos) << s;
  EXPECT_EQ(s.find("progress:"), std::string::npos) << s;  // the job reported none
  json job = failed_job();
  job["status"]["progress"] = {{"step", 5}, {"summary", "step 5"}};
  EXPECT_NE(status_report(job, {pod}, 0).find("  progress:     step 5\n"), std::string::npos);
  EXPECT_NE(s.find("POD"), std::string::npos);
  EXPECT_NE(s.find("train-x-node-1   1           Failed   worker-0   10.244.0.3   3      1m30s"), std::string::npos) << s;
}

TEST(Report, ListTable) {
  const std::string t = list_table({failed_job()}, 3600 + *parse_rfc3339("2026-01-01T00:00:00Z"));
  EXPECT_EQ(t, "NAME      PHASE    NODES   WORLD   RESTARTS   AGE\n"
               "train-x   Failed   0/2     0       3          1h\n");
}

TEST(Report, LogLinesKeepRankPrefixesAndNameTheNodeOtherwise) {
  EXPECT_EQ(log_line(1, false, "[rank 2]: epoch 1"), "[rank 2]: epoch 1");
  EXPECT_EQ(log_line(1, false, "kubedist-launcher: joined"), "[node 1] kubedist-launcher: joined");
  EXPECT_EQ(log_line(0, true, "Successfully installed x"), "[node 0 setup] Successfully installed x");
  EXPECT_EQ(human_duration(3725), "1h2m");
  EXPECT_EQ(human_duration(59), "59s");
}

}  // namespace
}  // namespace kubedist::kubectl
