#include "contract/pod_env.h"

#include <gtest/gtest.h>

namespace kubedist::contract {
namespace {

TEST(PodEnv, PetNameIsTorchrunsSpellingOfAFlag) {
  EXPECT_EQ(pet_name(kFlagMasterAddr), "PET_MASTER_ADDR");
  EXPECT_EQ(pet_name(kFlagNprocPerNode), "PET_NPROC_PER_NODE");
  EXPECT_EQ(pet_name(kFlagMaxRestarts), "PET_MAX_RESTARTS");
  // The plain variables are the PET_ names without the prefix, as torchrun's users know them.
  for (const auto& [flag, plain] : {std::pair{kFlagMasterAddr, kMasterAddr}, {kFlagMasterPort, kMasterPort},
                                    {kFlagNodeRank, kNodeRank}, {kFlagNnodes, kNnodes},
                                    {kFlagNprocPerNode, kNprocPerNode}}) {
    EXPECT_EQ(pet_name(flag), std::string("PET_") + plain);
  }
}

}  // namespace
}  // namespace kubedist::contract
