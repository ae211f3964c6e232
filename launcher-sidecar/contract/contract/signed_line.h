// The framing of the rendezvous' signed lines, which the launcher (rendezvous/auth.h, where the scheme is
// explained) and the operator's STATUS client both speak: the HELLO greeting, "MAC <n> <hex> <line>" and the
// text the HMAC-SHA256 is computed over. The HMAC itself is each side's own (the launcher links no OpenSSL).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kubedist::contract {

inline constexpr const char* kToHost = "req";    // the direction of lines to node 0 (joins, STATUS requests)
inline constexpr const char* kFromHost = "rep";  // the direction of node 0's lines
inline constexpr size_t kChallengeHexDigits = 32;
inline constexpr size_t kMacHexDigits = 64;  // HMAC-SHA256

// What the MAC of line number n (1, 2, ... per direction and connection) is computed over.
inline std::string mac_input(std::string_view dir, std::string_view challenge, std::uint64_t n,
                             std::string_view line) {
  std::string text = "kubedist-rdzv-1 ";
  text.append(dir).append(" ").append(challenge).append(" ").append(std::to_string(n)).append(" ").append(line);
  return text;
}

// A job's rendezvous secret is derived from its namespace's (the operator's Secret kubedist-rendezvous, one per
// namespace): lower-case hex of HMAC-SHA256(namespace secret, job_secret_input(the job's uid)). The pod's launcher
// init container derives it into the trainer's emptyDir (the trainer never sees the namespace secret), and the
// operator derives the same to sign its STATUS requests. A new job of an old name has a new uid, so a new secret.
inline std::string job_secret_input(std::string_view job_uid) { return "kubedist-rdzv-job-1 " + std::string(job_uid); }

// What tells a job's secret apart without giving it away: the first kSecretFingerprintHexDigits lower-case hex digits
// of HMAC-SHA256(the job's secret, job_secret_fingerprint_input()). The operator puts the fingerprint of the secret it
// wrote into Secret J-rdzv into the pods that mount it (KUBEDIST_RDZV_SECRET_FINGERPRINT), and the launcher refuses
// a secret file of another fingerprint: a J-rdzv someone else wrote first is not signed with.
inline constexpr const char* kJobSecretFingerprintInput = "kubedist-rdzv-job-fingerprint-1";
inline constexpr size_t kSecretFingerprintHexDigits = 16;

// The bytes a rendezvous secret may have, the namespace's and a job's: the launcher refuses any other (its init
// container deriving from the namespace's, its rendezvous signing with the job's), and the operator neither keeps
// nor derives from a namespace key outside them (it holds the namespace's new pods with a condition instead).
inline constexpr size_t kMinSecretBytes = 16;
inline constexpr size_t kMaxSecretBytes = 4096;

inline bool is_lower_hex(std::string_view s) {
  return s.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

// Node 0's greeting, with its '\n'.
inline std::string hello_line(std::string_view challenge) { return "HELLO " + std::string(challenge) + "\n"; }

// The challenge of a "HELLO <32 hex digits>" line, if it is one.
inline std::optional<std::string> parse_hello_line(std::string_view line) {
  if (line.size() == 6 + kChallengeHexDigits && line.substr(0, 6) == "HELLO " && is_lower_hex(line.substr(6))) {
    return std::string(line.substr(6));
  }
  return std::nullopt;
}

// A signed line, with its '\n'; line is the plain line without one.
inline std::string signed_line(std::uint64_t n, std::string_view mac_hex, std::string_view line) {
  return "MAC " + std::to_string(n) + " " + std::string(mac_hex) + " " + std::string(line) + "\n";
}

// The parts of "MAC <n> <64 hex digits> <plain line>" (views into the line), or why it is not one.
struct SignedLineParts {
  enum class Fault { kNone, kUnsigned, kMalformed } fault = Fault::kNone;  // kUnsigned: no "MAC " at all
  std::string_view count;  // decimal digits, as sent
  std::string_view mac;    // kMacHexDigits lower-case hex digits
  std::string_view plain;
};

inline SignedLineParts split_signed_line(std::string_view line) {
  using Fault = SignedLineParts::Fault;
  if (line.substr(0, 4) != "MAC ") return {Fault::kUnsigned, {}, {}, {}};
  line.remove_prefix(4);
  const size_t sp = line.find(' ');
  if (sp == std::string_view::npos || sp == 0 || sp > 20) return {Fault::kMalformed, {}, {}, {}};
  const std::string_view count = line.substr(0, sp);
  if (count.find_first_not_of("0123456789") != std::string_view::npos) return {Fault::kMalformed, {}, {}, {}};
  line.remove_prefix(sp + 1);
  if (line.size() < kMacHexDigits + 1 || line[kMacHexDigits] != ' ' || !is_lower_hex(line.substr(0, kMacHexDigits))) {
    return {Fault::kMalformed, {}, {}, {}};
  }
  return {Fault::kNone, count, line.substr(0, kMacHexDigits), line.substr(kMacHexDigits + 1)};
}

}  // namespace kubedist::contract
