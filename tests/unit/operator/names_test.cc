// The names a job's objects get: the launchers and the headless Service's DNS depend on them.
#include "trainingjob/api/names.h"

#include <gtest/gtest.h>

namespace kubedist::trainingjob {
namespace {

TEST(Names, PodsSecretAndMasterAddressAreDerivedFromTheJob) {
  EXPECT_EQ(pod_name("resnet", 0), "resnet-node-0");
  EXPECT_EQ(pod_name("resnet", 12), "resnet-node-12");
  EXPECT_EQ(rdzv_secret_name("resnet"), "resnet-rdzv");
  // Node 0's pod, under the headless Service named after the job, in the job's namespace.
  EXPECT_EQ(master_addr("resnet", "team-a"), "resnet-node-0.resnet.team-a.svc");
}

}  // namespace
}  // namespace kubedist::trainingjob
