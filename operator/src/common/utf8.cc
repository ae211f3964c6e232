#include "common/utf8.h"

namespace kubedist {
namespace {

// The length of the well-formed character that starts text[i], or 0 when none does (Unicode table 3-7).
size_t char_length(std::string_view text, size_t i) {
  const auto at = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b0 = at(i);
  if (b0 < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) lo = 0xA0;       // no overlong forms
    else if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) lo = 0x90;       // no overlong forms
    else if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  if (i + 1 >= text.size() || at(i + 1) < lo || at(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if (i + k >= text.size() || (at(i + k) & 0xC0) != 0x80) return 0;
  return n;
}

// How many bytes of an ill-formed sequence at text[i] one U+FFFD stands for: the lead byte and the continuation
// bytes that were still possible after it (the "maximal subpart"), at least 1.
size_t ill_formed_length(std::string_view text, size_t i) {
  const auto at = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b0 = at(i);
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) n = 2;
  else if (b0 >= 0xE0 && b0 <= 0xEF) n = 3, lo = b0 == 0xE0 ? 0xA0 : 0x80, hi = b0 == 0xED ? 0x9F : 0xBF;
  else if (b0 >= 0xF0 && b0 <= 0xF4) n = 4, lo = b0 == 0xF0 ? 0x90 : 0x80, hi = b0 == 0xF4 ? 0x8F : 0xBF;
  else return 1;
  size_t k = 1;
  if (i + k < text.size() && at(i + k) >= lo && at(i + k) <= hi) {
    for (++k; k < n && i + k < text.size() && (at(i + k) & 0xC0) == 0x80;) ++k;
  }
  return k;
}

}  // namespace

bool is_valid_utf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t n = char_length(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (const size_t n = char_length(text, i); n > 0) {
      out.append(text.substr(i, n));
      i += n;
    } else {
      out.append(kReplacementCharacter);
      i += ill_formed_length(text, i);
    }
  }
  return out;
}

std::string cut_utf8(std::string_view text, size_t max_bytes, std::string_view marker) {
  std::string out = valid_utf8(text);
  if (out.size() <= max_bytes) return out;
  if (marker.size() > max_bytes) marker = {};
  size_t cut = max_bytes - marker.size();
  // out is valid: a boundary is any byte that is not a continuation byte (10xxxxxx), or the end.
  while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
  out.resize(cut);
  out.append(marker);
  return out;
}

}  // namespace kubedist
