#include "common/json_reader.h"

#include <cmath>
#include <cstdlib>

namespace kubedist::json_reader {
namespace {

// Bytes a string's fast path stops at: the quote, the backslash, control characters (refused) and the bytes of
// multi-byte UTF-8 sequences (checked).
struct StopTable {
  bool stop[256] = {};
  constexpr StopTable() {
    for (int c = 0; c < 0x20; ++c) stop[c] = true;
    for (int c = 0x80; c < 0x100; ++c) stop[c] = true;
    stop[static_cast<unsigned char>('"')] = true;
    stop[static_cast<unsigned char>('\\')] = true;
  }
};
constexpr StopTable kStop;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace

Cursor::Cursor(std::string_view text) : p_(text.data()), end_(text.data() + text.size()) {
  // nlohmann skips a UTF-8 byte order mark at the start.
  if (text.size() >= 3 && text.substr(0, 3) == "\xEF\xBB\xBF") p_ += 3;
}

void Cursor::skip_whitespace() {
  while (p_ != end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
}

bool Cursor::take(char c) {
  if (p_ == end_ || *p_ != c) return false;
  ++p_;
  return true;
}

bool Cursor::take_literal(std::string_view literal) {
  if (static_cast<size_t>(end_ - p_) < literal.size() || std::string_view(p_, literal.size()) != literal) return false;
  p_ += literal.size();
  return true;
}

bool Cursor::utf8_sequence() {
  const auto byte = [this](size_t i) { return static_cast<unsigned char>(p_[i]); };
  const auto cont = [&](size_t i, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
    return p_ + i < end_ && byte(i) >= lo && byte(i) <= hi;
  };
  const unsigned char b = byte(0);
  size_t n = 0;
  if (b >= 0xC2 && b <= 0xDF) {
    n = cont(1) ? 2 : 0;
  } else if (b == 0xE0) {
    n = cont(1, 0xA0) && cont(2) ? 3 : 0;
  } else if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) {
    n = cont(1) && cont(2) ? 3 : 0;
  } else if (b == 0xED) {
    n = cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;
  } else if (b == 0xF0) {
    n = cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  } else if (b >= 0xF1 && b <= 0xF3) {
    n = cont(1) && cont(2) && cont(3) ? 4 : 0;
  } else if (b == 0xF4) {
    n = cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
  }
  p_ += n;
  return n != 0;
}

bool Cursor::escape(std::string* decoded) {
  if (p_ == end_) return false;
  const char e = *p_++;
  char plain = 0;
  switch (e) {
    case '"': plain = '"'; break;
    case '\\': plain = '\\'; break;
    case '/': plain = '/'; break;
    case 'b': plain = '\b'; break;
    case 'f': plain = '\f'; break;
    case 'n': plain = '\n'; break;
    case 'r': plain = '\r'; break;
    case 't': plain = '\t'; break;
    case 'u': break;
    default: return false;
  }
  if (plain != 0) {
    if (decoded != nullptr) *decoded += plain;
    return true;
  }
  const auto code_unit = [this](uint32_t* out) {
    if (end_ - p_ < 4) return false;
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const int h = hex_value(p_[i]);
      if (h < 0) return false;
      v = v * 16 + static_cast<uint32_t>(h);
    }
    p_ += 4;
    *out = v;
    return true;
  };
  uint32_t cp = 0;
  if (!code_unit(&cp)) return false;
  if (cp >= 0xDC00 && cp <= 0xDFFF) return false;  // a low surrogate first
  if (cp >= 0xD800 && cp <= 0xDBFF) {               // a high one: its low one must follow
    uint32_t low = 0;
    if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return false;
    p_ += 2;
    if (!code_unit(&low) || low < 0xDC00 || low > 0xDFFF) return false;
    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
  }
  if (decoded != nullptr) append_utf8(*decoded, cp);
  return true;
}

bool Cursor::read_string(std::string_view* out) {
  const char* start = p_;
  // Without escapes the text is the input's own bytes.
  while (p_ != end_) {
    const unsigned char c = static_cast<unsigned char>(*p_);
    if (!kStop.stop[c]) {
      ++p_;
      continue;
    }
    if (c == '"') {
      *out = std::string_view(start, p_ - start);
      ++p_;
      return true;
    }
    if (c >= 0x80) {
      if (!utf8_sequence()) return false;
      continue;
    }
    if (c != '\\') return false;  // a control character
    break;
  }
  if (p_ == end_) return false;
  // An escape: decoded into the scratch buffer from here on.
  scratch_.assign(start, p_ - start);
  if (!string_rest(&scratch_)) return false;
  *out = scratch_;
  return true;
}

bool Cursor::skip_string() { return string_rest(nullptr); }

bool Cursor::string_rest(std::string* decoded) {
  while (p_ != end_) {
    const char* run = p_;  // plain bytes, taken as they are
    while (p_ != end_ && !kStop.stop[static_cast<unsigned char>(*p_)]) ++p_;
    if (decoded != nullptr) decoded->append(run, p_ - run);
    if (p_ == end_) return false;
    const unsigned char c = static_cast<unsigned char>(*p_);
    if (c == '"') {
      ++p_;
      return true;
    }
    if (c == '\\') {
      ++p_;
      if (!escape(decoded)) return false;
    } else if (c >= 0x80) {
      const char* from = p_;
      if (!utf8_sequence()) return false;
      if (decoded != nullptr) decoded->append(from, p_ - from);
    } else {
      return false;  // a control character
    }
  }
  return false;
}

Cursor::Number Cursor::read_number(int64_t* integer, uint64_t* unsigned_integer) {
  const char* start = p_;
  const bool negative = take('-');
  if (p_ == end_ || !is_digit(*p_)) return Number::kInvalid;
  uint64_t v = 0;
  bool overflow = false;
  if (*p_ == '0') {
    ++p_;
  } else {
    while (p_ != end_ && is_digit(*p_)) {
      const uint64_t d = static_cast<uint64_t>(*p_ - '0');
      if (v > (UINT64_MAX - d) / 10) overflow = true;
      v = v * 10 + d;
      ++p_;
    }
  }
  bool fraction = false;
  if (p_ != end_ && *p_ == '.') {
    ++p_;
    if (p_ == end_ || !is_digit(*p_)) return Number::kInvalid;
    while (p_ != end_ && is_digit(*p_)) ++p_;
    fraction = true;
  }
  if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
    ++p_;
    if (p_ != end_ && (*p_ == '+' || *p_ == '-')) ++p_;
    if (p_ == end_ || !is_digit(*p_)) return Number::kInvalid;
    while (p_ != end_ && is_digit(*p_)) ++p_;
    fraction = true;
  }
  // nlohmann refuses a number whose double is not finite (1e400, or an integer of 400 digits).
  if (fraction || overflow) return std::isfinite(std::strtod(std::string(start, p_).c_str(), nullptr)) ? Number::kFloat
                                                                                                   : Number::kInvalid;
  if (!negative) {
    *unsigned_integer = v;
    return Number::kUnsigned;
  }
  // -9223372036854775808 is the most negative an int64_t holds; beyond it nlohmann reads a float.
  if (v > static_cast<uint64_t>(INT64_MAX) + 1) return Number::kFloat;  // finite: at most 20 digits
  *integer = v == static_cast<uint64_t>(INT64_MAX) + 1 ? INT64_MIN : -static_cast<int64_t>(v);
  return Number::kInteger;
}

