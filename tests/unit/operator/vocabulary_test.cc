// torchrun's numbers as the three readers share them (contract/torchrun_vocabulary.h) and as the CRD spells them:
// the API server refuses what the CRD's rules refuse, so the two must say the same.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <string>

#include "contract/pod_env.h"
#include "contract/torchrun_vocabulary.h"
#include "test_jobs.h"
#include "trainingjob/api/parse_spec.h"

namespace kubedist::trainingjob {
namespace {

YAML::Node spec_schema() {
  const YAML::Node crd = YAML::LoadFile(KUBEDIST_CRD_FILE);
  return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
}

TEST(Vocabulary, TheCrdSpellsTheSameBounds) {
  const YAML::Node spec = spec_schema();
  EXPECT_EQ(spec["maxRestarts"]["maximum"].as<long>(), contract::kMaxRestartsUpperBound);
  EXPECT_EQ(spec["backoffLimit"]["maximum"].as<long>(), contract::kMaxRestartsUpperBound);
  const std::string rule = spec["nprocPerNode"]["x-kubernetes-validations"][0]["rule"].as<std::string>();
  EXPECT_NE(rule.find("int(self) <= " + std::to_string(contract::kMaxNprocPerNode) + ")"), std::string::npos) << rule;
  EXPECT_NE(rule.find("['auto', 'gpu', 'cpu']"), std::string::npos) << rule;
  for (const char* mode : {"auto", "gpu", "cpu"}) EXPECT_TRUE(contract::is_nproc_mode(mode)) << mode;
  EXPECT_EQ(spec["spares"]["maximum"].as<long>(), contract::kMaxSpares);
  // A spare's node rank starts above every member's, so the CRD's replica bounds must stay below it.
  EXPECT_LE(spec["maxReplicas"]["maximum"].as<long>(), contract::kSpareNodeRankBase);
  EXPECT_LE(spec["replicas"]["maximum"].as<long>(), contract::kSpareNodeRankBase);
}

TEST(Vocabulary, TheSpecParserTakesWhatTheCrdTakesUpToItsBounds) {
  auto spec = [](nlohmann::json fields) {
    nlohmann::json s = testing::example_job_json()["spec"];
    s.update(fields);
    return parse_spec(s, "resnet");
  };
  EXPECT_TRUE(spec({{"nprocPerNode", contract::kMaxNprocPerNode}}).ok());
  EXPECT_TRUE(spec({{"maxRestarts", contract::kMaxRestartsUpperBound}}).ok());
  EXPECT_TRUE(spec({{"backoffLimit", contract::kMaxRestartsUpperBound}}).ok());
  auto nproc = spec({{"nprocPerNode", contract::kMaxNprocPerNode + 1}});
  ASSERT_FALSE(nproc.ok());
  EXPECT_NE(nproc.error().message.find(contract::nproc_per_node_expected()), std::string::npos) << nproc.error().message;
  EXPECT_FALSE(spec({{"maxRestarts", contract::kMaxRestartsUpperBound + 1}}).ok());
  EXPECT_FALSE(spec({{"backoffLimit", contract::kMaxRestartsUpperBound + 1}}).ok());
  EXPECT_TRUE(spec({{"spares", contract::kMaxSpares}}).ok());
  EXPECT_FALSE(spec({{"spares", contract::kMaxSpares + 1}}).ok());
}

}  // namespace
}  // namespace kubedist::trainingjob
