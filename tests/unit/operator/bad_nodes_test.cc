// Bad nodes (decide/bad_nodes.h): failures that are a node's, not the training code's, are counted per node with the
// failure itself; a node reaching the limit is avoided by the job's new pods.
#include <gtest/gtest.h>

#include <set>

#include "trainingjob/act/node_signals.h"

#include "test_jobs.h"
#include "test_plans.h"
#include "trainingjob/api/status_json.h"
#include "trainingjob/decide/bad_nodes.h"
#include "trainingjob/decide/failures.h"
#include "trainingjob/decide/lost_pods.h"
#include "trainingjob/decide/status.h"
#include "trainingjob/decide/plan.h"
#include "trainingjob/render/render.h"

namespace kubedist::trainingjob {
namespace {

using nlohmann::json;

constexpr UnixSeconds kNow = 1'800'000'000;

PodFacts on(int rank, const std::string& phase, const std::string& node, const std::string& uid = "") {
  PodFacts p = testing::example_pod(rank, phase);
  p.node_name = node;
  if (!uid.empty()) p.uid = uid;
  return p;
}

PodFacts failed(int rank, const std::string& node, std::optional<int> exit_code, const std::string& reason,
                const std::string& uid) {
  PodFacts p = on(rank, "Failed", node, uid);
  p.exit_code = exit_code;
  p.failure_reason = reason;
  return p;
}

Observed observed(std::vector<PodFacts> pods, int limit = 2) {
  Observed o;
  o.pods = std::move(pods);
  o.service_exists = true;
  o.avoid_node_after_failures = limit;
  return o;
}

std::vector<PodFacts> running_except(int rank) {
  std::vector<PodFacts> pods;
  for (int r = 0; r < 4; ++r) {
    if (r != rank) pods.push_back(on(r, "Running", "n" + std::to_string(r)));
  }
  return pods;
}

int events_with(const Plan& p, const std::string& reason) {
  int n = 0;
  for (const auto& e : p.events) n += e.reason == reason ? 1 : 0;
  return n;
}

// The pod the plan creates for `rank`.
json created_pod(const Plan& p, int rank) {
  for (const auto& w : testing::writes(p, Write::Verb::kCreate, "Pod")) {
    if (w.name == "resnet-node-" + std::to_string(rank)) return w.body;
  }
  return nullptr;
}

json required_terms(const json& pod) {
  return pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            ["nodeSelectorTerms"];
}

TEST(BadNodes, TwoFailuresBySignalOnOneNodeKeepTheJobsNewPodsOffIt) {
  TrainingJob job = testing::example_job();
  job.status.phase = JobPhase::kRunning;
  // First: rank 1's trainer killed by SIGKILL (137) on n1. Counted against n1; n1 not avoided yet.
  auto pods = running_except(1);
  pods.push_back(failed(1, "n1", 137, "Error", "first"));
  Plan p = decide(job, observed(pods), kNow);
  EXPECT_EQ(p.status.node_failures, (std::map<std::string, int>{{"n1", 1}}));
  EXPECT_TRUE(p.status.avoided_nodes.empty());
  EXPECT_EQ(events_with(p, "NodeAvoided"), 0);
  // The same pod seen again before its deletion lands: counted once, like its pod_failure.
  job.status = p.status;
  p = decide(job, observed(pods), kNow + 1);
  EXPECT_EQ(p.status.node_failures, (std::map<std::string, int>{{"n1", 1}}));
  // Its replacement, also on n1, dies of SIGBUS (135): the second failure there avoids n1, with one Event.
  job.status = p.status;
  pods = running_except(1);
  pods.push_back(failed(1, "n1", 135, "Error", "second"));
  p = decide(job, observed(pods), kNow + 30);
  EXPECT_EQ(p.status.node_failures, (std::map<std::string, int>{{"n1", 2}}));
  EXPECT_EQ(p.status.avoided_nodes, (std::vector<std::string>{"n1"}));
  ASSERT_EQ(events_with(p, "NodeAvoided"), 1);
  for (const auto& e : p.events) {
    if (e.reason != "NodeAvoided") continue;
    EXPECT_EQ(e.type, "Warning");
    EXPECT_NE(e.message.find("node n1: 2 failures of this job's pods there not caused by the training code "
                             "(the latest: pod resnet-node-1 failed (exit code 135, reason Error))"),
              std::string::npos)
        << e.message;
  }
  // The status counting it is written in the same pass, before the failed pod is deleted.
  const auto status = testing::writes(p, Write::Verb::kPatchStatus, kKind);
  ASSERT_EQ(status.size(), 1u);
  EXPECT_EQ(status[0].body["status"]["avoidedNodes"], json::array({"n1"}));
  EXPECT_EQ(status[0].body["status"]["nodeFailures"], json({{"n1", 2}}));
  // Once the failed pod is gone, rank 1 is recreated off n1; the running pods are not touched.
  job.status = p.status;
  p = decide(job, observed(running_except(1)), kNow + 31);
  const json pod = created_pod(p, 1);
  ASSERT_TRUE(pod.is_object());
  EXPECT_EQ(required_terms(pod),
            json::parse(R"([{"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]}])"));
  EXPECT_EQ(events_with(p, "NodeAvoided"), 0);  // said once
}

