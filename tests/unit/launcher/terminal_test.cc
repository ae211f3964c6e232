// Who reads the launcher's stdin.
#include "process/terminal.h"

#include <gtest/gtest.h>

namespace kubedist::launcher {
namespace {

TEST(StdinFor, WithoutATerminalEveryWorkerSharesStdinLikeTorchrun) {
  TerminalState pipe{.is_tty = false, .foreground = false, .launcher_pgrp = 7};
  EXPECT_EQ(stdin_for(pipe, 0), StdinMode::Inherit);
  EXPECT_EQ(stdin_for(pipe, 3), StdinMode::Inherit);
}

TEST(StdinFor, InTheForegroundLocalRankZeroGetsTheTerminalAndTheOthersDevNull) {
  TerminalState fg{.is_tty = true, .foreground = true, .launcher_pgrp = 7};
  EXPECT_EQ(stdin_for(fg, 0), StdinMode::Terminal);
  EXPECT_EQ(stdin_for(fg, 1), StdinMode::DevNull);
}

TEST(StdinFor, InTheBackgroundNoWorkerGetsTheTerminalSoNoneIsStoppedByIt) {
  TerminalState bg{.is_tty = true, .foreground = false, .launcher_pgrp = 7};
  EXPECT_EQ(stdin_for(bg, 0), StdinMode::DevNull);
  EXPECT_EQ(stdin_for(bg, 1), StdinMode::DevNull);
}

}  // namespace
}  // namespace kubedist::launcher
