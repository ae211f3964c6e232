// JsonReader: one JSON text read into a handler's calls, skipping whole every value the handler does not want. It
// makes the calls nlohmann's SAX parser makes, in the same order, and refuses every text nlohmann refuses, but a
// value the handler says it does not want (its managedFields, the containers' images and environment...) is only
// checked, never decoded and never handed over: most of a pod's watch event is such (api/pod_event.cc).
// tests/unit/operator/json_reader_test.cc holds it to nlohmann's parser, call for call.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace kubedist::json_reader {

// What the reader needs besides the handler: where it is in the text, and room to decode a string with escapes.
class Cursor {
 public:
  explicit Cursor(std::string_view text);

  bool at_end() const { return p_ == end_; }
  const char* position() const { return p_; }
  char peek() const { return p_ != end_ ? *p_ : '\0'; }
  void advance() { ++p_; }
  void skip_whitespace();
  // The byte at the cursor is c: consumed.
  bool take(char c);
  // The literal at the cursor (true, false, null): consumed.
  bool take_literal(std::string_view literal);
  // The string at the cursor (after its opening quote is consumed): its decoded text, a view into the input or
  // into the cursor's scratch buffer, valid until the next string; false on an invalid string.
  bool read_string(std::string_view* out);
  // The same, checked only.
  bool skip_string();

  enum class Number { kInvalid, kInteger, kUnsigned, kFloat };
  // The number at the cursor: its kind as nlohmann reads it (a negative integer, a non-negative one, anything with a
  // fraction or exponent or too large for 64 bits), with its value for the integer kinds.
  Number read_number(int64_t* integer, uint64_t* unsigned_integer);
  // Any value at the cursor, checked only (however deep: without recursion).
  bool skip_value();

 private:
  bool utf8_sequence();  // a multi-byte UTF-8 sequence at the cursor, as RFC 3629 allows it: consumed
  bool escape(std::string* decoded);  // the escape after a backslash: consumed (and decoded when decoded != null)
  bool string_rest(std::string* decoded);  // the rest of a string, its closing quote included: the same

  const char* p_;
  const char* end_;
  std::string scratch_;
};

// Reads text into handler h, which provides
//   bool wants() const                   whether to hand it the value about to be read (else it is skipped)
//   void null(), boolean(bool), number_integer(int64_t), number_unsigned(uint64_t), number_float(),
//        string(std::string_view), key(std::string_view), start_object(), end_object(), start_array(), end_array()
// Returns false when text is not one JSON value (whitespace around it allowed, as nlohmann's strict parse has it), and
// for a wanted value nested deeper than 512 levels (nlohmann would take it; a skipped one may be of any depth).
template <typename Handler>
class Reader {
 public:
  Reader(std::string_view text, Handler& h) : c_(text), h_(h) {}

  bool read() {
    if (!value(0)) return false;
    c_.skip_whitespace();
    return c_.at_end() || c_.peek() == '\0';  // nlohmann ends its input at a NUL byte between tokens
  }

 private:
  static constexpr int kMaxDepth = 512;  // nesting deeper than this is refused rather than recursed into

  bool value(int depth) {
    c_.skip_whitespace();
    if (depth > kMaxDepth) return false;
    if (!h_.wants()) return c_.skip_value();
    switch (c_.peek()) {
      case '{': return object(depth);
      case '[': return array(depth);
      case '"': {
        c_.advance();
        std::string_view s;
        if (!c_.read_string(&s)) return false;
        h_.string(s);
        return true;
      }
      case 't':
        if (!c_.take_literal("true")) return false;
        h_.boolean(true);
        return true;
      case 'f':
        if (!c_.take_literal("false")) return false;
        h_.boolean(false);
        return true;
      case 'n':
        if (!c_.take_literal("null")) return false;
        h_.null();
        return true;
      default: {
        int64_t i = 0;
        uint64_t u = 0;
        switch (c_.read_number(&i, &u)) {
          case Cursor::Number::kInteger: h_.number_integer(i); return true;
          case Cursor::Number::kUnsigned: h_.number_unsigned(u); return true;
          case Cursor::Number::kFloat: h_.number_float(); return true;
          case Cursor::Number::kInvalid: return false;
        }
        return false;
      }
    }
  }

  bool object(int depth) {
    c_.advance();
    h_.start_object();
    c_.skip_whitespace();
    if (c_.take('}')) {
      h_.end_object();
      return true;
    }
    while (true) {
      c_.skip_whitespace();
      if (!c_.take('"')) return false;
      std::string_view k;
      if (!c_.read_string(&k)) return false;
      h_.key(k);
      c_.skip_whitespace();
      if (!c_.take(':') || !value(depth + 1)) return false;
      c_.skip_whitespace();
      if (c_.take(',')) continue;
      if (!c_.take('}')) return false;
      h_.end_object();
      return true;
    }
  }

  bool array(int depth) {
    c_.advance();
    h_.start_array();
    c_.skip_whitespace();
    if (c_.take(']')) {
      h_.end_array();
      return true;
    }
    while (true) {
      if (!value(depth + 1)) return false;
      c_.skip_whitespace();
      if (c_.take(',')) continue;
      if (!c_.take(']')) return false;
      h_.end_array();
      return true;
    }
  }

  Cursor c_;
  Handler& h_;
};

template <typename Handler>
bool read(std::string_view text, Handler& h) {
  return Reader<Handler>(text, h).read();
}

}  // namespace kubedist::json_reader
