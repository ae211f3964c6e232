// common/json_reader.h held to nlohmann's SAX parser: the same calls in the same order for every text a handler
// wants whole, the same verdict (JSON or not) for every text, whatever the handler skips.
#include "common/json_reader.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mutate.h"

namespace kubedist::json_reader {
namespace {

using nlohmann::json;

// Records the calls as text; wants everything, or nothing below depth `deepest`.
struct Recorder {
  std::vector<std::string> calls;
  int depth = 0;
  int deepest = 1 << 30;

  bool wants() const { return depth <= deepest; }
  void null() { calls.push_back("null"); }
  void boolean(bool v) { calls.push_back(v ? "true" : "false"); }
  void number_integer(int64_t v) { calls.push_back("int " + std::to_string(v)); }
  void number_unsigned(uint64_t v) { calls.push_back("uint " + std::to_string(v)); }
  void number_float() { calls.push_back("float"); }
  void string(std::string_view s) { calls.push_back("string " + std::string(s)); }
  void key(std::string_view k) { calls.push_back("key " + std::string(k)); }
  void start_object() {
    calls.push_back("{");
    ++depth;
  }
  void end_object() {
    calls.push_back("}");
    --depth;
  }
  void start_array() {
    calls.push_back("[");
    ++depth;
  }
  void end_array() {
    calls.push_back("]");
    --depth;
  }
};

// nlohmann's calls, recorded the same way.
struct NlohmannRecorder {
  std::vector<std::string> calls;
  bool null() { return add("null"); }
  bool boolean(bool v) { return add(v ? "true" : "false"); }
  bool number_integer(json::number_integer_t v) { return add("int " + std::to_string(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return add("uint " + std::to_string(v)); }
  bool number_float(json::number_float_t, const json::string_t&) { return add("float"); }
  bool string(json::string_t& s) { return add("string " + s); }
  bool binary(json::binary_t&) { return add("binary"); }
  bool key(json::string_t& k) { return add("key " + k); }
  bool start_object(std::size_t) { return add("{"); }
  bool end_object() { return add("}"); }
  bool start_array(std::size_t) { return add("["); }
  bool end_array() { return add("]"); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) { return false; }
  bool add(std::string c) {
    calls.push_back(std::move(c));
    return true;
  }
};

const char* const kValid[] = {
    "{}", "[]", "0", "-0", "1", "-1", "3.25", "-2.5e-3", "1E+10", "1e-400",
    "18446744073709551615", "18446744073709551616", "-9223372036854775808", "-9223372036854775809",
    "123456789012345678901234567890", "true", "false", "null", "\"\"", " \t\r\n{ \"a\" : [ 1 , 2 ] } \n",
    R"({"a": {"b": {"c": [1, {"d": null}, [], {}]}}, "e": "f"})",
    R"(["esc \" \\ \/ \b \f \n \r \t", "\u00e9\u20ac\ud83d\ude00", "raw é € 😀", "\u0000 nul"])",
    R"({"dup": 1, "dup": 2, "": "empty key"})",
    "\xEF\xBB\xBF{\"bom\": 1}",
    R"({"managedFields": [{"fieldsV1": {"f:spec": {"k:{\"name\":\"trainer\"}": {}}}}], "x": [[[[[[1]]]]]]})",
};

std::vector<std::string> invalid_texts() {
  std::vector<std::string> texts = {
      "", " ", "{", "}", "[", "]", "[1,]", "{\"a\":1,}", "{\"a\"}", "{\"a\" 1}", "{1: 2}", "[1 2]", "01", "-", "+1",
      ".5", "1.", "1e", "1e+", "--1", "tru", "nul", "falsey", "\"unterminated", "\"bad \\x escape\"",
      "\"bad \\u12G4\"", "\"lone \\udc00 low\"", "\"high \\ud83d alone\"", "\"high \\ud83d\\u0041\"",
      "\"ctrl \x01 char\"", "\"bad utf8 \xC0\xAF\"", "\"bad utf8 \xED\xA0\x80\"", "\"cut \xE2\x82\"",
      "\"over \xF4\x90\x80\x80\"", "{} x", "[1] [2]", "1e400", "-1e400", "1e4e0", "[\"a\",", "{\"a\":\"b\"", "\xEF\xBB"};
  texts.push_back(std::string(400, '9'));             // an integer whose double is not finite
  texts.push_back(std::string("[1,\0]", 5));            // a NUL where a value should be
  texts.push_back(std::string("\"nul \0 raw\"", 11));  // a raw NUL in a string
  return texts;
}

