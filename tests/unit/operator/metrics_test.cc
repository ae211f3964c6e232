// The operator's metrics: status transitions counted once, per-job series that go with the job, the exposition.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "kube/client.h"
#include "metrics/operator_metrics.h"
#include "trainingjob/act/job_metrics.h"
#include "trainingjob/decide/status.h"
#include "trainingjob/kueue/decide.h"

namespace kubedist::trainingjob {
namespace {

using metrics::OperatorMetrics;

TrainingJob job(const std::string& ns, const std::string& name, Status status = {}) {
  TrainingJob j;
  j.ns = ns;
  j.name = name;
  j.status = std::move(status);
  return j;
}

Status running(int pod_failures = 0, int worker_crashes = 0) {
  Status s;
  s.phase = JobPhase::kRunning;
  s.ready_replicas = 2;
  s.world_size = 16;
  set_condition(s, ConditionType::kCreated, true, "PodsCreated", "", 1000);
  set_condition(s, ConditionType::kRunning, true, "AllNodesRunning", "", 1000);
  if (pod_failures > 0) s.restarts_by_reason[kRestartPodFailure] = pod_failures;
  if (worker_crashes > 0) s.restarts_by_reason[kRestartWorkerCrash] = worker_crashes;
  s.restarts = pod_failures + worker_crashes;
  return s;
}

bool has_line(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

TEST(StatusTransition, CountsCreatedOnceWhenTheCreatedConditionTurnsTrue) {
  Status pending;
  pending.phase = JobPhase::kPending;
  Status created = pending;
  set_condition(created, ConditionType::kCreated, true, "PodsCreated", "", 1000);
  EXPECT_TRUE(status_transition(Spec{}, pending, created).created);
  EXPECT_FALSE(status_transition(Spec{}, created, created).created);
  EXPECT_FALSE(status_transition(Spec{}, created, running()).created);
}

TEST(StatusTransition, CountsOnlyThePositiveIncreaseOfEachRestartReason) {
  const auto t = status_transition(Spec{}, running(1, 2), running(3, 2));
  EXPECT_EQ(t.restarts, (std::map<std::string, int>{{kRestartPodFailure, 2}}));
  EXPECT_TRUE(status_transition(Spec{}, running(3, 2), running(1, 2)).restarts.empty()) << "a decrease is no restart";
  EXPECT_EQ(status_transition(Spec{}, Status{}, running(0, 1)).restarts.at(kRestartWorkerCrash), 1);
}

TEST(StatusTransition, CountsTerminalPhasesWhenTheyAreReached) {
  Status failed = running();
  failed.phase = JobPhase::kFailed;
  Status succeeded = running();
  succeeded.phase = JobPhase::kSucceeded;
  EXPECT_TRUE(status_transition(Spec{}, running(), failed).failed);
  EXPECT_FALSE(status_transition(Spec{}, failed, failed).failed);
  EXPECT_TRUE(status_transition(Spec{}, running(), succeeded).succeeded);
  EXPECT_FALSE(status_transition(Spec{}, succeeded, succeeded).succeeded);
  EXPECT_FALSE(status_transition(Spec{}, running(), succeeded).failed);
}

TEST(StatusTransition, RecoveryIsFromRestartingTrueToRunningAgain) {
  Status restarting = running(1);
  restarting.phase = JobPhase::kRestarting;
  set_condition(restarting, ConditionType::kRestarting, true, "PodFailed", "", 2000);
  Status again = restarting;
  again.phase = JobPhase::kRunning;
  set_condition(again, ConditionType::kRestarting, false, "AllNodesRunning", "", 2007);
  EXPECT_EQ(status_transition(Spec{}, restarting, again).recovery_seconds, 7.0);
  EXPECT_FALSE(status_transition(Spec{}, again, again).recovery_seconds.has_value());
  EXPECT_FALSE(status_transition(Spec{}, running(), restarting).recovery_seconds.has_value());
}

TEST(JobMetrics, ExposesEveryReasonAtZeroFromTheFirstSightOfAJob) {
  OperatorMetrics m;
  JobMetrics jm(m);
  jm.seen(job("ns1", "a", running()));
  const std::string text = m.render();
  for (const char* reason : {"worker_crash", "pod_failure", "node_lost", "scale"}) {
    EXPECT_TRUE(has_line(text, std::string("kubedist_restarts_total{job_name=\"a\",job_namespace=\"ns1\",reason=\"") +
                                   reason + "\"} 0"))
        << reason << "\n" << text;
  }
  EXPECT_TRUE(has_line(text, "kubedist_jobs_created_total{job_namespace=\"ns1\"} 0")) << text;
  EXPECT_TRUE(has_line(text, "kubedist_jobs_failed_total{job_namespace=\"ns1\"} 0")) << text;
  EXPECT_TRUE(has_line(text, "kubedist_job_phase{job_name=\"a\",job_namespace=\"ns1\",phase=\"Running\"} 1")) << text;
  EXPECT_TRUE(has_line(text, "kubedist_job_phase{job_name=\"a\",job_namespace=\"ns1\",phase=\"Pending\"} 0")) << text;
  EXPECT_TRUE(has_line(text, "kubedist_job_world_size{job_name=\"a\",job_namespace=\"ns1\"} 16")) << text;
  EXPECT_TRUE(has_line(text, "kubedist_job_nodes{job_name=\"a\",job_namespace=\"ns1\"} 2")) << text;
}

TEST(JobMetrics, ARestartedOperatorDoesNotCountRestartsAlreadyInStatus) {
  // The first operator counted 3 pod failures; a new one starts and sees the job with them in status.
  OperatorMetrics m;
  JobMetrics jm(m);
  const TrainingJob j = job("ns1", "a", running(3));
  jm.seen(j);
  std::string text = m.render();
  EXPECT_TRUE(has_line(text, "kubedist_restarts_total{job_name=\"a\",job_namespace=\"ns1\",reason=\"pod_failure\"} 0"))
      << text;
  EXPECT_TRUE(has_line(text, "kubedist_jobs_created_total{job_namespace=\"ns1\"} 0")) << text;
  // Its own first write adds one more pod failure: only that one is counted.
  jm.written(j, running(4));
  text = m.render();
  EXPECT_TRUE(has_line(text, "kubedist_restarts_total{job_name=\"a\",job_namespace=\"ns1\",reason=\"pod_failure\"} 1"))
      << text;
}

TEST(JobMetrics, CountsWritesFromCreationToFailure) {
  OperatorMetrics m;
  JobMetrics jm(m);
  Status pending;
  pending.phase = JobPhase::kPending;
  jm.written(job("ns1", "a"), pending);
  jm.written(job("ns1", "a", pending), running());
  jm.written(job("ns1", "a", running()), running(1));
  jm.written(job("ns1", "a", running(1)), running(1, 1));
  Status failed = running(1, 1);
  failed.phase = JobPhase::kFailed;
  jm.written(job("ns1", "a", running(1, 1)), failed);
  const std::string text = m.render();
  EXPECT_TRUE(has_line(text, "kubedist_jobs_created_total{job_namespace=\"ns1\"} 1")) << text;
  EXPECT_TRUE(has_line(text, "kubedist_jobs_failed_total{job_namespace=\"ns1\"} 1")) << text;
  EXPECT_TRUE(has_line(text, "kubedist_jobs_succeeded_total{job_namespace=\"ns1\"} 0")) << text;
  EXPECT_TRUE(has_line(text, "kubedist_restarts_total{job_name=\"a\",job_namespace=\"ns1\",reason=\"pod_failure\"} 1"))
      << text;
  EXPECT_TRUE(has_line(text, "kubedist_restarts_total{job_name=\"a\",job_namespace=\"ns1\",reason=\"worker_crash\"} 1"))
      << text;
  EXPECT_TRUE(has_line(text, "kubedist_job_phase{job_name=\"a\",job_namespace=\"ns1\",phase=\"Failed\"} 1")) << text;
  EXPECT_TRUE(has_line(text, "kubedist_job_phase{job_name=\"a\",job_namespace=\"ns1\",phase=\"Running\"} 0")) << text;
}

TEST(JobMetrics, ForgetRemovesEveryPerJobSeriesAndKeepsTheOthers) {
  OperatorMetrics m;
  JobMetrics jm(m);
  Status restarting = running(1);
  restarting.phase = JobPhase::kRestarting;
  set_condition(restarting, ConditionType::kRestarting, true, "PodFailed", "", 2000);
  Status again = restarting;
  again.phase = JobPhase::kRunning;
  set_condition(again, ConditionType::kRestarting, false, "AllNodesRunning", "", 2003);
  jm.written(job("ns1", "a", restarting), again);
  jm.seen(job("ns1", "b", running()));
  std::string text = m.render();
  EXPECT_TRUE(has_line(text, "kubedist_job_last_recovery_seconds{job_name=\"a\",job_namespace=\"ns1\"} 3")) << text;
  jm.forget("ns1", "a");
  text = m.render();
  EXPECT_EQ(text.find("job_name=\"a\""), std::string::npos) << text;
  EXPECT_NE(text.find("job_name=\"b\""), std::string::npos) << text;
  EXPECT_TRUE(has_line(text, "kubedist_jobs_created_total{job_namespace=\"ns1\"} 0")) << text;
  jm.forget("ns1", "never-seen");  // harmless
}

TEST(JobMetrics, AQueuedJobWaitsForAdmissionUntilKueueAdmitsIt) {
  OperatorMetrics m;
  JobMetrics jm(m);
  Status queued;
  queued.phase = JobPhase::kSuspended;
  set_condition(queued, kAdmitted, false, "Pending", "waiting for admission by LocalQueue team", 1000);
  jm.seen(job("ns1", "q", queued));
  jm.seen(job("ns1", "plain", running()));
  std::string text = m.render();
  EXPECT_TRUE(has_line(text, "kubedist_job_waiting_for_admission{job_name=\"q\",job_namespace=\"ns1\"} 1")) << text;
  EXPECT_EQ(text.find("kubedist_job_waiting_for_admission{job_name=\"plain\""), std::string::npos) << text;

  Status admitted = queued;
  admitted.phase = JobPhase::kPending;
  set_condition(admitted, kAdmitted, true, "Admitted", "admitted by ClusterQueue gpus", 1042);
  EXPECT_EQ(status_transition(Spec{}, queued, admitted).admission_wait_seconds, 42.0);
  EXPECT_FALSE(status_transition(Spec{}, admitted, admitted).admission_wait_seconds.has_value());
  jm.written(job("ns1", "q", queued), admitted);
  text = m.render();
  EXPECT_TRUE(has_line(text, "kubedist_job_waiting_for_admission{job_name=\"q\",job_namespace=\"ns1\"} 0")) << text;
  EXPECT_TRUE(has_line(text, "kubedist_job_last_admission_wait_seconds{job_name=\"q\",job_namespace=\"ns1\"} 42")) << text;
  EXPECT_TRUE(has_line(text, "kubedist_admission_wait_seconds_count{job_namespace=\"ns1\"} 1")) << text;
  EXPECT_TRUE(has_line(text, "kubedist_admission_wait_seconds_bucket{job_namespace=\"ns1\",le=\"60\"} 1")) << text;
  EXPECT_TRUE(has_line(text, "kubedist_admission_wait_seconds_bucket{job_namespace=\"ns1\",le=\"30\"} 0")) << text;
  jm.forget("ns1", "q");
  EXPECT_EQ(m.render().find("job_name=\"q\""), std::string::npos);
}

TEST(StatusTransition, AnElasticTargetChangeIsAScaleDecision) {
  Spec spec;
  spec.replicas = 3;
  Status full = running(), shrunk = running();
  shrunk.elastic.target_replicas = 2;
  EXPECT_EQ(status_transition(spec, full, shrunk).scaled, -1);
  EXPECT_EQ(status_transition(spec, shrunk, full).scaled, 1);
  EXPECT_EQ(status_transition(spec, shrunk, shrunk).scaled, 0);
  Status same = running();
  same.elastic.target_replicas = 3;  // set, but what spec.replicas says anyway
  EXPECT_EQ(status_transition(spec, full, same).scaled, 0);
  EXPECT_EQ(target_nodes(spec, full), 3);
  EXPECT_EQ(target_nodes(spec, shrunk), 2);
}

TEST(JobMetrics, ShowsTheTargetAndCountsScaleDecisions) {
  OperatorMetrics m;
  JobMetrics jm(m);
  TrainingJob j = job("ns1", "e", running());
  j.spec.replicas = 3;
  jm.seen(j);
  std::string text = m.render();
  EXPECT_TRUE(has_line(text, "kubedist_job_target_nodes{job_name=\"e\",job_namespace=\"ns1\"} 3")) << text;
  EXPECT_TRUE(has_line(text, "kubedist_scale_decisions_total{direction=\"down\",job_name=\"e\",job_namespace=\"ns1\"} 0"))
      << text;
  Status shrunk = running();
  shrunk.elastic.target_replicas = 2;
  jm.written(j, shrunk);
  j.status = shrunk;
  jm.written(j, running());
  text = m.render();
  EXPECT_TRUE(has_line(text, "kubedist_job_target_nodes{job_name=\"e\",job_namespace=\"ns1\"} 3")) << text;
  EXPECT_TRUE(has_line(text, "kubedist_scale_decisions_total{direction=\"down\",job_name=\"e\",job_namespace=\"ns1\"} 1"))
      << text;
  EXPECT_TRUE(has_line(text, "kubedist_scale_decisions_total{direction=\"up\",job_name=\"e\",job_namespace=\"ns1\"} 1"))
      << text;
  jm.forget("ns1", "e");
  EXPECT_EQ(m.render().find("job_name=\"e\""), std::string::npos);
}

TEST(JobMetrics, MakesNoSeriesForAnObjectThatCouldNotBeParsed) {
  OperatorMetrics m;
  JobMetrics jm(m);
  jm.seen(TrainingJob{});
  jm.written(TrainingJob{}, running(1));
  const std::string text = m.render();
  EXPECT_EQ(text.find("job_namespace="), std::string::npos) << text;
}

// The per-job series are written by the operator itself (a few numbers a job instead of prometheus-cpp's objects):
// every line is the one prometheus-cpp's serializer writes for the same series, escaping and number format included.
TEST(OperatorMetrics, PerJobSeriesAreTheLinesPrometheusCppWouldWrite) {
  OperatorMetrics m;
  const std::string odd = "we\"ird\\na\nme";
  m.job_state("ns1", odd, 3, 4, 12, "Running");
  m.restarts("ns1", odd, "worker_crash", 2);
  m.restarts("ns1", odd, "a_new_reason", 1);
  m.job_recovery("ns1", odd, 2.5);
  m.job_progress("ns2", "b", 12345678901, 0.1234567, 1.8e9, std::nullopt);
  m.scale_decision("ns2", "b", "up");

  prometheus::Registry reg;
  const auto labels = [](const std::string& ns, const std::string& name) {
    return prometheus::Labels{{"job_namespace", ns}, {"job_name", name}};
  };
  auto& restarts = prometheus::BuildCounter().Name("kubedist_restarts_total").Help("h").Register(reg);
  auto& nodes = prometheus::BuildGauge().Name("kubedist_job_nodes").Help("h").Register(reg);
  auto& phase = prometheus::BuildGauge().Name("kubedist_job_phase").Help("h").Register(reg);
  auto& scale = prometheus::BuildCounter().Name("kubedist_scale_decisions_total").Help("h").Register(reg);
  auto& recovery = prometheus::BuildGauge().Name("kubedist_job_last_recovery_seconds").Help("h").Register(reg);
  auto& step = prometheus::BuildGauge().Name("kubedist_job_step").Help("h").Register(reg);
  auto& rate = prometheus::BuildGauge().Name("kubedist_job_steps_per_second").Help("h").Register(reg);
  auto with = [&](prometheus::Labels l, const char* k, const char* v) {
    l[k] = v;
    return l;
  };
  restarts.Add(with(labels("ns1", odd), "reason", "worker_crash")).Increment(2);
  restarts.Add(with(labels("ns1", odd), "reason", "a_new_reason")).Increment(1);
  restarts.Add(with(labels("ns2", "b"), "reason", "hang"));
  nodes.Add(labels("ns1", odd)).Set(3);
  phase.Add(with(labels("ns1", odd), "phase", "Running")).Set(1);
  phase.Add(with(labels("ns1", odd), "phase", "Failed")).Set(0);
  scale.Add(with(labels("ns2", "b"), "direction", "up")).Increment();
  recovery.Add(labels("ns1", odd)).Set(2.5);
  step.Add(labels("ns2", "b")).Set(12345678901);
  rate.Add(labels("ns2", "b")).Set(0.1234567);
  std::ostringstream theirs;
  prometheus::TextSerializer().Serialize(theirs, reg.Collect());

  const std::string ours = m.render();
  std::istringstream lines(theirs.str());
  int compared = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    EXPECT_TRUE(has_line(ours, line)) << line << "\n---\n" << ours;
    ++compared;
  }
  EXPECT_EQ(compared, 10);
  // A family's header once, and no series for what a job never had (goodput, an ETA unknown).
  EXPECT_EQ(ours.find("# TYPE kubedist_job_phase gauge"), ours.rfind("# TYPE kubedist_job_phase gauge"));
  EXPECT_EQ(ours.find("kubedist_job_goodput"), std::string::npos) << ours;
  EXPECT_TRUE(has_line(ours, "kubedist_job_estimated_completion_timestamp_seconds{job_name=\"b\",job_namespace=\"ns2\"} 1800000000"))
      << ours;
}

TEST(OperatorMetrics, ExposesControllerAndApiMetrics) {
  OperatorMetrics m;
  m.api_request("list", 200);
  m.api_request("list", 200);
  m.api_request("patch", 409);
  m.workqueue_depth(3);
  m.workqueue_retry();
  m.reconcile_duration(0.002);
  const std::string text = m.render();
  EXPECT_TRUE(has_line(text, "kubedist_api_requests_total{code=\"200\",verb=\"list\"} 2")) << text;
  EXPECT_TRUE(has_line(text, "kubedist_api_requests_total{code=\"409\",verb=\"patch\"} 1")) << text;
  EXPECT_TRUE(has_line(text, "kubedist_workqueue_depth 3")) << text;
  EXPECT_TRUE(has_line(text, "kubedist_workqueue_retries_total 1")) << text;
  EXPECT_TRUE(has_line(text, "kubedist_reconcile_duration_seconds_count 1")) << text;
  EXPECT_TRUE(has_line(text, "kubedist_reconcile_duration_seconds_bucket{le=\"0.0025\"} 1")) << text;
  EXPECT_TRUE(has_line(text, "kubedist_reconcile_duration_seconds_bucket{le=\"0.001\"} 0")) << text;
  EXPECT_NE(text.find("# TYPE kubedist_reconcile_duration_seconds histogram"), std::string::npos);
}

TEST(RequestVerb, NamesTheKubernetesVerbOfEachRequest) {
  const struct {
    const char* method;
    const char* path;
    const char* verb;
  } cases[] = {
      {"GET", "/api/v1/namespaces/ns/pods?labelSelector=kubedist.io%2Fjob-name", "list"},
      {"GET", "/api/v1/pods?labelSelector=x&limit=500", "list"},
      {"GET", "/api/v1/namespaces/ns/pods?watch=1&resourceVersion=5", "watch"},
      {"GET", "/apis/kubedist.io/v1alpha1/trainingjobs?allowWatchBookmarks=true&watch=1", "watch"},
      {"GET", "/apis/kubedist.io/v1alpha1/namespaces/ns/trainingjobs/j", "get"},
      {"GET", "/apis/kubedist.io/v1alpha1/namespaces/ns/trainingjobs", "list"},
      {"GET", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/kubedist-operator", "get"},
      {"GET", "/api/v1/namespaces/ns", "get"},
      {"GET", "/api/v1/namespaces", "list"},
      {"GET", "/api/v1/nodes/n1", "get"},
      {"POST", "/api/v1/namespaces/ns/pods", "create"},
      {"PUT", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l", "update"},
      {"PATCH", "/apis/kubedist.io/v1alpha1/namespaces/ns/trainingjobs/j/status", "patch"},
      {"DELETE", "/api/v1/namespaces/ns/pods/p", "delete"},
  };
  for (const auto& c : cases) EXPECT_EQ(kube::request_verb(c.method, c.path), c.verb) << c.method << " " << c.path;
}

}  // namespace
}  // namespace kubedist::trainingjob