TEST(BadNodes, OnlyFailuresThatAreTheNodesCount) {
  EXPECT_FALSE(failure_is_the_nodes(failed(1, "n", 1, "Error", "a")));    // the program's own answer
  EXPECT_FALSE(failure_is_the_nodes(failed(1, "n", 127, "Error", "a")));
  EXPECT_FALSE(failure_is_the_nodes(failed(1, "n", 128, "Error", "a")));
  EXPECT_TRUE(failure_is_the_nodes(failed(1, "n", 129, "Error", "a")));   // SIGHUP, the first signal's code
  EXPECT_TRUE(failure_is_the_nodes(failed(1, "n", 139, "Error", "a")));   // SIGSEGV
  EXPECT_TRUE(failure_is_the_nodes(failed(1, "n", 192, "Error", "a")));   // the last real-time signal's
  EXPECT_FALSE(failure_is_the_nodes(failed(1, "n", 193, "Error", "a")));
  EXPECT_FALSE(failure_is_the_nodes(failed(1, "n", 255, "Error", "a")));  // sys.exit(-1): the program chose it
  // An OOM kill by the container's own limit is the program's use of memory, on any node.
  EXPECT_FALSE(failure_is_the_nodes(failed(1, "n", 137, "OOMKilled", "a")));
  EXPECT_TRUE(failure_is_the_nodes(failed(1, "n", std::nullopt, "", "a")));  // ended without an exit code

  TrainingJob job = testing::example_job();
  job.status.phase = JobPhase::kRunning;
  auto pods = running_except(2);
  pods.push_back(failed(2, "n2", 3, "Error", "x"));
  const Plan p = decide(job, observed(pods, 1), kNow);
  EXPECT_EQ(p.status.restarts_by_reason.at(kRestartPodFailure), 1);
  EXPECT_TRUE(p.status.node_failures.empty());  // exit code 3: the training code's
  EXPECT_TRUE(p.status.avoided_nodes.empty());
}

TEST(BadNodes, APodLostWithItsNodeCountsAgainstTheNodeOnce) {
  TrainingJob job = testing::example_job();
  job.status.phase = JobPhase::kRunning;
  auto pods = running_except(3);
  pods.push_back(failed(3, "n3", std::nullopt, "Evicted", "evicted"));
  Plan p = decide(job, observed(pods, 1), kNow);
  EXPECT_EQ(p.status.restarts_by_reason.at(kRestartNodeLost), 1);
  EXPECT_EQ(p.status.node_failures, (std::map<std::string, int>{{"n3", 1}}));
  EXPECT_EQ(p.status.avoided_nodes, (std::vector<std::string>{"n3"}));  // a limit of 1
  EXPECT_EQ(events_with(p, "NodeAvoided"), 1);
  job.status = p.status;
  p = decide(job, observed(pods, 1), kNow + 1);  // its deletion has not landed yet
  EXPECT_EQ(p.status.node_failures, (std::map<std::string, int>{{"n3", 1}}));
  EXPECT_EQ(events_with(p, "NodeAvoided"), 0);
}

