// Valid UTF-8 from any bytes: what the operator does to text it did not write before it writes it anywhere.
//
// Why: the API server takes JSON, and JSON text is UTF-8. A worker's hang stacks or termination message may hold
// any bytes (a Python repr of bytes, a log cut in the middle of a character); one invalid byte in an Event or a
// status patch made the whole request unsendable. So text from outside is made valid where it enters, and every
// cut is made at a character boundary.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace kubedist {

// U+FFFD REPLACEMENT CHARACTER, as UTF-8.
inline constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";

// Whether text is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF).
bool is_valid_utf8(std::string_view text);

// text with each maximal ill-formed subsequence replaced by U+FFFD (as WHATWG and Unicode's "best practice" do,
// and Go's encoding/json, which the API server's own Events go through); valid text comes back unchanged.
std::string valid_utf8(std::string_view text);

// valid_utf8(text), at most max_bytes long: when longer, cut at the last character boundary that leaves room for
// marker (e.g. "..."), and marker appended. A marker longer than max_bytes is left out.
std::string cut_utf8(std::string_view text, size_t max_bytes, std::string_view marker = "");

}  // namespace kubedist
