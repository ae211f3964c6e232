#include "contract/signed_line.h"

#include <gtest/gtest.h>

#include <vector>

namespace kubedist::contract {
namespace {

const std::string kMac(64, 'a');
const std::string kChallenge = "0123456789abcdef0123456789abcdef";

TEST(SignedLine, SplitsWhatItFramed) {
  const std::string line = signed_line(12, kMac, "STATUS round=1");
  EXPECT_EQ(line, "MAC 12 " + kMac + " STATUS round=1\n");
  const SignedLineParts parts = split_signed_line(std::string_view(line).substr(0, line.size() - 1));
  ASSERT_EQ(parts.fault, SignedLineParts::Fault::kNone);
  EXPECT_EQ(parts.count, "12");
  EXPECT_EQ(parts.mac, kMac);
  EXPECT_EQ(parts.plain, "STATUS round=1");
}

TEST(SignedLine, TellsAnUnsignedLineFromAMalformedOne) {
  using Fault = SignedLineParts::Fault;
  const std::pair<std::string, Fault> cases[] = {
      {"STATUS", Fault::kUnsigned},
      {"", Fault::kUnsigned},
      {"MAC", Fault::kUnsigned},
      {"MAC 1", Fault::kMalformed},
      {"MAC x " + kMac + " STATUS", Fault::kMalformed},
      {"MAC  " + kMac + " STATUS", Fault::kMalformed},
      {"MAC 1 " + kMac.substr(1) + " STATUS", Fault::kMalformed},         // truncated MAC
      {"MAC 1 " + std::string(64, 'A') + " STATUS", Fault::kMalformed},   // not lower-case hex
      {"MAC 123456789012345678901 " + kMac + " STATUS", Fault::kMalformed},  // a count no counter reaches
  };
  for (const auto& [line, fault] : cases) EXPECT_EQ(split_signed_line(line).fault, fault) << line;
}

TEST(SignedLine, MacInputNamesDirectionChallengeCountAndLine) {
  EXPECT_EQ(mac_input(kToHost, kChallenge, 3, "STATUS"), "kubedist-rdzv-1 req " + kChallenge + " 3 STATUS");
  EXPECT_NE(mac_input(kToHost, kChallenge, 3, "STATUS"), mac_input(kFromHost, kChallenge, 3, "STATUS"));
}

TEST(SignedLine, HelloRoundTripsAndRefusesOtherGreetings) {
  const std::string hello = hello_line(kChallenge);
  EXPECT_EQ(parse_hello_line(hello.substr(0, hello.size() - 1)), kChallenge);
  const std::vector<std::string> bad_lines = {"HELLO", "HELLO " + kChallenge.substr(1), "HELLO " + kChallenge + "0",
                                             "HELLO 0123456789ABCDEF0123456789ABCDEF", "HOLA " + kChallenge};
  for (const std::string& bad : bad_lines) {
    EXPECT_EQ(parse_hello_line(bad), std::nullopt) << bad;
  }
}

}  // namespace
}  // namespace kubedist::contract
