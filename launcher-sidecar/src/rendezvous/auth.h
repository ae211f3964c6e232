// RendezvousAuth: authenticates the rendezvous' lines with a per-job secret (--rdzv-secret-file).
//
// With a secret, the host greets every connection with a fresh random challenge
//     HELLO <32 hex digits>
// and from then on every line in either direction is wrapped as
//     MAC <n> <64 hex digits> <the plain line>
// where n counts the lines sent in that direction on this connection (1, 2, ...) and the hex digits are
// HMAC-SHA256(secret, "kubedist-rdzv-1 <dir> <challenge> <n> <the plain line>"), dir "req" for lines to the host
// and "rep" for the host's. A line counts only with the next n and a matching MAC: a forged line fails the MAC, a
// recorded one fails the counter (same connection) or the challenge (any other connection), and a reply of the
// host cannot pass for a request. Lines are authenticated, not encrypted: nothing in them is secret.
// A member gives the session a nonce of its own: its first line is "NONCE <32 hex digits>" (sealed as above), and
// from the next line on, in both directions, the MAC is taken over "<challenge>:<nonce>" in place of the challenge;
// node 0 answers "NONCE TAKEN", its first line under the nonce.
// So node 0's lines are fresh to this member too: lines recorded from another session (another node 0, or one at
// node 0's address while it is away, replaying them) fail. A member that sends no NONCE (an earlier launcher, the
// operator's STATUS poller) keeps the challenge alone; a member whose NONCE an earlier node 0 does not know (it
// closes the connection) joins without one from then on, unless node 0 has already taken its nonce once in this
// launcher's life (trust on first use: a close then is not a reason to accept unfresh lines).
// A refused line closes the connection after "REFUSED <why>", sealed when the HELLO was sent, so that a member can
// tell node 0's refusal from a forged one. Without a secret nothing is wrapped and there is no HELLO (torchrun has
// no secret either).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "util/result.h"

namespace kubedist::launcher {

class AuthSession {
 public:
  enum class Side { Host, Member };  // Member: a joining node, or anyone asking for STATUS
  AuthSession(std::string secret, std::string challenge, Side side);

  // Wraps one line (with or without its '\n'); the result ends with '\n'.
  std::string seal(std::string_view line);
  // The plain line of a wrapped one (without '\n'), or why it is refused.
  Result<std::string> open(std::string_view line);
  // From the next line on, MACs cover the member's nonce too (after its NONCE line, on both sides).
  void adopt_member_nonce(std::string_view nonce);
  bool has_member_nonce() const { return has_nonce_; }
  std::uint64_t received() const { return received_; }

 private:
  std::string mac(const char* dir, std::uint64_t n, std::string_view line) const;
  std::string secret_;
  std::string challenge_;
  Side side_;
  std::uint64_t sent_ = 0;
  std::uint64_t received_ = 0;
  bool has_nonce_ = false;
};

// A member's NONCE line, and its nonce if a line is one.
std::string encode_nonce(const std::string& nonce);
std::optional<std::string> parse_nonce(std::string_view line);
// Node 0's answer to a NONCE, the first line sealed with it.
inline constexpr std::string_view kNonceTaken = "NONCE TAKEN\n";

std::string encode_hello(const std::string& challenge);
// Node 0's last word on a connection it closes for a refused line: "REFUSED <why>" (unsigned).
std::string encode_refused(const std::string& why);
bool is_refused(const std::string& line);
Result<std::string> parse_hello(const std::string& line);  // the challenge
std::string new_challenge();                               // 16 random bytes from the kernel, in hex

// The secret's fingerprint (contract/signed_line.h): what the operator names in KUBEDIST_RDZV_SECRET_FINGERPRINT.
std::string secret_fingerprint(const std::string& secret);

// The secret is the file's bytes, all of them (at least 16, at most 4096); `flag` names the file in errors.
Result<std::string> read_rdzv_secret(const std::string& path, const std::string& flag = "--rdzv-secret-file");

}  // namespace kubedist::launcher