TEST(NodeLossLimit, AJobWhosePodsKeepBeingLostStopsAfterTheLimitInsteadOfRecreatingThemForEver) {
  TrainingJob job = testing::example_job();
  job.status.phase = JobPhase::kRunning;
  auto pods = running_except(3);
  pods.push_back(failed(3, "n3", std::nullopt, "NodeShutdown", "lost"));
  Observed o = observed(pods, 0);
  o.node_loss_limit = 5;
  // The 5th loss: still within the limit, recreated.
  job.status.restarts_by_reason[kRestartNodeLost] = 4;
  Plan p = decide(job, o, kNow);
  EXPECT_EQ(p.status.restarts_by_reason.at(kRestartNodeLost), 5);
  EXPECT_NE(p.status.phase, JobPhase::kFailed);
  // The 6th: the job fails, saying why, and recreates nothing.
  job.status.restarts_by_reason[kRestartNodeLost] = 5;
  p = decide(job, o, kNow);
  EXPECT_EQ(p.status.phase, JobPhase::kFailed);
  EXPECT_EQ(p.status.restarts_by_reason.at(kRestartNodeLost), 6);
  EXPECT_TRUE(p.create_ranks.empty());
  bool said = false;
  for (const auto& c : p.status.conditions) {
    if (c.type == ConditionType::kFailed && c.reason == "NodeLossLimitExceeded") {
      said = true;
      EXPECT_EQ(c.message, "pod resnet-node-3 was lost with its node, the job's loss 6 of --node-loss-limit 5: the job "
                           "stops instead of recreating its pods for ever; find why its nodes keep going (the PodLost "
                           "Events name them)");
    }
  }
  EXPECT_TRUE(said);
  // 0: no bound.
  o.node_loss_limit = 0;
  job.status.restarts_by_reason[kRestartNodeLost] = 100000;
  EXPECT_NE(decide(job, o, kNow).status.phase, JobPhase::kFailed);
  // A job past the limit whose pods are not being lost now runs on (the bound is checked at a loss).
  o.node_loss_limit = 5;
  job.status.restarts_by_reason[kRestartNodeLost] = 50;
  EXPECT_NE(decide(job, observed(running_except(-1), 0), kNow).status.phase, JobPhase::kFailed);
}

TEST(BadNodes, ALimitOfZeroCountsNothingAndAJobTracksAtMost64Nodes) {
  TrainingJob job = testing::example_job();
  job.status.phase = JobPhase::kRunning;
  auto pods = running_except(1);
  pods.push_back(failed(1, "n1", 137, "Error", "a"));
  EXPECT_TRUE(decide(job, observed(pods, 0), kNow).status.node_failures.empty());

  for (size_t i = 0; i < kMaxNodesTracked; ++i) job.status.node_failures["full-" + std::to_string(i)] = 1;
  const Plan p = decide(job, observed(pods, 2), kNow);
  EXPECT_EQ(p.status.node_failures.size(), kMaxNodesTracked);
  EXPECT_EQ(p.status.node_failures.count("n1"), 0u);
  EXPECT_EQ(p.status.restarts_by_reason.at(kRestartPodFailure), 1);  // the failure itself still counts
}

Observed with_node(std::vector<PodFacts> pods, const std::string& node, bool taint) {
  Observed o = observed(std::move(pods), 1);
  o.nodes_watched = true;
  NodeFacts n;
  n.name = node;
  n.resource_version = "9";
  o.nodes = {n};
  o.taint_avoided_nodes = taint;
  return o;
}

