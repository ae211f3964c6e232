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
// A refused line closes the connection after an unsigned "REFUSED <why>", so that a node with the wrong secret
// stops with that reason. Without a secret nothing is wrapped and there is no HELLO (torchrun has no secret either).
#pragma once

#include <cstdint>
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

 private:
  std::string mac(const char* dir, std::uint64_t n, std::string_view line) const;
  std::string secret_;
  std::string challenge_;
  Side side_;
  std::uint64_t sent_ = 0;
  std::uint64_t received_ = 0;
};

std::string encode_hello(const std::string& challenge);
// Node 0's last word on a connection it closes for a refused line: "REFUSED <why>" (unsigned).
std::string encode_refused(const std::string& why);
bool is_refused(const std::string& line);
Result<std::string> parse_hello(const std::string& line);  // the challenge
std::string new_challenge();                               // 16 random bytes from the kernel, in hex

// The secret is the file's bytes, all of them (at least 16, at most 4096); `flag` names the file in errors.
Result<std::string> read_rdzv_secret(const std::string& path, const std::string& flag = "--rdzv-secret-file");

}  // namespace kubedist::launcher
