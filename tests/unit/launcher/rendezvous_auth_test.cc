// HMAC-SHA256 against RFC 4231 and FIPS 180 vectors, and the rendezvous' sealed lines: forged, tampered, replayed
// and reflected lines are refused.
#include "rendezvous/auth.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "util/sha256.h"

namespace kubedist::launcher {
namespace {

std::string unhex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return out;
}

TEST(Sha256, MatchesFips180Vectors) {
  EXPECT_EQ(to_hex(sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(to_hex(sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(to_hex(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(to_hex(sha256(std::string(1000000, 'a'))),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(HmacSha256, MatchesRfc4231TestCases) {
  struct Case {
    std::string key, data, mac;
  };
  const std::vector<Case> cases = {
      {std::string(20, '\x0b'), "Hi There", "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
      {"Jefe", "what do ya want for nothing?", "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
      {std::string(20, '\xaa'), std::string(50, '\xdd'),
       "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"},
      {unhex("0102030405060708090a0b0c0d0e0f10111213141516171819"), std::string(50, '\xcd'),
       "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"},
      {std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First",
       "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
      {std::string(131, '\xaa'),
       "This is a test using a larger than block-size key and a larger than block-size data. The key needs to be "
       "hashed before being used by the HMAC algorithm.",
       "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"},
  };
  for (const auto& c : cases) EXPECT_EQ(to_hex(hmac_sha256(c.key, c.data)), c.mac) << c.data;
  // Case 5 truncates to 128 bits.
  EXPECT_EQ(to_hex(hmac_sha256(std::string(20, '\x0c'), "Test With Truncation")).substr(0, 32),
            "a3b6167473100ee06e0c796c2955552b");
}

const std::string kSecret = "0123456789abcdef-job-secret";

struct Pair {
  std::string challenge = new_challenge();
  AuthSession member{kSecret, challenge, AuthSession::Side::Member};
  AuthSession host{kSecret, challenge, AuthSession::Side::Host};
};

std::string chomp(std::string line) {
  if (!line.empty() && line.back() == '\n') line.pop_back();
  return line;
}

TEST(AuthSession, SealedLinesOpenInOrderInBothDirections) {
  Pair p;
  for (const std::string line : {"JOIN job 1 4\n", "DONE 0", "FAILED 0 1 rank 3 exited with code 1"}) {
    auto opened = p.host.open(chomp(p.member.seal(line)));
    ASSERT_TRUE(opened.ok()) << opened.error();
    EXPECT_EQ(*opened, chomp(line));
  }
  auto reply = p.member.open(chomp(p.host.seal("ROUND 0 0 1 2 4 8\n")));
  ASSERT_TRUE(reply.ok()) << reply.error();
  EXPECT_EQ(*reply, "ROUND 0 0 1 2 4 8");
}

// The operator signs its STATUS requests with OpenSSL (operator/src/rendezvous/rdzv_auth.cc); its unit test
// checks the same vectors (computed with Python's hmac).
TEST(AuthSession, MatchesTheVectorsTheOperatorIsTestedWith) {
  const std::string challenge = "000102030405060708090a0b0c0d0e0f";
  AuthSession member(kSecret, challenge, AuthSession::Side::Member);
  EXPECT_EQ(member.seal("STATUS"), "MAC 1 b0ebe69c51729898792330a9d1c4a41a1b808042804378e3eb127ba1819271f2 STATUS\n");
  AuthSession host(kSecret, challenge, AuthSession::Side::Host);
  EXPECT_EQ(host.seal("STATUS round=0\n"),
            "MAC 1 42abd9d3f526ccb2f3c1278a6ced87f2e3563868b1d5a9a43499dd27ceee5bcc STATUS round=0\n");
}

TEST(AuthSession, RefusesLinesWithoutMacOrMalformed) {
  Pair p;
  for (const std::string& line : std::vector<std::string>{"JOIN job 1 4", "LEAVE", "MAC", "MAC 1", "MAC x 00 LEAVE", "MAC 1 zz LEAVE",
                                 "MAC 1 " + std::string(64, 'g') + " LEAVE"}) {
    EXPECT_FALSE(p.host.open(line).ok()) << line;
  }
  EXPECT_NE(p.host.open("LEAVE").error().find("no MAC"), std::string::npos);
}

TEST(AuthSession, RefusesAWrongSecretAndATamperedLine) {
  Pair p;
  AuthSession forger("another-secret-of-16+", p.challenge, AuthSession::Side::Member);
  auto forged = p.host.open(chomp(forger.seal("LEAVE")));
  ASSERT_FALSE(forged.ok());
  EXPECT_NE(forged.error().find("wrong MAC"), std::string::npos) << forged.error();

  std::string sealed = chomp(p.member.seal("JOIN job 1 4"));
  std::string tampered = sealed.substr(0, sealed.size() - 1) + "8";  // nproc 4 -> 8
  EXPECT_FALSE(p.host.open(tampered).ok());
}

TEST(AuthSession, RefusesReplaysOnTheSameAndOnAnotherConnection) {
  Pair p;
  const std::string join = chomp(p.member.seal("JOIN job 1 4"));
  ASSERT_TRUE(p.host.open(join).ok());
  auto again = p.host.open(join);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().find("replay"), std::string::npos) << again.error();

  Pair other;  // a new connection has a new challenge
  EXPECT_FALSE(other.host.open(join).ok());
}

TEST(AuthSession, AHostsReplyCannotPassForARequest) {
  Pair p;
  // Same secret, challenge and counter: only the direction differs.
  EXPECT_FALSE(p.host.open(chomp(p.host.seal("LEAVE"))).ok());
}

// The member's NONCE (auth.h): node 0's lines recorded from a session with the same challenge but without this
// member's nonce, or with another one, fail; the NONCE line itself is sealed with the challenge alone.
TEST(AuthSession, AMembersNonceMakesNodeZerosLinesFreshToThatMember) {
  Pair p;
  AuthSession recorded_host(kSecret, p.challenge, AuthSession::Side::Host);  // another session, same challenge
  const std::string replayed = chomp(recorded_host.seal("ROUND 0 0 1 2 4 8"));

  const std::string nonce = new_challenge();
  auto first = p.host.open(chomp(p.member.seal(encode_nonce(nonce))));
  ASSERT_TRUE(first.ok()) << first.error();
  ASSERT_EQ(parse_nonce(*first), nonce);
  p.member.adopt_member_nonce(nonce);
  p.host.adopt_member_nonce(nonce);
  EXPECT_TRUE(p.member.has_member_nonce());

  auto taken = p.member.open(chomp(p.host.seal(kNonceTaken)));
  ASSERT_TRUE(taken.ok()) << taken.error();
  EXPECT_EQ(*taken + "\n", kNonceTaken);
  auto join = p.host.open(chomp(p.member.seal("JOIN job 1 4")));
  ASSERT_TRUE(join.ok()) << join.error();

  AuthSession member(kSecret, p.challenge, AuthSession::Side::Member);
  ASSERT_TRUE(member.open(replayed).ok());  // without a nonce, the recorded line would pass
  AuthSession fresh(kSecret, p.challenge, AuthSession::Side::Member);
  fresh.adopt_member_nonce(new_challenge());
  auto refused = fresh.open(replayed);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("wrong MAC"), std::string::npos) << refused.error();
  AuthSession other_nonce(kSecret, p.challenge, AuthSession::Side::Member);
  other_nonce.adopt_member_nonce(new_challenge());
  EXPECT_FALSE(other_nonce.open(chomp(p.host.seal("ROUND 0 0 1 2 4 8"))).ok());
}

TEST(SecretFingerprint, MatchesTheOperatorsKnownAnswer) {
  // Python: hmac.new(secret, b"kubedist-rdzv-job-fingerprint-1", hashlib.sha256).hexdigest()[:16]; the operator's is
  // checked against the same answer (unit RdzvAuth.FingerprintsAJobsSecretAsTheLauncherChecksIt).
  EXPECT_EQ(secret_fingerprint("job secret from the old key"), "71b6637ed5274854");
  EXPECT_NE(secret_fingerprint("job secret from the new key"), secret_fingerprint("job secret from the old key"));
}

TEST(Nonce, IsOneLineOf32LowerHexDigitsAndNothingElse) {
  const std::string nonce(32, 'a');
  EXPECT_EQ(encode_nonce(nonce), "NONCE " + nonce + "\n");
  EXPECT_EQ(parse_nonce("NONCE " + nonce), nonce);
  const std::vector<std::string> not_nonces = {"NONCE", "NONCE " + std::string(31, 'a'), "NONCE " + std::string(33, 'a'),
                                                "NONCE " + std::string(32, 'A'), "NONCE " + std::string(32, 'g'),
                                                "NONCE  " + std::string(31, 'a'), "JOIN job 1 4"};
  for (const std::string& line : not_nonces)
    EXPECT_FALSE(parse_nonce(line)) << line;
}

TEST(Hello, CarriesAFreshChallenge) {
  const std::string a = new_challenge(), b = new_challenge();
  EXPECT_EQ(a.size(), 32u);
  EXPECT_NE(a, b);
  auto parsed = parse_hello(chomp(encode_hello(a)));
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(*parsed, a);
  for (const std::string& bad : std::vector<std::string>{"HELLO", "HELLO 123", "ROUND 0 0 0 1 0 1", "HELLO " + std::string(32, 'X')})
    EXPECT_FALSE(parse_hello(bad).ok()) << bad;
}

TEST(Refused, IsOneLineWithTheReason) {
  EXPECT_EQ(encode_refused("wrong MAC\nsecond line"), "REFUSED wrong MAC second line\n");
  EXPECT_TRUE(is_refused("REFUSED wrong MAC"));
  EXPECT_FALSE(is_refused("ROUND 0 0 0 1 0 1"));
  EXPECT_FALSE(is_refused("MAC 1 00 REFUSED x"));
}

TEST(RdzvSecret, IsTheFilesBytesAndRefusesMissingShortOrHugeFiles) {
  char dir[] = "/tmp/rdzv-secret-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/secret";
  auto write = [&](const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; };

  write(std::string("\0\x01secret-bytes-16\n", 19));
  auto ok = read_rdzv_secret(path);
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_EQ(*ok, std::string("\0\x01secret-bytes-16\n", 19));

  write("short");
  auto short_one = read_rdzv_secret(path);
  ASSERT_FALSE(short_one.ok());
  EXPECT_NE(short_one.error().find("has 5)"), std::string::npos) << short_one.error();
  write(std::string(5000, 'x'));
  EXPECT_FALSE(read_rdzv_secret(path).ok());
  auto missing = read_rdzv_secret(std::string(dir) + "/none");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("--rdzv-secret-file " + std::string(dir) + "/none: No such file"), std::string::npos)
      << missing.error();
  unlink(path.c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace kubedist::launcher