TEST(BadNodes, ANodeIsTaintedForEveryPodOnlyWhenAskedOnlyForItsOwnFaultAndOnlyOnce) {
  TrainingJob job = testing::example_job();
  job.status.phase = JobPhase::kRunning;
  auto pods = running_except(1);
  pods.push_back(failed(1, "n1", std::nullopt, "NodeShutdown", "a"));  // the node shut down under it
  // Not asked: the job avoids n1, nobody else is told.
  Plan p = decide(job, with_node(pods, "n1", false), kNow);
  EXPECT_EQ(p.status.avoided_nodes, (std::vector<std::string>{"n1"}));
  EXPECT_FALSE(testing::writes_any(p, Write::Verb::kMergePatch, "Node"));
  // Asked: one merge patch of n1's taints, on the version they were read from, valued with the second it is added.
  Observed o = with_node(pods, "n1", true);
  p = decide(job, o, kNow);
  const auto taints = testing::writes(p, Write::Verb::kMergePatch, "Node");
  ASSERT_EQ(taints.size(), 1u);
  EXPECT_EQ(taints[0].path, "/api/v1/nodes/n1");
  EXPECT_EQ(taints[0].precondition, "9");
  EXPECT_EQ(taints[0].body, json::parse(R"({"spec": {"taints": [{"key": "kubedist.io/avoided", "value": "1800000000",
                                                                   "effect": "NoSchedule"}]}})"));
  ASSERT_EQ(events_with(p, "NodeAvoided"), 1);
  for (const auto& e : p.events) {
    if (e.reason == "NodeAvoided") {
      EXPECT_NE(e.message.find("; tainted kubedist.io/avoided:NoSchedule for every new pod"), std::string::npos);
    }
  }
  // Already tainted (by another job, or an earlier pass that stopped before its status write): not again.
  o.nodes[0].avoided_taint = true;
  EXPECT_FALSE(testing::writes_any(decide(job, o, kNow), Write::Verb::kMergePatch, "Node"));
  // A node the cache does not hold (deleted): nothing to taint.
  o.nodes.clear();
  EXPECT_FALSE(testing::writes_any(decide(job, o, kNow), Write::Verb::kMergePatch, "Node"));
}

TEST(BadNodes, OneJobsSignalsHangsOomKillsAndEvictionsAvoidTheNodeForItButNeverTaintIt) {
  // The case of the issue: sys.exit(-1) is 255, the program's choice, and counts against no node at all.
  TrainingJob job = testing::example_job();
  job.status.phase = JobPhase::kRunning;
  auto pods = running_except(1);
  pods.push_back(failed(1, "n1", 255, "Error", "a"));
  Plan p = decide(job, with_node(pods, "n1", true), kNow);
  EXPECT_TRUE(p.status.node_failures.empty());
  EXPECT_FALSE(testing::writes_any(p, Write::Verb::kMergePatch, "Node"));
  // A signal (SIGBUS) and an eviction avoid the node for this job only, and the Event says why it is not tainted.
  for (const auto& [code, reason] : std::vector<std::pair<std::optional<int>, std::string>>{
           {135, "Error"}, {std::nullopt, "Evicted"}}) {
    pods = running_except(1);
    pods.push_back(failed(1, "n1", code, reason, "b"));
    p = decide(job, with_node(pods, "n1", true), kNow);
    EXPECT_EQ(p.status.avoided_nodes, (std::vector<std::string>{"n1"})) << reason;
    EXPECT_FALSE(testing::writes_any(p, Write::Verb::kMergePatch, "Node")) << reason;
    for (const auto& e : p.events) {
      if (e.reason == "NodeAvoided") {
        EXPECT_NE(e.message.find("; not tainted for other jobs: what one job's pods saw is no proof against the node"),
                  std::string::npos)
            << e.message;
      }
    }
  }
  // The node, avoided for a signal, is then lost under the job (NotReady past the grace): tainted now, with an
  // Event NodeTainted rather than a second NodeAvoided.
  job.status.node_failures = {{"n1", 1}};
  job.status.avoided_nodes = {"n1"};
  Observed o = with_node({on(0, "Running", "n1"), on(1, "Running", "n2"), on(2, "Running", "n2"),
                          on(3, "Running", "n2")},
                         "n1", true);
  o.node_lost_grace_s = 60;
  o.nodes[0].ready = false;
  o.nodes[0].not_ready_since = format_rfc3339(kNow - 120);
  NodeFacts n2;
  n2.name = "n2";
  o.nodes.push_back(n2);
  p = decide(job, o, kNow);
  EXPECT_EQ(p.status.node_failures.at("n1"), 2);
  EXPECT_EQ(testing::writes(p, Write::Verb::kMergePatch, "Node").size(), 1u);
  EXPECT_EQ(events_with(p, "NodeAvoided"), 0);
  ASSERT_EQ(events_with(p, "NodeTainted"), 1);
  for (const auto& e : p.events) {
    if (e.reason == "NodeTainted") {
      EXPECT_EQ(e.message, "node n1, avoided by this job, failed itself: pod resnet-node-0 was lost: node n1 has been "
                           "NotReady for 120s; tainted kubedist.io/avoided:NoSchedule for every new pod");
    }
  }
}

