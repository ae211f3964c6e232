// Notices: what the operator tells node 0's rendezvous service that no launcher can see for itself (the API
// server's view of a node). One signed request line and one answer line, on the connection the STATUS poll uses
// (operator/src/rendezvous/status_client.h), so a notice needs no new port and no new secret.
//
//   RELEASE <node_rank> <why>        the node that pod's launcher runs on is going away (why: cordoned, not_ready,
//                                    termination_notice): a member gives its place to a ready spare at the next
//                                    round; a spare is never given a place from then on
//   answer: RELEASED <node_rank>     done (or done before: the same notice again changes nothing)
//           KEPT <node_rank> <text>  not done, and why in a few words (no spare waits, no such launcher...)
//
// Both halves encode and parse here, so they cannot drift apart.
#pragma once

#include <optional>
#include <sstream>
#include <string>
#include <string_view>

namespace kubedist::contract {

inline constexpr const char* kReleaseVerb = "RELEASE";
inline constexpr const char* kReleasedWord = "RELEASED";
inline constexpr const char* kKeptWord = "KEPT";

// Why the operator releases a launcher's place: the state of its node, as the API server shows it.
enum class ReleaseWhy {
  kCordoned,           // spec.unschedulable: cordoned, as `kubectl drain` does first
  kNotReady,           // the node's Ready condition is not True
  kTerminationNotice,  // a cloud's or autoscaler's taint announcing that the machine goes away
};

inline const char* to_string(ReleaseWhy why) {
  switch (why) {
    case ReleaseWhy::kCordoned: return "cordoned";
    case ReleaseWhy::kNotReady: return "not_ready";
    case ReleaseWhy::kTerminationNotice: return "termination_notice";
  }
  return "cordoned";
}

inline std::optional<ReleaseWhy> parse_release_why(std::string_view word) {
  for (ReleaseWhy why : {ReleaseWhy::kCordoned, ReleaseWhy::kNotReady, ReleaseWhy::kTerminationNotice})
    if (word == to_string(why)) return why;
  return std::nullopt;
}

// A node rank on a notice: a member's (0 up) or a spare's (kSpareNodeRankBase up), at most 6 digits.
inline std::optional<int> parse_notice_node_rank(const std::string& word) {
  if (word.empty() || word.size() > 6 || (word[0] == '0' && word.size() > 1)) return std::nullopt;
  for (char c : word)
    if (c < '0' || c > '9') return std::nullopt;
  return std::stoi(word);
}

struct ReleaseNotice {
  int node_rank = 0;
  ReleaseWhy why = ReleaseWhy::kCordoned;
  bool operator==(const ReleaseNotice&) const = default;
};

// The request line, without its '\n'.
inline std::string encode_release(const ReleaseNotice& n) {
  return std::string(kReleaseVerb) + " " + std::to_string(n.node_rank) + " " + to_string(n.why);
}

// The request's words after the verb ("1 cordoned"); nullopt for anything else (a word more, a bad rank or why).
inline std::optional<ReleaseNotice> parse_release_words(std::istream& in) {
  std::string rank, why, extra;
  if (!(in >> rank >> why) || in >> extra) return std::nullopt;
  const auto node_rank = parse_notice_node_rank(rank);
  const auto parsed_why = parse_release_why(why);
  if (!node_rank || !parsed_why) return std::nullopt;
  return ReleaseNotice{*node_rank, *parsed_why};
}

struct ReleaseAnswer {
  int node_rank = 0;
  bool released = false;
  std::string why{};  // KEPT: why not (single spaces, no newline)
  bool operator==(const ReleaseAnswer&) const = default;
};

// The answer line, without its '\n'.
inline std::string encode_release_answer(const ReleaseAnswer& a) {
  if (a.released) return std::string(kReleasedWord) + " " + std::to_string(a.node_rank);
  std::string why = a.why.empty() ? "kept" : a.why;
  for (char& c : why)
    if (c == '\n' || c == '\r') c = ' ';
  return std::string(kKeptWord) + " " + std::to_string(a.node_rank) + " " + why;
}

inline std::optional<ReleaseAnswer> parse_release_answer(const std::string& line) {
  std::istringstream in(line);
  std::string verb, rank;
  if (!(in >> verb >> rank) || (verb != kReleasedWord && verb != kKeptWord)) return std::nullopt;
  const auto node_rank = parse_notice_node_rank(rank);
  if (!node_rank) return std::nullopt;
  ReleaseAnswer a{*node_rank, verb == kReleasedWord, ""};
  std::string word;
  while (in >> word) a.why += (a.why.empty() ? "" : " ") + word;
  if (a.released != a.why.empty()) return std::nullopt;  // RELEASED says nothing more; KEPT says why
  return a;
}

}  // namespace kubedist::contract
