#include "trainingjob/rdzv_auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

namespace kubedist::trainingjob {
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

std::string mac(const std::string& secret, const char* dir, const std::string& challenge, std::uint64_t n,
                const std::string& line) {
  const std::string text = std::string("kubedist-rdzv-1 ") + dir + " " + challenge + " " + std::to_string(n) + " " + line;
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()), reinterpret_cast<const unsigned char*>(text.data()),
       text.size(), out, &len);
  return hex(out, len);
}

Error fail(const std::string& what) { return Error{Error::Kind::kOther, what, 0}; }

}  // namespace

Result<std::string> parse_rdzv_hello(const std::string& line) {
  if (line.size() == 38 && line.compare(0, 6, "HELLO ") == 0 &&
      line.find_first_not_of("0123456789abcdef", 6) == std::string::npos) {
    return line.substr(6);
  }
  return fail("expected HELLO and a challenge, got '" + line.substr(0, 80) + "'");
}

std::string seal_rdzv_request(const std::string& secret, const std::string& challenge, std::uint64_t n,
                              const std::string& line) {
  return "MAC " + std::to_string(n) + " " + mac(secret, "req", challenge, n, line) + " " + line + "\n";
}

Result<std::string> open_rdzv_reply(const std::string& secret, const std::string& challenge, std::uint64_t n,
                                    const std::string& line) {
  const std::string head = "MAC " + std::to_string(n) + " ";
  if (line.compare(0, head.size(), head) != 0 || line.size() < head.size() + 65 || line[head.size() + 64] != ' ') {
    return fail("an unsigned or malformed answer: '" + line.substr(0, 80) + "'");
  }
  const std::string given = line.substr(head.size(), 64), plain = line.substr(head.size() + 65);
  const std::string expected = mac(secret, "rep", challenge, n, plain);
  if (CRYPTO_memcmp(given.data(), expected.data(), 64) != 0) return fail("an answer with a wrong MAC");
  return plain;
}

Result<std::string> new_rdzv_secret() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1) return fail("no random bytes from OpenSSL");
  return hex(bytes, sizeof bytes);
}

}  // namespace kubedist::trainingjob
