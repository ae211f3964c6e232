// The STATUS line: node 0's rendezvous service answers a "STATUS" request with it (the launcher encodes it) and
// the operator's poller parses it. One encoder and one parser, so the two halves cannot drift apart.
//
//   STATUS round=3 restarts=4 node_lost=1 scale=2 worker_crash=1 nodes=2 world_size=8 phase=running run=resnet
//
// key=value words after the verb: round, restarts, one word per restart cause (restart_cause.h), nodes,
// world_size, phase and run. A reader takes any other key with a count as a cause it does not know yet, so the
// launcher can add causes without breaking older operators. Values are single words: nothing is escaped (the run
// id is one word on the rendezvous' JOIN line too).
#pragma once

#include <map>
#include <optional>
#include <sstream>
#include <string>

namespace kubedist::contract {

inline constexpr const char* kStatusVerb = "STATUS";  // the request ("STATUS") and the answer's first word

// The state of the rendezvous at one moment.
struct StatusReport {
  int round = -1;     // the last round formed, -1 before the first
  int restarts = 0;   // the sum of restarts_by_cause
  std::map<std::string, int> restarts_by_cause;  // restart_cause.h; the launcher sends each of its causes, also 0
  int nodes = 0;      // nodes in the last round formed
  int world_size = 0; // worker processes in the last round formed
  std::string phase;  // gathering | running | over
  std::string run_id;  // whose rendezvous this is (the job), so that a poller cannot credit another job; "" from
                       // launchers older than the field
  bool operator==(const StatusReport&) const = default;
};

// The line, with its '\n'.
inline std::string encode_status_line(const StatusReport& r) {
  std::string line = std::string(kStatusVerb) + " round=" + std::to_string(r.round) +
                     " restarts=" + std::to_string(r.restarts);
  for (const auto& [cause, n] : r.restarts_by_cause) line += " " + cause + "=" + std::to_string(n);
  return line + " nodes=" + std::to_string(r.nodes) + " world_size=" + std::to_string(r.world_size) +
         " phase=" + r.phase + " run=" + r.run_id + "\n";
}

// A parsed line, or why it is not one (error non-empty, report empty).
struct ParsedStatusLine {
  std::optional<StatusReport> report;
  std::string error;
};

namespace status_line_detail {

// A count: 0, or 1 to 9 digits without a leading zero (so it fits an int); "-1" only where allowed (round).
inline bool is_count(const std::string& v, bool minus_one_ok) {
  if (v == "-1") return minus_one_ok;
  if (v.empty() || v.size() > 9 || (v[0] == '0' && v.size() > 1)) return false;
  for (char c : v)
    if (c < '0' || c > '9') return false;
  return true;
}

}  // namespace status_line_detail

// Reads a line with or without its '\n'. Refuses another verb, a word that is not key=count (phase and run take
// any word), a count out of range and a line without round, restarts, nodes or world_size.
inline ParsedStatusLine parse_status_line(const std::string& line) {
  std::istringstream in(line);
  std::string word;
  if (!(in >> word) || word != kStatusVerb) {
    return {std::nullopt, "the rendezvous service answered '" + line + "', not a STATUS report"};
  }
  StatusReport r;
  bool round = false, restarts = false, nodes = false, world = false;
  while (in >> word) {
    const size_t eq = word.find('=');
    const std::string key = eq == std::string::npos ? word : word.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : word.substr(eq + 1);
    if (key == "phase" || key == "run") {
      (key == "phase" ? r.phase : r.run_id) = value;
      continue;
    }
    if (key.empty() || eq == std::string::npos || !status_line_detail::is_count(value, key == "round")) {
      return {std::nullopt, "bad field '" + word + "' in the rendezvous STATUS report '" + line + "'"};
    }
    const int n = std::stoi(value);
    if (key == "round") round = true, r.round = n;
    else if (key == "restarts") restarts = true, r.restarts = n;
    else if (key == "nodes") nodes = true, r.nodes = n;
    else if (key == "world_size") world = true, r.world_size = n;
    else r.restarts_by_cause[key] = n;
  }
  if (!round || !restarts || !nodes || !world) {
    return {std::nullopt, "the rendezvous STATUS report '" + line + "' lacks round, restarts, nodes or world_size"};
  }
  return {r, ""};
}

}  // namespace kubedist::contract