bool Cursor::skip_value() {
  std::string open;  // the containers skipped into, innermost last: '{' or '['
  enum class Next { kValue, kKey, kAfter } next = Next::kValue;
  while (true) {
    skip_whitespace();
    if (next == Next::kKey) {
      if (!take('"') || !skip_string()) return false;
      skip_whitespace();
      if (!take(':')) return false;
      next = Next::kValue;
      continue;
    }
    if (next == Next::kAfter) {
      if (open.empty()) return true;
      const bool in_object = open.back() == '{';
      if (take(',')) {
        next = in_object ? Next::kKey : Next::kValue;
      } else if (take(in_object ? '}' : ']')) {
        open.pop_back();
      } else {
        return false;
      }
      continue;
    }
    // A value.
    next = Next::kAfter;
    switch (peek()) {
      case '{':
      case '[': {
        const char opener = peek();
        advance();
        skip_whitespace();
        if (take(opener == '{' ? '}' : ']')) break;  // empty
        open += opener;
        next = opener == '{' ? Next::kKey : Next::kValue;
        break;
      }
      case '"':
        advance();
        if (!skip_string()) return false;
        break;
      case 't':
        if (!take_literal("true")) return false;
        break;
      case 'f':
        if (!take_literal("false")) return false;
        break;
      case 'n':
        if (!take_literal("null")) return false;
        break;
      default: {
        int64_t i = 0;
        uint64_t u = 0;
        if (read_number(&i, &u) == Number::kInvalid) return false;
        break;
      }
    }
  }
}

}  // namespace kubedist::json_reader