std::pair<bool, std::vector<std::string>> nlohmann_reading(const std::string& text) {
  NlohmannRecorder r;
  const bool ok = json::sax_parse(text, &r);
  return {ok, r.calls};
}

TEST(JsonReader, MakesNlohmannsCallsForEveryTextItWantsWhole) {
  for (const std::string text : kValid) {
    Recorder mine;
    const auto [ok, theirs] = nlohmann_reading(text);
    ASSERT_TRUE(ok) << text;
    EXPECT_TRUE(read(text, mine)) << text;
    EXPECT_EQ(mine.calls, theirs) << text;
  }
}

TEST(JsonReader, RefusesWhatNlohmannRefusesWantedOrSkipped) {
  for (const std::string& text : invalid_texts()) {
    ASSERT_FALSE(nlohmann_reading(text).first) << text;
    Recorder wanted;
    Recorder skipped;
    skipped.deepest = -1;  // the whole text skipped
    EXPECT_FALSE(read(text, wanted)) << text;
    EXPECT_FALSE(read(text, skipped)) << text;
  }
}

TEST(JsonReader, ANulByteAfterTheValueEndsTheTextAsItDoesForNlohmann) {
  const std::string text("{\"a\": 1} \0 anything", 19);
  ASSERT_TRUE(nlohmann_reading(text).first);
  Recorder mine;
  EXPECT_TRUE(read(text, mine));
  EXPECT_EQ(mine.calls, nlohmann_reading(text).second);
}

TEST(JsonReader, ASkippedValueIsNeverHandedOverButItsTextIsStillChecked) {
  Recorder top;
  top.deepest = 0;  // the root's own fields, nothing below them
  ASSERT_TRUE(read(R"({"a": {"deep": [1, "x"]}, "b": 2, "c": [{"d": 3}]})", top));
  EXPECT_EQ(top.calls, (std::vector<std::string>{"{", "key a", "key b", "key c", "}"}));
  Recorder bad;
  bad.deepest = 0;
  EXPECT_FALSE(read(R"({"a": {"deep": [1, "x",]}})", bad));
  // However deep a skipped value is, it is skipped without recursion.
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  Recorder skip_all;
  skip_all.deepest = -1;
  EXPECT_TRUE(read(deep, skip_all));
  EXPECT_FALSE(read(deep + "]", skip_all));
  // A wanted value nested deeper than the reader recurses is refused, not a crash.
  Recorder want_all;
  EXPECT_FALSE(read(deep, want_all));
}

// Mutations of the valid texts (a byte deleted, replaced or inserted): whatever comes out, the verdict is
// nlohmann's, and where both take it, so are the calls.
TEST(JsonReader, AgreesWithNlohmannOnMutatedTexts) {
  std::mt19937 rng(25);
  const std::string alphabet = "{}[]\",:0123456789.-+eEtrufalsn\\u \t\n\xC3\xA9\xED\x80\x01";
  int taken = 0;
  for (int round = 0; round < 20000; ++round) {
    const std::string text = testing::mutate(kValid[rng() % std::size(kValid)], rng, alphabet, 3);
    const auto [ok, theirs] = nlohmann_reading(text);
    Recorder mine;
    Recorder skipped;
    skipped.deepest = 0;
    ASSERT_EQ(read(text, mine), ok) << text;
    ASSERT_EQ(read(text, skipped), ok) << text;
    if (ok) {
      ASSERT_EQ(mine.calls, theirs) << text;
      ++taken;
    }
  }
  EXPECT_GT(taken, 1000);  // the mutations kept enough valid texts to compare calls on
}

}  // namespace
}  // namespace kubedist::json_reader