// A bus error is proof against the node when another namespace's pods met one there lately too (two authors, one
// node: a memory or device fault), never when only this job's namespace did.
TEST(BadNodes, ABusErrorTheNodeGaveAnotherNamespaceTooTaintsIt) {
  TrainingJob job = testing::example_job();
  job.status.phase = JobPhase::kRunning;
  job.status.node_failures = {{"n1", 1}};
  for (const auto& [namespaces, tainted] : std::vector<std::pair<std::set<std::string>, bool>>{
           {{}, false}, {{job.ns}, false}, {{job.ns, "team-b"}, true}, {{"team-b"}, true}}) {
    auto pods = running_except(1);
    pods.push_back(failed(1, "n1", kBusErrorExitCode, "Error", "a"));
    Observed o = with_node(pods, "n1", true);
    if (!namespaces.empty()) o.bus_error_namespaces["n1"] = namespaces;
    const Plan p = decide(job, o, kNow);
    EXPECT_EQ(p.status.avoided_nodes, (std::vector<std::string>{"n1"}));
    EXPECT_EQ(testing::writes_any(p, Write::Verb::kMergePatch, "Node"), tainted) << namespaces.size();
    for (const auto& e : p.events) {
      if (e.reason != "NodeAvoided") continue;
      EXPECT_EQ(e.message.find("a bus error, which other namespaces' pods met there too") != std::string::npos,
                tainted) << e.message;
    }
  }
  // Another exit by a signal (SIGSEGV, 139) met by other namespaces is still the job's own to answer for.
  auto pods = running_except(1);
  pods.push_back(failed(1, "n1", 139, "Error", "a"));
  Observed o = with_node(pods, "n1", true);
  o.bus_error_namespaces["n1"] = {"team-b", "team-c"};
  EXPECT_FALSE(testing::writes_any(decide(job, o, kNow), Write::Verb::kMergePatch, "Node"));
}

// The operator's memory of bus errors across jobs: by node and namespace, within its window, bounded.
TEST(NodeSignals, KeepsEachNamespacesLatestBusErrorOnANodeForAnHour) {
  NodeSignals signals;
  signals.record("n1", "team-a", 1000);
  signals.record("n1", "team-b", 2000);
  signals.record("n1", "team-a", 500);  // an older one keeps the later time
  signals.record("", "team-c", 2000);   // no node: nothing
  EXPECT_EQ(signals.namespaces("n1", 2000), (std::set<std::string>{"team-a", "team-b"}));
  EXPECT_EQ(signals.namespaces("n1", 1000 + NodeSignals::kWindowS + 1), (std::set<std::string>{"team-b"}));
  EXPECT_TRUE(signals.namespaces("n2", 2000).empty());
  for (size_t i = 0; i < NodeSignals::kMaxNamespacesPerNode + 4; ++i) {
    signals.record("n3", "ns-" + std::to_string(i), 3000 + static_cast<UnixSeconds>(i));
  }
  const auto kept = signals.namespaces("n3", 3100);
  EXPECT_EQ(kept.size(), NodeSignals::kMaxNamespacesPerNode);
  EXPECT_EQ(kept.count("ns-0"), 0u);  // the oldest made room
  EXPECT_EQ(kept.count("ns-19"), 1u);

  // Full of nodes: a new one is kept only where nodes whose bus errors are all past the window make room.
  NodeSignals full;
  for (size_t i = 0; i < NodeSignals::kMaxNodes; ++i) full.record("old-" + std::to_string(i), "team-a", 1000);
  full.record("new", "team-b", 1000 + NodeSignals::kWindowS);  // none is past the window yet
  EXPECT_TRUE(full.namespaces("new", 1000 + NodeSignals::kWindowS).empty());
  full.record("newer", "team-b", 1001 + NodeSignals::kWindowS);
  EXPECT_EQ(full.namespaces("newer", 1001 + NodeSignals::kWindowS), (std::set<std::string>{"team-b"}));
}

