// SHA-256 and HMAC-SHA256 (FIPS 180-4, RFC 2104): the rendezvous' message authentication. Our own small copy
// because the launcher is linked -static and OpenSSL 3's static libcrypto brings its provider machinery (and
// dlopen) into a 2 MB binary for one hash.
#pragma once

#include <string>
#include <string_view>

namespace kubedist::launcher {

std::string sha256(std::string_view data);                        // 32 raw bytes
std::string hmac_sha256(std::string_view key, std::string_view data);  // 32 raw bytes
std::string to_hex(std::string_view bytes);                       // lower case

}  // namespace kubedist::launcher
