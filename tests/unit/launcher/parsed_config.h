// For the launcher's unit tests: the configuration a valid command line and environment give (a test failure, and
// the defaults, for an invalid one).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli/launch_config.h"

namespace kubedist::launcher::testing {

inline LaunchConfig parse_ok(const std::vector<std::string>& args, const Env& env = {}) {
  auto r = parse_launch_config(args, env);
  EXPECT_TRUE(r.ok()) << r.error();
  return r.ok() ? r.value() : LaunchConfig{};
}

}  // namespace kubedist::launcher::testing