TEST(BadNodes, NoNodeIsTaintedWhileMaxTaintedNodesCarryTheTaint) {
  TrainingJob job = testing::example_job();
  job.status.phase = JobPhase::kRunning;
  auto pods = running_except(1);
  pods.push_back(failed(1, "n1", std::nullopt, "NodeShutdown", "a"));
  Observed o = with_node(pods, "n1", true);
  o.max_tainted_nodes = 2;
  for (const char* other : {"t1", "t2"}) {
    NodeFacts t;
    t.name = other;
    t.avoided_taint = true;
    o.nodes.push_back(t);
  }
  Plan p = decide(job, o, kNow);
  EXPECT_EQ(p.status.avoided_nodes, (std::vector<std::string>{"n1"}));  // the job avoids it all the same
  EXPECT_FALSE(testing::writes_any(p, Write::Verb::kMergePatch, "Node"));
  for (const auto& e : p.events) {
    if (e.reason == "NodeAvoided") {
      EXPECT_NE(e.message.find("; not tainted: 2 nodes carry kubedist.io/avoided already (--max-tainted-nodes)"),
                std::string::npos)
          << e.message;
    }
  }
  o.max_tainted_nodes = 3;
  EXPECT_EQ(testing::writes(decide(job, o, kNow), Write::Verb::kMergePatch, "Node").size(), 1u);
}

TEST(BadNodes, ATaintComesOffAfterItsTtlAndOnlyTheOperatorsTaint) {
  auto node = [](const std::string& name, const json& taints) {
    NodeFacts n;
    n.name = name;
    n.resource_version = "7";
    n.taints = taints;
    for (const auto& t : taints) n.avoided_taint = n.avoided_taint || t["key"] == "kubedist.io/avoided";
    return n;
  };
  const json own = {{"key", "gpu"}, {"value", "a100"}, {"effect", "NoSchedule"}};
  auto avoided = [](const std::string& value) {
    return json({{"key", "kubedist.io/avoided"}, {"value", value}, {"effect", "NoSchedule"}});
  };
  const std::vector<NodeFacts> nodes = {
      node("old", json::array({own, avoided(std::to_string(kNow - 3600))})),
      node("new", json::array({avoided(std::to_string(kNow - 3599))})),
      node("untimed", json::array({avoided("")})),
      node("garbled", json::array({avoided("12x")})),
      node("others", json::array({own})),
  };
  const auto writes = expired_avoided_taints(nodes, kNow, 3600);
  ASSERT_EQ(writes.size(), 3u);
  EXPECT_EQ(writes[0].name, "old");
  EXPECT_EQ(writes[0].path, "/api/v1/nodes/old");
  EXPECT_EQ(writes[0].precondition, "7");
  EXPECT_EQ(writes[0].body, json({{"spec", {{"taints", json::array({own})}}}}));  // its own taint kept
  EXPECT_EQ(writes[1].name, "untimed");  // an earlier operator's: no time, expired
  EXPECT_EQ(writes[1].body, json::parse(R"({"spec": {"taints": []}})"));
  EXPECT_EQ(writes[2].name, "garbled");
  EXPECT_TRUE(expired_avoided_taints(nodes, kNow - 1, 3600).size() == 2u);  // "old" not yet, a second earlier
}

TEST(BadNodes, TheStatusKeepsTheCountsAndTheAvoidedNodesAcrossAWriteAndARead) {
  Status s;
  s.node_failures = {{"n1", 2}, {"n2", 1}};
  s.avoided_nodes = {"n1"};
  const json j = status_to_json(s);
  EXPECT_EQ(j["nodeFailures"], json({{"n1", 2}, {"n2", 1}}));
  EXPECT_EQ(j["avoidedNodes"], json::array({"n1"}));
  const Status back = parse_status(j, {});
  EXPECT_EQ(back.node_failures, s.node_failures);
  EXPECT_EQ(back.avoided_nodes, s.avoided_nodes);
  EXPECT_TRUE(status_to_json(Status{})["avoidedNodes"].is_null());  // nothing to avoid: no field
  // Someone else's types: ignored, not a crash.
  const Status odd = parse_status(json::parse(R"({"nodeFailures": {"n1": "two", "n2": 1}, "avoidedNodes": [3, "n2"]})"), {});
  EXPECT_EQ(odd.node_failures, (std::map<std::string, int>{{"n2", 1}}));
  EXPECT_EQ(odd.avoided_nodes, (std::vector<std::string>{"n2"}));
}

