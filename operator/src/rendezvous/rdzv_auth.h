// The operator's side of the launcher's rendezvous authentication (launcher-sidecar/src/rendezvous/auth.h): node 0
// greets with "HELLO <challenge>", and every line after it is "MAC <n> <hex HMAC-SHA256> <line>" over
// "kubedist-rdzv-1 <req|rep> <challenge> <n> <line>" with the job's secret (derive_job_secret from the namespace's
// Secret kubedist-rendezvous; J-rdzv only for an earlier operator's job or a changed key). The framing is the
// contract's (contract/signed_line.h); the HMAC here is OpenSSL's.
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"

namespace kubedist::rendezvous {

// The challenge of a "HELLO <32 hex digits>" line.
Result<std::string> parse_rdzv_hello(const std::string& line);
// Request number n of this connection, sealed: "MAC n hex line\n".
std::string seal_rdzv_request(const std::string& secret, const std::string& challenge, std::uint64_t n,
                              const std::string& line);
// The plain line of node 0's reply number n, or why it is not node 0's.
Result<std::string> open_rdzv_reply(const std::string& secret, const std::string& challenge, std::uint64_t n,
                                    const std::string& line);
// 32 random bytes from OpenSSL, in hex: the key of a new namespace Secret kubedist-rendezvous.
Result<std::string> new_rdzv_secret();
// A job's rendezvous secret, derived from its namespace's as the launcher's init container derives it
// (contract/signed_line.h): lower-case hex of HMAC-SHA256(namespace secret, "kubedist-rdzv-job-1 " + job uid).
std::string derive_job_secret(const std::string& namespace_secret, const std::string& job_uid);
// What a pod records of the namespace key its job's secret is derived from (annotation kubedist.io/rendezvous-key):
// the first 16 hex digits of HMAC-SHA256(key, "kubedist-rdzv-fingerprint-1"), which tells keys apart and gives
// nothing of the key or of any job's secret (whose HMAC input differs).
std::string rdzv_key_fingerprint(const std::string& namespace_secret);

// A job's secret's fingerprint (contract/signed_line.h), which its launchers check the secret they hold against.
std::string job_secret_fingerprint(const std::string& job_secret);

// Bytes as lowercase hex, two digits each (how keys are made and kept: new_rdzv_secret, act/keyring.h).
std::string to_hex(const std::string& bytes);

}  // namespace kubedist::rendezvous
