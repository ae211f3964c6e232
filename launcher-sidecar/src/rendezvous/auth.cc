#include "rendezvous/auth.h"

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "contract/signed_line.h"
#include "util/sha256.h"

namespace kubedist::launcher {
namespace {

constexpr size_t kMinSecret = contract::kMinSecretBytes;
constexpr size_t kMaxSecret = contract::kMaxSecretBytes;

// Compares without stopping at the first difference, so timing tells nothing about how much of a MAC was right.
bool same(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

AuthSession::AuthSession(std::string secret, std::string challenge, Side side)
    : secret_(std::move(secret)), challenge_(std::move(challenge)), side_(side) {}

std::string AuthSession::mac(const char* dir, std::uint64_t n, std::string_view line) const {
  return to_hex(hmac_sha256(secret_, contract::mac_input(dir, challenge_, n, line)));
}

std::string AuthSession::seal(std::string_view line) {
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  const std::uint64_t n = ++sent_;
  return contract::signed_line(n, mac(side_ == Side::Member ? contract::kToHost : contract::kFromHost, n, line), line);
}

Result<std::string> AuthSession::open(std::string_view line) {
  const contract::SignedLineParts parts = contract::split_signed_line(line);
  using Fault = contract::SignedLineParts::Fault;
  if (parts.fault == Fault::kUnsigned) return make_error("no MAC (is --rdzv-secret-file the same on every node?)");
  if (parts.fault != Fault::kNone) return make_error("malformed MAC line");
  const std::uint64_t expected = received_ + 1;
  if (parts.count != std::to_string(expected))
    return make_error("message " + std::string(parts.count) + " where " + std::to_string(expected) +
                      " was due (a replay?)");
  if (!same(parts.mac, mac(side_ == Side::Host ? contract::kToHost : contract::kFromHost, expected, parts.plain)))
    return make_error("wrong MAC (not signed with this job's rendezvous secret)");
  received_ = expected;
  return std::string(parts.plain);
}

void AuthSession::adopt_member_nonce(std::string_view nonce) {
  challenge_.append(":").append(nonce);
  has_nonce_ = true;
}

std::string encode_nonce(const std::string& nonce) { return "NONCE " + nonce + "\n"; }

std::optional<std::string> parse_nonce(std::string_view line) {
  if (line.size() == 6 + contract::kChallengeHexDigits && line.substr(0, 6) == "NONCE " &&
      contract::is_lower_hex(line.substr(6)))
    return std::string(line.substr(6));
  return std::nullopt;
}

std::string encode_hello(const std::string& challenge) { return contract::hello_line(challenge); }

std::string encode_refused(const std::string& why) {
  std::string line = "REFUSED " + why;
  for (char& c : line)
    if (c == '\n' || c == '\r') c = ' ';
  return line + "\n";
}

bool is_refused(const std::string& line) { return line.rfind("REFUSED ", 0) == 0; }

Result<std::string> parse_hello(const std::string& line) {
  if (auto challenge = contract::parse_hello_line(line)) return *challenge;
  return make_error("expected HELLO and a challenge, got '" + line.substr(0, 80) + "'");
}

std::string new_challenge() {
  char bytes[16];
  size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
    if (n > 0) got += static_cast<size_t>(n);
  }
  return to_hex(std::string_view(bytes, sizeof bytes));
}

std::string secret_fingerprint(const std::string& secret) {
  const std::string mac = to_hex(hmac_sha256(secret, contract::kJobSecretFingerprintInput));
  return mac.substr(0, contract::kSecretFingerprintHexDigits);
}

Result<std::string> read_rdzv_secret(const std::string& path, const std::string& flag) {
  const std::string where = flag + " " + path + ": ";
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error(where + std::strerror(errno));
  std::string secret;
  char buf[1024];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) != 0) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return make_error(where + std::strerror(err));
    }
    secret.append(buf, static_cast<size_t>(n));
    if (secret.size() > kMaxSecret) break;
  }
  ::close(fd);
  if (secret.size() < kMinSecret || secret.size() > kMaxSecret)
    return make_error(where + "a secret must have " + std::to_string(kMinSecret) + " to " + std::to_string(kMaxSecret) +
                      " bytes (this one has " + (secret.size() > kMaxSecret ? "more" : std::to_string(secret.size())) +
                      ")");
  return secret;
}

}  // namespace kubedist::launcher
