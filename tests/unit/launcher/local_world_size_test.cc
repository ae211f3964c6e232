#include "cli/local_world_size.h"

#include <gtest/gtest.h>

namespace kubedist::launcher {
namespace {

TEST(LocalWorldSize, CountsGpusFromVisibleDevicesOrDeviceNodes) {
  struct Case {
    Env env;
    std::vector<std::string> dev;
    int expected;
  };
  const std::vector<Case> cases = {
      {{{"CUDA_VISIBLE_DEVICES", "0,1,2"}}, {"nvidia0"}, 3},
      {{{"CUDA_VISIBLE_DEVICES", ""}}, {"nvidia0", "nvidia1"}, 0},
      {{{"CUDA_VISIBLE_DEVICES", "1,-1,2"}}, {}, 1},
      {{{"NVIDIA_VISIBLE_DEVICES", "GPU-a,GPU-b"}}, {}, 2},
      {{{"NVIDIA_VISIBLE_DEVICES", "all"}}, {"nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "null"}, 2},
      {{{"NVIDIA_VISIBLE_DEVICES", "void"}}, {"nvidia0"}, 0},
      {{}, {"nvidia0", "nvidia7", "nvidia-modeset", "nvidiactl"}, 2},
      {{}, {"null", "zero"}, 0},
  };
  for (const auto& c : cases) EXPECT_EQ(count_visible_gpus(c.env, c.dev), c.expected);
}

TEST(LocalWorldSize, AutoMeansGpusElseCpusAsTorchrun) {
  EXPECT_EQ(*local_world_size("auto", {}, {"nvidia0", "nvidia1"}, 8, false), 2);
  EXPECT_EQ(*local_world_size("auto", {}, {}, 8, false), 8);  // torchrun: os.cpu_count() without CUDA
  EXPECT_EQ(*local_world_size("auto", {{"CUDA_VISIBLE_DEVICES", ""}}, {"nvidia0"}, 3, false), 3);
  EXPECT_EQ(*local_world_size("auto", {}, {}, 0, false), 1);
  EXPECT_EQ(*local_world_size("cpu", {}, {"nvidia0"}, 8, false), 8);
  EXPECT_EQ(*local_world_size("gpu", {{"CUDA_VISIBLE_DEVICES", "3"}}, {}, 8, false), 1);
  EXPECT_EQ(*local_world_size("4", {}, {}, 8, false), 4);
}

TEST(LocalWorldSize, AutoInATrainingJobPodMeansGpusElseOneAsNprocPerNodeSays) {
  EXPECT_EQ(*local_world_size("auto", {}, {"nvidia0", "nvidia1"}, 8, true), 2);
  EXPECT_EQ(*local_world_size("auto", {}, {}, 8, true), 1);
  EXPECT_EQ(*local_world_size("cpu", {}, {}, 8, true), 8);
}

TEST(LocalWorldSize, GpuWithoutGpusIsAClearError) {
  for (bool in_job : {false, true}) {
    auto r = local_world_size("gpu", {}, {}, 8, in_job);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().find("no GPU visible"), std::string::npos);
  }
  EXPECT_FALSE(local_world_size("0", {}, {}, 8, false).ok());
}

}  // namespace
}  // namespace kubedist::launcher
