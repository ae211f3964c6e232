// What the plugin prints of a pod's text: ordinary text as it is, every terminal control visible and harmless.
#include <gtest/gtest.h>

#include "kubectl/act/report.h"
#include "kubectl/render/terminal_safe.h"

namespace kubedist::kubectl {
namespace {

TEST(TerminalSafe, OrdinaryTextTabsAndUtf8StayAsTheyAre) {
  const std::string text = "epoch 1\tloss=0.25 naïve 日本語 ✓ 🚀 [rank 0]: \\x41 100%";
  EXPECT_EQ(terminal_safe(text), text);
  EXPECT_EQ(terminal_safe(""), "");
  EXPECT_EQ(terminal_safe("windows line\r"), "windows line");  // CRLF: the '\r' is the line's end
}

TEST(TerminalSafe, EscapesThatMoveTheCursorRetitleOrRecolourAreShownNotSent) {
  EXPECT_EQ(terminal_safe("\x1b[2J\x1b[Hwiped"), "\\x1b[2J\\x1b[Hwiped");           // clear screen, cursor home
  EXPECT_EQ(terminal_safe("\x1b]0;pwned\x07title"), "\\x1b]0;pwned\\x07title");     // OSC: the window title
  EXPECT_EQ(terminal_safe("\x1b]52;c;ZXZpbA==\x07"), "\\x1b]52;c;ZXZpbA==\\x07");  // OSC 52: the clipboard
  EXPECT_EQ(terminal_safe("\x1b[31mred\x1b[0m"), "\\x1b[31mred\\x1b[0m");
  EXPECT_EQ(terminal_safe("ok\rFAKE"), "ok\\x0dFAKE");  // a '\r' inside would overwrite what came before
  EXPECT_EQ(terminal_safe("a\bb\x7f" "c"), "a\\x08b\\x7fc");
  EXPECT_EQ(terminal_safe(std::string("nul\0byte", 8)), "nul\\x00byte");
  EXPECT_EQ(terminal_safe("two\nlines"), "two\\x0alines");
}

TEST(TerminalSafe, C1ControlsAndMalformedUtf8AreShownByteByByte) {
  EXPECT_EQ(terminal_safe("\xc2\x9b" "2J"), "\\xc2\\x9b2J");  // U+009B: a CSI to terminals that read C1
  EXPECT_EQ(terminal_safe("\x9b" "2J"), "\\x9b2J");           // the same as a raw 8-bit byte
  EXPECT_EQ(terminal_safe("\xc2\xa0nbsp"), "\xc2\xa0nbsp");   // U+00A0 is text, not a control
  EXPECT_EQ(terminal_safe("\xc0\xaf"), "\\xc0\\xaf");          // an overlong '/'
  EXPECT_EQ(terminal_safe("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a UTF-16 surrogate
  EXPECT_EQ(terminal_safe("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
  EXPECT_EQ(terminal_safe("cut \xe6\x97"), "cut \\xe6\\x97");  // a sequence cut short at the end
  EXPECT_EQ(terminal_safe("\xe6\x97\x1b"), "\\xe6\\x97\\x1b");  // ... or by an escape
}

TEST(TerminalSafe, AHostileLogLineIsPrintedHarmlessWithItsPrefix) {
  EXPECT_EQ(log_line(0, false, "[rank 1]: \x1b[1A\x1b[2Kloss=nan"), "[rank 1]: \\x1b[1A\\x1b[2Kloss=nan");
  EXPECT_EQ(log_line(2, false, "\x1b]0;root@prod\x07"), "[node 2] \\x1b]0;root@prod\\x07");
  EXPECT_EQ(log_line(0, true, "pip \x1b[?1049h"), "[node 0 setup] pip \\x1b[?1049h");
  EXPECT_EQ(log_line(0, false, "[rank 0]: Ünïcode\tok"), "[rank 0]: Ünïcode\tok");
}

TEST(TerminalSafe, AHostileTerminationMessageIsShownHarmlessInStatusAndTheFinalReport) {
  // The container writes its termination message; the operator copies it into lastFailure and the conditions.
  const std::string hostile = "boom\x1b]0;hijacked\x07\x1b[2K";
  const nlohmann::json job = {
      {"metadata", {{"name", "j"}, {"namespace", "ns"}}},
      {"status",
       {{"phase", "Failed"},
        {"conditions", {{{"type", "Failed"}, {"status", "True"}, {"reason", "PodFailed"}, {"message", hostile}}}},
        {"lastFailure", {{"pod", "j-node-0"}, {"exitCode", 1}, {"message", hostile}}}}}};
  const std::string shown = "boom\\x1b]0;hijacked\\x07\\x1b[2K";
  EXPECT_EQ(last_failure_text(job["status"]), "pod j-node-0 exited with code 1: " + shown);
  const std::string report = final_report(job, 2);
  EXPECT_NE(report.find("failed: PodFailed: " + shown + "\n"), std::string::npos) << report;
  EXPECT_EQ(report.find('\x1b'), std::string::npos) << report;
  const std::string status = status_report(job, {}, 0);
  EXPECT_NE(status.find("condition:    Failed=True PodFailed: " + shown), std::string::npos) << status;
  EXPECT_EQ(status.find('\x1b'), std::string::npos) << status;
}

}  // namespace
}  // namespace kubedist::kubectl
