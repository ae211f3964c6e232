// spec.spares: spare pods made, kept apart from the members, standing in for a lost member's rank, made again.
#include <gtest/gtest.h>

#include <algorithm>

#include "test_jobs.h"
#include "test_plans.h"
#include "trainingjob/decide/plan.h"
#include "trainingjob/decide/spares.h"

namespace kubedist::trainingjob {
namespace {

using nlohmann::json;

constexpr UnixSeconds kNow = 1'800'000'000;

TrainingJob job_with_spares(int spares) {
  json j = testing::example_job_json();
  j["spec"]["spares"] = spares;
  return testing::job_from(j);
}

PodFacts member(int rank) {
  PodFacts p = testing::example_pod(rank, "Running");
  p.node_name = "n" + std::to_string(rank);
  return p;
}

PodFacts spare(int index, const std::string& phase = "Running") {
  PodFacts p = testing::example_pod(10000 + index, phase);
  p.name = "resnet-spare-" + std::to_string(index);
  p.uid = "spare-" + std::to_string(index);
  p.node_name = "s" + std::to_string(index);
  return p;
}

LauncherReport report(std::vector<int> spares, std::map<int, int> stand_ins, int lost = 0) {
  LauncherReport r;
  r.pod_uid = "pod-0";
  r.round = 1;
  r.restarts = lost;
  r.restarts_by_reason = {{"worker_crash", 0}, {"node_lost", lost}, {"scale", 0}};
  r.nodes = 4;
  r.world_size = 32;
  r.phase = "running";
  r.run_id = "resnet";
  r.spares = std::move(spares);
  r.stand_ins = std::move(stand_ins);
  return r;
}

Observed observed(std::vector<PodFacts> pods, std::optional<LauncherReport> launcher = std::nullopt) {
  Observed o;
  o.pods = std::move(pods);
  o.service_exists = true;
  o.nodes_watched = true;
  for (const auto& p : o.pods) o.nodes.push_back(NodeFacts{p.node_name, true, "", false, ""});
  o.node_lost_grace_s = 60;
  o.launcher = std::move(launcher);
  return o;
}

std::map<std::string, std::string> env_of(const Write& pod) {
  std::map<std::string, std::string> env;
  for (const auto& e : pod.body["spec"]["containers"][0]["env"]) env[e["name"]] = e.value("value", "");
  return env;
}

// A job of 4 members and 2 spares, all running, as written after a pass that saw them so.
TrainingJob running(std::vector<PodFacts>& pods) {
  auto job = job_with_spares(2);
  pods = {member(0), member(1), member(2), member(3), spare(0), spare(1)};
  job.status = decide(job, observed(pods, report({10000, 10001}, {})), kNow).status;
  EXPECT_EQ(job.status.phase, JobPhase::kRunning);
  return job;
}

TEST(Spares, ANewJobMakesItsSparesBesideItsMembersEachAskedToWait) {
  const Plan p = decide(job_with_spares(2), {}, false, kNow);
  EXPECT_EQ(p.create_ranks, (std::vector<int>{0, 1, 2, 3, 10000, 10001}));
  const auto pods = testing::writes(p, Write::Verb::kCreate, "Pod");
  ASSERT_EQ(pods.size(), 6u);
  EXPECT_EQ(pods[4].name, "resnet-spare-0");
  EXPECT_EQ(env_of(pods[4])["KUBEDIST_SPARE"], "1");
  EXPECT_EQ(env_of(pods[4])["NODE_RANK"], "10000");
  EXPECT_EQ(env_of(pods[4])["NNODES"], "4");
  EXPECT_EQ(env_of(pods[1]).count("KUBEDIST_SPARE"), 0u);
  EXPECT_EQ(pods[5].body["spec"]["hostname"], "resnet-spare-1");
}

TEST(Spares, RunningSparesAreNoReplicasAndTheReadyOnesAreCounted) {
  std::vector<PodFacts> pods;
  auto job = running(pods);
  EXPECT_EQ(job.status.replicas, 4);
  EXPECT_EQ(job.status.ready_replicas, 4);
  EXPECT_EQ(job.status.spares, 2);
  EXPECT_EQ(job.status.spares_ready, 2);
  const Plan p = decide(job, observed(pods, report({10001}, {})), kNow + 5);
  EXPECT_TRUE(p.create_ranks.empty());
  EXPECT_TRUE(p.delete_pods.empty());
  EXPECT_EQ(p.status.spares_ready, 1);
  EXPECT_EQ(p.status.phase, JobPhase::kRunning);
}

TEST(Spares, ASpareHoldsTheRankItTookAndANewSpareIsMadeInsteadOfTheLostPod) {
  std::vector<PodFacts> pods;
  auto job = running(pods);
  Observed o = observed(pods, report({10001}, {{2, 10000}}, 1));
  o.nodes.erase(o.nodes.begin() + 2);  // node n2 is gone
  o.nodes_gone.insert("n2");
  Plan p = decide(job, o, kNow + 5);
  EXPECT_EQ(p.delete_pods, (std::vector<PodDeletion>{{"resnet-node-2", "pod-2", true}}));
  EXPECT_EQ(p.create_ranks, (std::vector<int>{10002})) << "a new spare, not rank 2 again";
  EXPECT_TRUE(testing::has_event(p, "SpareStoodIn"));
  EXPECT_EQ(p.status.stand_ins, (std::map<int, int>{{2, 10000}}));
  EXPECT_EQ(p.status.spares, 1);
  EXPECT_EQ(p.status.restarts_by_reason["node_lost"], 1) << "one loss, counted once";
  // The lost pod gone, node 0 not answering this time: the place stays the stand-in's, nothing is made again.
  job.status = p.status;
  pods.erase(pods.begin() + 2);
  pods.push_back(spare(2, "Pending"));
  p = decide(job, observed(pods), kNow + 10);
  EXPECT_TRUE(p.create_ranks.empty());
  EXPECT_TRUE(p.delete_pods.empty());
  EXPECT_FALSE(testing::has_event(p, "SpareStoodIn"));
  EXPECT_EQ(p.status.spares, 2);
  EXPECT_EQ(p.status.replicas, 4);
}

TEST(Spares, ARankLostWhileASpareWaitsIsLeftToTheSpareNotMadeAgain) {
  std::vector<PodFacts> pods;
  auto job = running(pods);
  pods.erase(pods.begin() + 2);  // gone before node 0's rendezvous re-formed the group
  LauncherReport r = report({10000, 10001}, {}, 1);
  r.lost_nodes = {2};
  r.phase = "gathering";
  Plan p = decide(job, observed(pods, r), kNow + 5);
  EXPECT_TRUE(p.create_ranks.empty()) << "the spare takes node rank 2's place at the next round";
  r.spares = {};  // no spare waits (none ready): the rank is made again
  p = decide(job, observed(pods, r), kNow + 6);
  EXPECT_EQ(p.create_ranks, (std::vector<int>{2}));
}

TEST(Spares, TheLostMemberBackWaitsAsASpareAndTheSurplusSpareGoes) {
  std::vector<PodFacts> pods;
  auto job = running(pods);
  job.status.stand_ins = {{2, 10000}};
  // Node 2's pod came back (its node was only cut off); the spare pods are resnet-spare-1 and -2.
  pods = {member(0), member(1), member(2), member(3), spare(0), spare(1), spare(2)};
  const Plan p = decide(job, observed(pods, report({2, 10002}, {{2, 10000}})), kNow + 5);
  EXPECT_EQ(p.delete_pods, (std::vector<PodDeletion>{{"resnet-spare-1", "spare-1", false}}))
      << "the ones node 0 reports waiting are kept";
  EXPECT_TRUE(testing::has_event(p, "SparesDeleted"));
  EXPECT_EQ(p.status.spares, 2);
  EXPECT_EQ(p.status.replicas, 4);
  EXPECT_TRUE(p.create_ranks.empty());
}

TEST(Spares, WhichSparesWaitIsTakenOnlyFromTheReportOfTheNodeZeroThatRunsNow) {
  std::vector<PodFacts> pods;
  auto job = running(pods);
  pods = {member(0), member(1), member(2), member(3), spare(0), spare(1), spare(2)};
  // Node 0 says resnet-spare-2 waits and resnet-spare-0 does not: spare-0 goes (one too many).
  LauncherReport now = report({10001, 10002}, {});
  EXPECT_EQ(decide(job, observed(pods, now), kNow + 5).delete_pods,
            (std::vector<PodDeletion>{{"resnet-spare-0", "spare-0", false}}));
  // The same report from the pod that was node 0 before (replaced since): nothing known, the highest goes.
  LauncherReport stale = now;
  stale.pod_uid = "an-earlier-node-0";
  const Plan p = decide(job, observed(pods, stale), kNow + 5);
  EXPECT_EQ(p.delete_pods, (std::vector<PodDeletion>{{"resnet-spare-2", "spare-2", false}}));
  EXPECT_EQ(p.status.spares_ready, 2) << "as last written, of the spares still there";
}

TEST(Spares, FewerSparesDeletesTheWaitingOnesButNeverAStandIn) {
  std::vector<PodFacts> pods;
  auto job = running(pods);
  job.spec.spares = 0;
  const Plan p = decide(job, observed(pods, report({10001}, {{3, 10000}})), kNow + 5);
  std::vector<std::string> deleted;
  for (const auto& d : p.delete_pods) deleted.push_back(d.name);
  std::sort(deleted.begin(), deleted.end());
  EXPECT_EQ(deleted, (std::vector<std::string>{"resnet-node-3", "resnet-spare-1"}));
  EXPECT_EQ(p.status.spares, 0);
  EXPECT_EQ(p.status.stand_ins, (std::map<int, int>{{3, 10000}}));
}

TEST(Spares, AFailedSpareIsReplacedUnderAnotherName) {
  std::vector<PodFacts> pods;
  auto job = running(pods);
  pods[5].phase = "Failed";
  const Plan p = decide(job, observed(pods, report({10000}, {})), kNow + 5);
  EXPECT_EQ(p.delete_pods, (std::vector<PodDeletion>{{"resnet-spare-1", "spare-1", false}}));
  EXPECT_EQ(p.create_ranks, (std::vector<int>{10002}));
  EXPECT_TRUE(testing::has_event(p, "SpareFailed"));
  EXPECT_EQ(p.status.phase, JobPhase::kRunning) << "a spare's failure restarts nothing";
}

TEST(Spares, ALostSpareIsReplacedWithoutCountingALossOfTheJob) {
  std::vector<PodFacts> pods;
  auto job = running(pods);
  Observed o = observed(pods, report({10000}, {}));
  o.nodes.erase(o.nodes.begin() + 5);  // spare 1's node is gone
  o.nodes_gone.insert("s1");
  const Plan p = decide(job, o, kNow + 5);
  EXPECT_EQ(p.delete_pods, (std::vector<PodDeletion>{{"resnet-spare-1", "spare-1", true}}));
  EXPECT_EQ(p.create_ranks, (std::vector<int>{10002}));
  EXPECT_EQ(p.status.restarts, 0);
  EXPECT_EQ(p.status.phase, JobPhase::kRunning);
}

TEST(Spares, ANodeGoesAwayByATerminationTaintNotReadyOrCordoned) {
  using contract::ReleaseWhy;
  NodeFacts n{"n1", true, "", false, ""};
  EXPECT_EQ(node_going_away(n), std::nullopt);
  n.taints = json::array({{{"key", "example.com/gpu"}, {"effect", "NoSchedule"}}});
  EXPECT_EQ(node_going_away(n), std::nullopt) << "a taint of the cluster's own";
  for (const std::string key : {"cloud.google.com/impending-node-termination", "ToBeDeletedByClusterAutoscaler",
                                "karpenter.sh/disrupted", "karpenter.sh/disruption",
                                "node.cloudprovider.kubernetes.io/shutdown", "aws-node-termination-handler/spot-itn",
                                "aws-node-termination-handler/scheduled-maintenance"}) {
    NodeFacts t = n;
    t.taints.push_back({{"key", key}, {"effect", "NoSchedule"}});
    EXPECT_EQ(node_going_away(t), ReleaseWhy::kTerminationNotice) << key;
  }
  NodeFacts out = n;
  out.out_of_service = true;
  EXPECT_EQ(node_going_away(out), ReleaseWhy::kTerminationNotice);
  NodeFacts cordoned = n;
  cordoned.unschedulable = true;
  EXPECT_EQ(node_going_away(cordoned), ReleaseWhy::kCordoned);
  cordoned.ready = false;
  EXPECT_EQ(node_going_away(cordoned), ReleaseWhy::kNotReady);
}

TEST(Spares, AMemberOnANodeGoingAwayIsReleasedWhileASpareOnANodeThatStaysWaits) {
  std::vector<PodFacts> pods;
  auto job = running(pods);
  Observed o = observed(pods, report({10000, 10001}, {}));
  o.nodes[2].unschedulable = true;  // n2 drained
  o.nodes[0].ready = false;         // node 0's own node: it hosts the rendezvous, nothing stands in for it
  Plan p = decide(job, o, kNow + 5);
  EXPECT_EQ(p.releases, (std::vector<RendezvousRelease>{
                            {{2, contract::ReleaseWhy::kCordoned}, "resnet-node-2", "pod-2", "n2"}}));
  EXPECT_TRUE(p.delete_pods.empty()) << "its pod stays until its place is taken (and the drain evicts it)";
  EXPECT_TRUE(p.create_ranks.empty());
  Observed no_spare_ready = o;
  no_spare_ready.launcher->spares = {};
  EXPECT_TRUE(decide(job, no_spare_ready, kNow + 5).releases.empty()) << "nothing to give its place to";
  Observed not_reported = o;
  not_reported.launcher.reset();
  EXPECT_TRUE(decide(job, not_reported, kNow + 5).releases.empty());
  Observed namespaced = o;  // a namespace-scoped operator watches no nodes
  namespaced.nodes_watched = false;
  namespaced.nodes.clear();
  EXPECT_TRUE(decide(job, namespaced, kNow + 5).releases.empty());
  auto no_spares = job;
  no_spares.spec.spares = 0;
  EXPECT_TRUE(decide(no_spares, o, kNow + 5).releases.empty());
}

// Just in time (issue 37 item 2): with spec.checkpoint, a rigid job's member on a node cordoned or announced to go
// is deleted rather than released, so that SIGTERM makes its workers save before a spare takes its place.
TEST(Spares, WithCheckpointsAMemberOnANodeGoingAwayIsDeletedSoThatItSavesFirst) {
  std::vector<PodFacts> pods;
  auto job = running(pods);
  job.spec.checkpoint = CheckpointSpec{"ckpt"};
  Observed o = observed(pods, report({10000, 10001}, {}));
  o.nodes[2].unschedulable = true;  // n2 drained
  o.nodes[3].taints = json::array({{{"key", "aws-node-termination-handler/spot-itn"}, {"effect", "NoSchedule"}}});
  Plan p = decide(job, o, kNow + 5);
  EXPECT_TRUE(p.releases.empty()) << "no member released: its workers would stop unsaved";
  EXPECT_EQ(p.delete_pods,
            (std::vector<PodDeletion>{{"resnet-node-2", "pod-2", false}, {"resnet-node-3", "pod-3", false}}));
  EXPECT_EQ(std::count_if(p.events.begin(), p.events.end(),
                          [](const Event& e) { return e.reason == "NodeGoingAway"; }),
            2);
  EXPECT_TRUE(p.create_ranks.empty()) << "node 0 gives their places to the spares";
  Observed not_ready = observed(pods, report({10000, 10001}, {}));
  not_ready.nodes[2].ready = false;  // nothing saves on a node that does not answer: released as before
  p = decide(job, not_ready, kNow + 5);
  EXPECT_EQ(p.releases.size(), 1u);
  EXPECT_TRUE(p.delete_pods.empty());
  auto elastic = job;  // an elastic job's leaving member is not replaced by a spare: released as before
  elastic.spec.min_replicas = 2;
  p = decide(elastic, o, kNow + 5);
  EXPECT_EQ(p.releases.size(), 2u);
}

TEST(Spares, ASpareOnANodeGoingAwayIsMovedAndReleasedBeforeAnyMember) {
  std::vector<PodFacts> pods;
  auto job = running(pods);
  Observed o = observed(pods, report({10000, 10001}, {}));
  o.nodes[4].taints = json::array({{{"key", "cloud.google.com/impending-node-termination"}, {"effect", "NoSchedule"}}});
  o.nodes[1].unschedulable = true;
  Plan p = decide(job, o, kNow + 5);
  EXPECT_EQ(p.delete_pods, (std::vector<PodDeletion>{{"resnet-spare-0", "spare-0", false}}));
  EXPECT_EQ(p.create_ranks, (std::vector<int>{10002})) << "a spare made again, on a node that stays";
  EXPECT_TRUE(testing::has_event(p, "SparesMoved"));
  ASSERT_EQ(p.releases.size(), 2u);
  EXPECT_EQ(p.releases[0].notice, (contract::ReleaseNotice{10000, contract::ReleaseWhy::kTerminationNotice}))
      << "first, so that node 0 never gives a place to it";
  EXPECT_EQ(p.releases[1].notice, (contract::ReleaseNotice{1, contract::ReleaseWhy::kCordoned}));
  Observed only_that_spare = o;
  only_that_spare.launcher->spares = {10000};
  p = decide(job, only_that_spare, kNow + 5);
  ASSERT_EQ(p.releases.size(), 1u) << "the only ready spare goes too: no member is released";
  EXPECT_EQ(p.releases[0].notice.node_rank, 10000);
}

TEST(Spares, ASpareOnANodeNotReadyIsKeptButCountsForNoMember) {
  std::vector<PodFacts> pods;
  auto job = running(pods);
  Observed o = observed(pods, report({10000}, {}));
  o.nodes[4].ready = false;  // spare 0's node NotReady: it may come back (the node-lost grace judges that)
  o.nodes[5].ready = false;  // spare 1's too
  o.nodes[1].unschedulable = true;
  const Plan p = decide(job, o, kNow + 5);
  EXPECT_TRUE(p.delete_pods.empty()) << "no spare moved for a NotReady node";
  EXPECT_TRUE(p.create_ranks.empty());
  EXPECT_TRUE(p.releases.empty()) << "no spare on a node that stays: node 1 keeps its place";
}

TEST(Spares, AReleasedMemberWhosePlaceASpareTookIsDeletedAndASpareMadeInstead) {
  std::vector<PodFacts> pods;
  auto job = running(pods);
  Observed o = observed(pods, report({10001}, {{2, 10000}}, 1));  // node 0 gave node 2's place to spare 0
  o.nodes[2].unschedulable = true;
  const Plan p = decide(job, o, kNow + 5);
  EXPECT_EQ(p.delete_pods, (std::vector<PodDeletion>{{"resnet-node-2", "pod-2", false}}));
  EXPECT_EQ(p.create_ranks, (std::vector<int>{10002}));
  EXPECT_TRUE(testing::has_event(p, "SpareStoodIn"));
  EXPECT_EQ(p.status.restarts_by_reason.at("node_lost"), 1);
  EXPECT_EQ(p.status.stand_ins, (std::map<int, int>{{2, 10000}}));
}

TEST(Spares, AMemberGoneWithoutAKnownStandInAsksNodeZeroAfresh) {
  std::vector<PodFacts> pods;
  auto job = running(pods);
  EXPECT_FALSE(member_gone_without_stand_in(job, pods, std::nullopt));
  pods.erase(pods.begin() + 2);  // node 2's pod evicted
  EXPECT_TRUE(member_gone_without_stand_in(job, pods, std::nullopt));
  EXPECT_FALSE(member_gone_without_stand_in(job, pods, report({}, {{2, 10000}}))) << "node 0 said who holds it";
  auto stood = job;
  stood.status.stand_ins = {{2, 10000}};
  EXPECT_FALSE(member_gone_without_stand_in(stood, pods, std::nullopt)) << "the status did";
  auto no_spares = job;
  no_spares.spec.spares = 0;
  EXPECT_FALSE(member_gone_without_stand_in(no_spares, pods, std::nullopt)) << "no spare to hold it: made again";
  pods = {member(1), member(2), member(3), spare(0), spare(1)};
  EXPECT_FALSE(member_gone_without_stand_in(job, pods, std::nullopt)) << "node 0 is no spare's to take";
}

TEST(Spares, EverySparePodNameMustFitAHostname) {
  json j = testing::example_job_json();
  j["metadata"]["name"] = std::string(54, 'a');  // a-...-node-3 fits in 63 characters, a-...-spare-127 does not
  j["spec"]["spares"] = 1;
  EXPECT_EQ(testing::job_from(j).spec_error, "");
  j["spec"]["spares"] = 64;
  EXPECT_NE(testing::job_from(j).spec_error.find("-spare-127\" fits in 63 characters"), std::string::npos)
      << testing::job_from(j).spec_error;
}

}  // namespace
}  // namespace kubedist::trainingjob