// The kubelet's admission refusals (issue 39 item 9): a job pinned to a node (spec.nodeName) whose pods fail there
// with exit code 255 got the node avoided, its next pod then carried the exclusion beside the nodeName, the kubelet
// refused it (NodeAffinity), and each refusal was taken for a lost node and recreated at once: 924 pods in 100 s.
TEST(AdmissionRefusal, IsAPodFailureNotALostNodeAndOnlyTheKubeletsReasonsCount) {
  EXPECT_TRUE(failure_is_admission_refusal(failed(1, "n", std::nullopt, "NodeAffinity", "a")));
  EXPECT_TRUE(failure_is_admission_refusal(failed(1, "n", std::nullopt, "TaintToleration", "a")));
  EXPECT_TRUE(failure_is_admission_refusal(failed(1, "n", std::nullopt, "OutOfpods", "a")));
  EXPECT_TRUE(failure_is_admission_refusal(failed(1, "n", std::nullopt, "OutOfnvidia.com/gpu", "a")));
  EXPECT_TRUE(failure_is_admission_refusal(failed(1, "n", std::nullopt, "UnexpectedAdmissionError", "a")));
  EXPECT_FALSE(failure_is_admission_refusal(failed(1, "n", std::nullopt, "Evicted", "a")));  // a node loss
  EXPECT_FALSE(failure_is_admission_refusal(failed(1, "n", 255, "Error", "a")));
  EXPECT_FALSE(failure_is_admission_refusal(failed(1, "n", 1, "NodeAffinity", "a")));  // a container ran: admitted
  EXPECT_FALSE(failure_is_admission_refusal(on(1, "Running", "n")));
  EXPECT_FALSE(failure_is_node_loss(failed(1, "n", std::nullopt, "NodeAffinity", "a")));
  EXPECT_FALSE(failure_is_node_loss(failed(1, "n", std::nullopt, "OutOfpods", "a")));
  EXPECT_TRUE(failure_is_node_loss(failed(1, "n", std::nullopt, "Evicted", "a")));
  // Under every restartPolicy: the program never ran.
  EXPECT_TRUE(failure_is_retryable(RestartPolicy::kNever, failed(1, "n", std::nullopt, "NodeAffinity", "a")));
  EXPECT_EQ(admission_backoff_s(1), 10);
  EXPECT_EQ(admission_backoff_s(2), 20);
  EXPECT_EQ(admission_backoff_s(5), 160);
  EXPECT_EQ(admission_backoff_s(6), 300);
  EXPECT_EQ(admission_backoff_s(1000), 300);
}

TEST(AdmissionRefusal, ARefusedPodIsCountedOnceKeptThroughItsBackoffThenRecreatedAndBoundedByBackoffLimit) {
  TrainingJob job = testing::example_job();
  job.status.phase = JobPhase::kRunning;
  job.spec.backoff_limit = 2;
  auto refused = [](const std::string& uid, UnixSeconds at) {
    PodFacts p = failed(1, "n1", std::nullopt, "NodeAffinity", uid);
    p.start_time = format_rfc3339(at);
    return p;
  };
  auto pods = running_except(1);
  pods.push_back(refused("first", kNow));
  Plan p = decide(job, observed(pods, 1), kNow);
  EXPECT_EQ(p.status.restarts_by_reason.at(kRestartPodFailure), 1);
  EXPECT_EQ(p.status.restarts_by_reason.count(kRestartNodeLost), 0u);
  EXPECT_TRUE(p.status.node_failures.empty());  // a limit of 1, yet the node did nothing
  EXPECT_TRUE(p.delete_pods.empty());            // kept for its 10 s
  EXPECT_EQ(p.requeue_after_s, std::optional<int64_t>(10));
  ASSERT_EQ(events_with(p, "PodFailed"), 1);
  for (const auto& e : p.events) {
    if (e.reason == "PodFailed") {
      EXPECT_EQ(e.message, "pod resnet-node-1 was refused by the kubelet of node n1 (reason NodeAffinity); "
                           "recreating it in 10s (pod failure 1, backoffLimit 2)");
    }
  }
  // Seen again within the backoff: not counted again, still kept.
  job.status = p.status;
  p = decide(job, observed(pods, 1), kNow + 4);
  EXPECT_EQ(p.status.restarts_by_reason.at(kRestartPodFailure), 1);
  EXPECT_TRUE(p.delete_pods.empty());
  EXPECT_EQ(events_with(p, "PodFailed"), 0);
  // The backoff over: deleted, then recreated once gone.
  p = decide(job, observed(pods, 1), kNow + 10);
  ASSERT_EQ(p.delete_pods.size(), 1u);
  EXPECT_EQ(p.delete_pods[0].name, "resnet-node-1");
  job.status = p.status;
  // The second refusal waits 20 s; the third is past backoffLimit 2: the job fails saying why.
  pods = running_except(1);
  pods.push_back(refused("second", kNow + 12));
  p = decide(job, observed(pods, 1), kNow + 12);
  EXPECT_EQ(p.status.restarts_by_reason.at(kRestartPodFailure), 2);
  EXPECT_EQ(p.requeue_after_s, std::optional<int64_t>(20));
  job.status = p.status;
  pods = running_except(1);
  pods.push_back(refused("third", kNow + 40));
  p = decide(job, observed(pods, 1), kNow + 40);
  EXPECT_EQ(p.status.phase, JobPhase::kFailed);
  const Condition* failed_condition = find_condition(p.status, ConditionType::kFailed);
  ASSERT_NE(failed_condition, nullptr);
  EXPECT_EQ(failed_condition->reason, "BackoffLimitExceeded");
  EXPECT_NE(failed_condition->message.find("was refused by the kubelet of node n1 (reason NodeAffinity)"),
            std::string::npos)
      << failed_condition->message;
}

