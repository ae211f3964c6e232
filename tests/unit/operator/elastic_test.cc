// elastic_target(): how an elastic job shrinks past unschedulable pods and grows back, table-driven.
#include "trainingjob/decide/elastic.h"

#include <gtest/gtest.h>

#include "test_jobs.h"

namespace kubedist::trainingjob {
namespace {

constexpr UnixSeconds kNow = 1'800'000'000;
constexpr int64_t kGrace = 30;

TrainingJob elastic_job(int min, int replicas, int max, ElasticStatus status = {}) {
  auto j = testing::example_job_json();
  j["spec"]["minReplicas"] = min;
  j["spec"]["replicas"] = replicas;
  j["spec"]["maxReplicas"] = max;
  auto job = testing::job_from(j);
  job.status.elastic = status;
  return job;
}

// "R" running, "P" pending (schedulable), "U<age>" unschedulable for <age> seconds; index = rank.
std::vector<PodFacts> pods_of(const std::vector<std::string>& states) {
  std::vector<PodFacts> out;
  for (size_t i = 0; i < states.size(); ++i) {
    PodFacts p;
    p.name = "resnet-node-" + std::to_string(i);
    p.uid = "pod-" + std::to_string(i);
    p.owner_uid = "uid-1";
    p.rank = static_cast<int>(i);
    p.phase = states[i] == "R" ? "Running" : "Pending";
    if (states[i][0] == 'U') p.unschedulable_since = format_rfc3339(kNow - std::stoi(states[i].substr(1)));
    out.push_back(p);
  }
  return out;
}

struct Case {
  std::string name;
  TrainingJob job;
  std::vector<std::string> pods;
  std::vector<NodeFacts> nodes;
  int want_target;
  std::string want_event;
  int want_status_target;  // status.elastic.targetReplicas (0: cleared)
  std::optional<int64_t> want_requeue;
};

TEST(ElasticTarget, Table) {
  const ElasticStatus shrunk_long_ago{2, "Unschedulable", format_rfc3339(kNow - 31), 4};
  const ElasticStatus shrunk_just_now{2, "Unschedulable", format_rfc3339(kNow - 10), 4};
  const ElasticStatus growing{4, "Growing", format_rfc3339(kNow - 5), 4};
  const std::vector<NodeFacts> all_cordoned{{"n1", true, "", true, format_rfc3339(kNow - 1)},
                                            {"n2", false, format_rfc3339(kNow - 100), false, ""}};
  const std::vector<NodeFacts> old_nodes{{"n1", true, "", false, format_rfc3339(kNow - 1000)}};
  const std::vector<NodeFacts> a_new_node{{"n1", true, "", false, format_rfc3339(kNow - 1000)},
                                          {"n2", true, "", false, format_rfc3339(kNow - 2)}};
  const ElasticStatus shrunk_very_long_ago{2, "Unschedulable", format_rfc3339(kNow - 300), 4};
  const std::vector<Case> cases = {
      {"NotElasticAlwaysGetsSpecReplicas", elastic_job(4, 4, 4), {"R", "R", "U100", "U100"}, {}, 4, "", 0, {}},
      {"AllRunningStaysAtSpecReplicas", elastic_job(2, 4, 6), {"R", "R", "R", "R"}, {}, 4, "", 0, {}},
      {"UnschedulableWithinGraceWaits", elastic_job(2, 4, 6), {"R", "R", "R", "U10"}, {}, 4, "", 0, 20},
      {"UnschedulablePastGraceIsGivenUp", elastic_job(2, 4, 6), {"R", "R", "R", "U30"}, {}, 3, "ScaledDown", 3, 30},
      {"NeverBelowMinReplicas", elastic_job(3, 4, 6), {"R", "U40", "U40", "U40"}, {}, 3, "ScaledDown", 3, 30},
      {"AtMinReplicasNothingMoreIsGivenUp", elastic_job(2, 2, 6), {"R", "U40"}, {}, 2, "", 0, {}},
      {"PendingButSchedulableIsNotGivenUp", elastic_job(2, 4, 6), {"R", "R", "P", "P"}, {}, 4, "", 0, {}},
      {"GrowsBackAfterTheGrace", elastic_job(2, 4, 6, shrunk_long_ago), {"R", "R"}, {}, 4, "ScalingUp", 4, {}},
      {"WaitsTheGraceBeforeGrowing", elastic_job(2, 4, 6, shrunk_just_now), {"R", "R"}, {}, 2, "", 2, 20},
      {"DoesNotGrowWhenNoNodeIsSchedulable", elastic_job(2, 4, 6, shrunk_long_ago), {"R", "R"}, all_cordoned, 2, "",
       2, 269},
      {"WithoutNewCapacityGrowthWaitsLonger", elastic_job(2, 4, 6, shrunk_long_ago), {"R", "R"}, old_nodes, 2, "", 2,
       269},
      {"ANodeReadySinceTheShrinkGrowsAfterTheGrace", elastic_job(2, 4, 6, shrunk_long_ago), {"R", "R"}, a_new_node, 4,
       "ScalingUp", 4, {}},
      {"WithoutNewCapacityGrowthIsRetriedAtLast", elastic_job(2, 4, 6, shrunk_very_long_ago), {"R", "R"}, old_nodes, 4,
       "ScalingUp", 4, {}},
      {"GrowingWhileNewPodsStart", elastic_job(2, 4, 6, growing), {"R", "R", "P", "P"}, {}, 4, "", 4, {}},
      {"GrowingSucceedsWhenAllRun", elastic_job(2, 4, 6, growing), {"R", "R", "R", "R"}, {}, 4, "ScaledUp", 0, {}},
      {"GrowingFailsAgainAfterTheGrace", elastic_job(2, 4, 6, growing), {"R", "R", "U31", "U31"}, {}, 2,
       "ScaledDown", 2, 30},
      {"ANewSpecReplicasStartsAfresh", elastic_job(2, 5, 6, shrunk_long_ago), {"R", "R"}, {}, 5, "", 0, {}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto d = elastic_target(c.job, pods_of(c.pods), c.nodes, kNow, kGrace);
    EXPECT_EQ(d.target, c.want_target);
    EXPECT_EQ(d.event_reason, c.want_event) << d.event_message;
    EXPECT_EQ(d.status.target_replicas, c.want_status_target);
    EXPECT_EQ(d.requeue_after_s, c.want_requeue);
    EXPECT_EQ(d.changed, c.want_event == "ScaledDown" || c.want_event == "ScalingUp");
  }
}

TEST(ElasticTarget, ScaledDownSaysWhichPodsAndWhy) {
  const auto d = elastic_target(elastic_job(1, 4, 4), pods_of({"R", "R", "U60", "U60"}), {}, kNow, kGrace);
  EXPECT_EQ(d.target, 2);
  EXPECT_EQ(d.event_message,
            "scaling down to 2 nodes (minReplicas 1, spec.replicas 4): resnet-node-2, resnet-node-3 could not be "
            "scheduled for 30s");
  EXPECT_EQ(d.status.reason, "Unschedulable");
  EXPECT_EQ(d.status.last_change, format_rfc3339(kNow));
  EXPECT_EQ(d.status.spec_replicas, 4);
}

}  // namespace
}  // namespace kubedist::trainingjob
