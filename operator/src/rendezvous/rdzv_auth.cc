#include "rendezvous/rdzv_auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "contract/signed_line.h"

namespace kubedist::rendezvous {
namespace {

std::string hex(const unsigned char* bytes, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out += digits[bytes[i] >> 4];
    out += digits[bytes[i] & 15];
  }
  return out;
}

std::string hmac_sha256_hex(const std::string& key, const std::string& text) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(text.data()),
       text.size(), out, &len);
  return hex(out, len);
}

std::string mac(const std::string& secret, const char* dir, const std::string& challenge, std::uint64_t n,
                std::string_view line) {
  return hmac_sha256_hex(secret, contract::mac_input(dir, challenge, n, line));
}

Error fail(const std::string& what) { return Error{Error::Kind::kOther, what, 0}; }

}  // namespace

Result<std::string> parse_rdzv_hello(const std::string& line) {
  if (auto challenge = contract::parse_hello_line(line)) return *challenge;
  return fail("expected HELLO and a challenge, got '" + line.substr(0, 80) + "'");
}

std::string seal_rdzv_request(const std::string& secret, const std::string& challenge, std::uint64_t n,
                              const std::string& line) {
  return contract::signed_line(n, mac(secret, contract::kToHost, challenge, n, line), line);
}

Result<std::string> open_rdzv_reply(const std::string& secret, const std::string& challenge, std::uint64_t n,
                                    const std::string& line) {
  const contract::SignedLineParts parts = contract::split_signed_line(line);
  if (parts.fault != contract::SignedLineParts::Fault::kNone || parts.count != std::to_string(n)) {
    return fail("an unsigned or malformed answer: '" + line.substr(0, 80) + "'");
  }
  const std::string expected = mac(secret, contract::kFromHost, challenge, n, parts.plain);
  if (CRYPTO_memcmp(parts.mac.data(), expected.data(), contract::kMacHexDigits) != 0) {
    return fail("an answer with a wrong MAC");
  }
  return std::string(parts.plain);
}

std::string derive_job_secret(const std::string& namespace_secret, const std::string& job_uid) {
  return hmac_sha256_hex(namespace_secret, contract::job_secret_input(job_uid));
}

std::string job_secret_fingerprint(const std::string& job_secret) {
  const std::string mac = hmac_sha256_hex(job_secret, contract::kJobSecretFingerprintInput);
  return mac.substr(0, contract::kSecretFingerprintHexDigits);
}

std::string rdzv_key_fingerprint(const std::string& namespace_secret) {
  return hmac_sha256_hex(namespace_secret, "kubedist-rdzv-fingerprint-1").substr(0, 16);
}

Result<std::string> new_rdzv_secret() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1) return fail("no random bytes from OpenSSL");
  return hex(bytes, sizeof bytes);
}

std::string to_hex(const std::string& bytes) {
  return hex(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
}

}  // namespace kubedist::rendezvous