TEST(AdmissionRefusal, APodPinnedToANodeNeverAvoidsOne) {
  json pinned = testing::example_job_json();
  pinned["spec"]["template"]["spec"]["nodeName"] = "n1";
  PodOptions options;
  options.avoided_nodes = {"n1"};
  const json pod = render_pod(testing::job_from(pinned), 1, options);
  EXPECT_EQ(pod["spec"]["nodeName"], "n1");
  EXPECT_FALSE(pod["spec"].contains("affinity")) << pod["spec"].dump();
  // Not pinned: avoided as before.
  EXPECT_EQ(required_terms(render_pod(testing::example_job(), 1, options)),
            json::parse(R"([{"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]}])"));
}

TEST(BadNodesRender, TheExclusionJoinsEveryRequiredTermOfTheTemplateAndKeepsTheRest) {
  json tmpl = testing::example_job_json();
  tmpl["spec"]["template"]["spec"]["affinity"] = json::parse(R"({
    "nodeAffinity": {
      "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["h100"]}]},
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["big-1", "n1"]}]}]},
      "preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}}]},
    "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}})");
  const TrainingJob job = testing::job_from(tmpl);
  PodOptions options;
  options.avoided_nodes = {"n1", "n7"};
  const json pod = render_pod(job, 2, options);
  const json exclusion = {{"key", "metadata.name"}, {"operator", "NotIn"}, {"values", {"n1", "n7"}}};
  const json terms = required_terms(pod);
  ASSERT_EQ(terms.size(), 2u);  // the terms are ORed: each must exclude the nodes
  EXPECT_EQ(terms[0]["matchExpressions"], tmpl["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
                                              ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
                                              [0]["matchExpressions"]);
  EXPECT_EQ(terms[0]["matchFields"], json::array({exclusion}));
  ASSERT_EQ(terms[1]["matchFields"].size(), 2u);
  EXPECT_EQ(terms[1]["matchFields"][1], exclusion);
  EXPECT_EQ(pod["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"].size(), 1u);
  EXPECT_TRUE(pod["spec"]["affinity"].contains("podAntiAffinity"));

  // No avoided node: the template's node affinity (here none) as it was.
  EXPECT_FALSE(render_pod(testing::example_job(), 2, PodOptions{})["spec"]["affinity"].contains("nodeAffinity"));
  // Only a preferred affinity: a required term of its own is added beside it.
  json preferred = testing::example_job_json();
  preferred["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] =
      json::array();
  const json with_preferred = render_pod(testing::job_from(preferred), 0, options);
  EXPECT_EQ(required_terms(with_preferred), json::array({{{"matchFields", json::array({exclusion})}}}));
}

}  // namespace
}  // namespace kubedist::trainingjob
