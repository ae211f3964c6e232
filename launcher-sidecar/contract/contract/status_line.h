// The STATUS line: node 0's rendezvous service answers a "STATUS" request with it (the launcher encodes it) and
// the operator's poller parses it. One encoder and one parser, so the two halves cannot drift apart.
//
//   STATUS round=3 restarts=4 hang=0 node_lost=1 scale=2 worker_crash=1 nodes=2 world_size=8 phase=running
//          run=resnet lost=[1] carried=[node_lost:0,worker_crash:2] spares=[3] stand_ins=[1:2] [step=1200 total=5000 epoch=2 samples=76800
//          sps=2.5 age_ms=400 up_ms=600000 busy_ms=540000 lost_ms=12000 m.loss=0.53 slow=3,1,1.85,0.21
//          hang_age_ms=90000 hang_msg=rank%201...]
//
// key=value words after the verb: round, restarts, one word per restart cause (restart_cause.h), nodes,
// world_size, phase and run; lost (node ranks lost and not back, see StatusReport) only when there are any;
// carried (the counts taken over from an earlier node 0, see StatusReport) from every launcher that knows it;
// spares and stand_ins (the job's spares, see StatusReport) only when there are any. A
// reader takes any other key with a count as a cause it does not know yet, so the launcher can add causes without
// breaking older operators. Values are single words: the run id is one word on the rendezvous' JOIN line too; the
// one free text, hang_msg, is percent-escaped.
//
// The words in brackets are the job's progress (once a worker has reported a step; see StatusProgress), omitted
// before. sps always has a decimal point, which readers older than progress refuse as a count: they drop such a
// line whole rather than count "step" as a restart cause. A reader ignores keys it does not know whose value is
// no count, so later fields of that kind break nobody.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace kubedist::contract {

inline constexpr const char* kStatusVerb = "STATUS";  // the request ("STATUS") and the answer's first word

// How far the job is, as node 0's launcher saw its workers' reports (launcher-sidecar/src/progress).
struct StatusProgress {
  std::int64_t step = 0;          // the job's step: the lowest last step of the ranks that report
  std::int64_t total_steps = -1;  // -1: not reported
  std::int64_t epoch = -1;        // -1: not reported
  std::int64_t samples = -1;      // -1: not reported
  double steps_per_second = 0;    // over the last minute or so; 0 while unknown
  std::int64_t step_age_ms = 0;   // since the job's step last advanced (the reader's clock minus this: lastStepTime)
  // Goodput (the launcher's clock, since node 0's launcher started): up = busy + lost + the rest (starting up,
  // the first rendezvous); busy: making steps; lost: from a failure, hang or re-form to the first step after it.
  std::int64_t up_ms = 0;
  std::int64_t busy_ms = 0;
  std::int64_t lost_ms = 0;
  std::map<std::string, double> metrics;  // the lowest reporting rank's last numeric metrics (loss, ...)
  // The straggler: a rank persistently slower than the others (rank -1: none).
  int slow_rank = -1;
  int slow_node_rank = -1;       // its launcher's node rank: pod J-node-<this>
  double slow_ratio = 0;         // its step time over the median of the other ranks'
  double slow_step_seconds = 0;  // its step time
  // The last hang the launchers restarted the group for (hang_message empty: none): which ranks were stuck where.
  std::string hang_message;
  std::int64_t hang_age_ms = 0;  // since it was detected
  bool operator==(const StatusProgress&) const = default;
};

// The newest complete checkpoint the job's rank 0 reported (the kubedist.checkpoint helper): its step, why it was
// taken, how many ranks wrote it, and how long ago node 0 heard of it (the reader's clock minus this: when).
// On the line: ckpt=STEP:REASON:RANKS:AGE_MS (one word that is no number, so readers older than it skip it).
struct StatusCheckpoint {
  std::int64_t step = 0;
  std::string reason;  // is_checkpoint_reason
  int ranks = 0;
  std::int64_t age_ms = 0;
  bool operator==(const StatusCheckpoint&) const = default;
};

// The oldest a checkpoint resumed from may say it is (ckpt_age_ms of the helper's report): ten years.
inline constexpr std::int64_t kMaxCheckpointAgeMs = 10LL * 366 * 24 * 3600 * 1000;

// A checkpoint's reason: 1 to 32 of [a-z_] (periodic, requested, preemption, drain...).
inline bool is_checkpoint_reason(const std::string& s) {
  if (s.empty() || s.size() > 32) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || c == '_')) return false;
  return true;
}

// Bounds the encoder keeps and the parser enforces, so that a report stays one short line.
inline constexpr size_t kMaxStatusMetrics = 8;
inline constexpr size_t kMaxMetricName = 32;        // [A-Za-z0-9_] only
inline constexpr size_t kMaxHangMessage = 1024;     // bytes before escaping
inline constexpr size_t kMaxLostNodes = 64;
inline constexpr size_t kMaxStatusSpares = 64;  // node ranks in spares, and slots in stand_ins

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
  std::optional<StatusProgress> progress;  // none until a worker reports a step (and from older launchers)
  // The node ranks lost while in a round (node_lost: gone without LEAVE) that have not joined again, ascending, at
  // most kMaxLostNodes: the operator matches the pod losses it sees later to these, so one loss is counted once.
  std::vector<int> lost_nodes;
  // The restarts by cause this rendezvous took over from the one before it on an earlier node 0 (its members carry
  // the counts they last saw), already included in restarts_by_cause and restarts: a node 0 replaced loses none of
  // the in-place restarts since the operator last asked. Empty before a member carried any; nullopt from launchers
  // older than the field (their counts start from zero on every node 0).
  std::optional<std::map<std::string, int>> carried;
  // The spares waiting to stand in (their node ranks, ascending), and the stand-ins: the slot (the node rank of the
  // member that was lost) -> the node rank of the spare that took its place. At most kMaxStatusSpares each.
  std::vector<int> spares;
  std::map<int, int> stand_ins;
  std::optional<StatusCheckpoint> checkpoint{};  // none before rank 0 reported one (and from older launchers)
  bool operator==(const StatusReport&) const = default;
};

// The hang message as the line carries it: at most kMaxHangMessage bytes, cut before a UTF-8 character that would
// not fit whole (a cut inside one left bytes that are not UTF-8 at the end of every hang with non-ASCII stacks).
inline std::string cut_hang_message(const std::string& text) {
  if (text.size() <= kMaxHangMessage) return text;
  size_t cut = kMaxHangMessage;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut);
}

namespace status_line_detail {

// A metric name the line can carry: 1 to kMaxMetricName of [A-Za-z0-9_].
inline bool is_metric_name(const std::string& name) {
  if (name.empty() || name.size() > kMaxMetricName) return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

// A finite number, short: "%.6g", always with a '.' or an exponent when `dot` (see the header: sps).
inline std::string number(double v, bool dot = false) {
  if (!std::isfinite(v)) v = 0;
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  std::string s = buf;
  if (dot && s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

// "[1,3]": at most `most` of the ranks.
inline std::string bracketed(const std::vector<int>& ranks, size_t most) {
  std::string word = "[";
  for (size_t i = 0; i < ranks.size() && i < most; ++i) {
    if (i > 0) word += ',';
    word += std::to_string(ranks[i]);
  }
  return word + ']';
}

// Percent-escapes controls, space, '%' and every byte from 0x7f (UTF-8 included): the line stays plain ASCII words.
inline std::string escape(const std::string& text) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (c <= 0x20 || c == '%' || c >= 0x7f) {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

// The text escape() made, or nullopt for a '%' without two hex digits.
inline std::optional<std::string> unescape(const std::string& word) {
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i < word.size(); ++i) {
    if (word[i] != '%') {
      out += word[i];
      continue;
    }
    if (word.size() < i + 3) return std::nullopt;
    const int hi = nibble(word[i + 1]), lo = nibble(word[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

}  // namespace status_line_detail

// The line, with its '\n'.
inline std::string encode_status_line(const StatusReport& r) {
  using status_line_detail::number;
  std::string line = std::string(kStatusVerb) + " round=" + std::to_string(r.round) +
                     " restarts=" + std::to_string(r.restarts);
  for (const auto& [cause, n] : r.restarts_by_cause) line += " " + cause + "=" + std::to_string(n);
  line += " nodes=" + std::to_string(r.nodes) + " world_size=" + std::to_string(r.world_size) + " phase=" + r.phase +
          " run=" + r.run_id;
  if (!r.lost_nodes.empty()) {
    // Appends only: GCC 12 warns falsely (-Wrestrict) about "literal" + std::string here in Release builds.
    line += " lost=" + status_line_detail::bracketed(r.lost_nodes, kMaxLostNodes);
  }
  if (r.carried) {
    line += " carried=[";
    bool first = true;
    for (const auto& [cause, n] : *r.carried) {
      if (!first) line += ',';
      first = false;
      line += cause;
      line += ':';
      line += std::to_string(n);
    }
    line += ']';
  }
  if (!r.spares.empty()) line += " spares=" + status_line_detail::bracketed(r.spares, kMaxStatusSpares);
  if (!r.stand_ins.empty()) {
    line += " stand_ins=[";
    size_t n = 0;
    for (const auto& [slot, node_rank] : r.stand_ins) {
      if (n == kMaxStatusSpares) break;
      if (n++ > 0) line += ',';
      line += std::to_string(slot) + ':' + std::to_string(node_rank);
    }
    line += ']';
  }
  if (const auto& c = r.checkpoint; c && is_checkpoint_reason(c->reason)) {
    line += " ckpt=" + std::to_string(c->step) + ':' + c->reason + ':' + std::to_string(c->ranks) + ':' +
            std::to_string(c->age_ms);
  }
  if (const auto& p = r.progress) {
    line += " step=" + std::to_string(p->step);
    if (p->total_steps >= 0) line += " total=" + std::to_string(p->total_steps);
    if (p->epoch >= 0) line += " epoch=" + std::to_string(p->epoch);
    if (p->samples >= 0) line += " samples=" + std::to_string(p->samples);
    line += " sps=" + number(p->steps_per_second, true) + " age_ms=" + std::to_string(p->step_age_ms) +
            " up_ms=" + std::to_string(p->up_ms) + " busy_ms=" + std::to_string(p->busy_ms) +
            " lost_ms=" + std::to_string(p->lost_ms);
    size_t n = 0;
    for (const auto& [name, value] : p->metrics) {
      if (n == kMaxStatusMetrics || !status_line_detail::is_metric_name(name)) continue;
      line += " m." + name + "=" + number(value);
      ++n;
    }
    if (p->slow_rank >= 0) {
      line += " slow=" + std::to_string(p->slow_rank) + "," + std::to_string(p->slow_node_rank) + "," +
              number(p->slow_ratio) + "," + number(p->slow_step_seconds);
    }
    if (!p->hang_message.empty()) {
      line += " hang_age_ms=" + std::to_string(p->hang_age_ms) +
              " hang_msg=" + status_line_detail::escape(cut_hang_message(p->hang_message));
    }
  }
  return line + "\n";
}

// A parsed line, or why it is not one (error non-empty, report empty).
struct ParsedStatusLine {
  std::optional<StatusReport> report;
  std::string error;
};

namespace status_line_detail {

// A count: 0, or 1 to max_digits digits without a leading zero (9 fit an int, 18 an int64); "-1" only where allowed
// (round).
inline bool is_count(const std::string& v, bool minus_one_ok, size_t max_digits = 9) {
  if (v == "-1") return minus_one_ok;
  if (v.empty() || v.size() > max_digits || (v[0] == '0' && v.size() > 1)) return false;
  for (char c : v)
    if (c < '0' || c > '9') return false;
  return true;
}

// A finite decimal number as number() writes it (digits, '.', '-', an exponent); nullopt for anything else.
inline std::optional<double> parse_number(const std::string& v) {
  if (v.empty() || v.size() > 32 || v.find_first_not_of("0123456789.eE+-") != std::string::npos) return std::nullopt;
  char* end = nullptr;
  const double d = std::strtod(v.c_str(), &end);
  if (end != v.c_str() + v.size() || !std::isfinite(d)) return std::nullopt;
  return d;
}

// Reads one progress word into p; false when its value is malformed.
inline bool read_progress_word(const std::string& key, const std::string& value, StatusProgress& p) {
  std::int64_t* counts[] = {&p.step, &p.total_steps, &p.epoch, &p.samples, &p.step_age_ms,
                            &p.up_ms, &p.busy_ms,    &p.lost_ms, &p.hang_age_ms};
  const char* names[] = {"step", "total", "epoch", "samples", "age_ms", "up_ms", "busy_ms", "lost_ms", "hang_age_ms"};
  for (size_t i = 0; i < std::size(names); ++i) {
    if (key != names[i]) continue;
    if (!is_count(value, false, 18)) return false;
    *counts[i] = std::stoll(value);
    return true;
  }
  if (key == "sps") {
    const auto v = parse_number(value);
    if (!v || *v < 0) return false;
    p.steps_per_second = *v;
    return true;
  }
  if (key.rfind("m.", 0) == 0) {
    const auto v = parse_number(value);
    const std::string name = key.substr(2);
    if (!v || !is_metric_name(name) || (p.metrics.size() >= kMaxStatusMetrics && !p.metrics.count(name))) return false;
    p.metrics[name] = *v;
    return true;
  }
  if (key == "slow") {  // rank,node_rank,ratio,step_seconds
    std::string parts[4];
    size_t n = 0;
    for (char c : value) {
      if (c != ',') parts[n] += c;
      else if (++n == 4) return false;
    }
    if (n != 3 || !is_count(parts[0], false) || !is_count(parts[1], false)) return false;
    const auto ratio = parse_number(parts[2]), secs = parse_number(parts[3]);
    if (!ratio || !secs || *ratio < 0 || *secs < 0) return false;
    p.slow_rank = std::stoi(parts[0]);
    p.slow_node_rank = std::stoi(parts[1]);
    p.slow_ratio = *ratio;
    p.slow_step_seconds = *secs;
    return true;
  }
  // hang_msg
  const auto text = unescape(value);
  if (!text || text->size() > kMaxHangMessage) return false;
  p.hang_message = *text;
  return true;
}

// "[a,b,...]": take(item) for each comma-separated item, none for "[]"; false when value is not in brackets or take
// refuses an item.
template <typename Take>
inline bool read_bracketed(const std::string& value, Take take) {
  if (value.size() < 2 || value.front() != '[' || value.back() != ']') return false;
  const std::string inner = value.substr(1, value.size() - 2);
  if (inner.empty()) return true;
  for (size_t from = 0;;) {
    const size_t comma = inner.find(',', from);
    if (!take(inner.substr(from, comma == std::string::npos ? std::string::npos : comma - from))) return false;
    if (comma == std::string::npos) return true;
    from = comma + 1;
  }
}

// "[1,3]": node ranks, ascending, at most `most` (the brackets keep a single rank from reading as a count to readers
// older than the field, which ignore it).
inline bool read_lost_nodes(const std::string& value, std::vector<int>& out, size_t most = kMaxLostNodes) {
  out.clear();
  return read_bracketed(value, [&out, most](const std::string& rank) {
    if (!is_count(rank, false) || out.size() == most) return false;
    const int n = std::stoi(rank);
    if (!out.empty() && n <= out.back()) return false;
    out.push_back(n);
    return true;
  });
}

// A restart cause's name as the launchers write them: 1 to 32 of [a-z_].
inline bool is_cause_name(const std::string& name) {
  return !name.empty() && name.size() <= 32 && name.find_first_not_of("abcdefghijklmnopqrstuvwxyz_") == std::string::npos;
}

// At most this many causes in carried counts.
inline constexpr size_t kMaxCarriedCauses = 16;

// "[cause:count,...]" (is_cause_name, at most kMaxCarriedCauses of them).
inline bool read_carried(const std::string& value, std::map<std::string, int>& out) {
  out.clear();
  return read_bracketed(value, [&out](const std::string& item) {
    const size_t colon = item.find(':');
    if (colon == std::string::npos || out.size() == kMaxCarriedCauses) return false;
    const std::string cause = item.substr(0, colon), count = item.substr(colon + 1);
    if (!is_cause_name(cause) || !is_count(count, false) || out.count(cause)) return false;
    out[cause] = std::stoi(count);
    return true;
  });
}

// "[1:3,2:4]": slot:node rank, slots ascending, at most kMaxStatusSpares.
inline bool read_stand_ins(const std::string& value, std::map<int, int>& out) {
  out.clear();
  return read_bracketed(value, [&out](const std::string& item) {
    const size_t colon = item.find(':');
    if (colon == std::string::npos || out.size() == kMaxStatusSpares) return false;
    const std::string slot = item.substr(0, colon), node_rank = item.substr(colon + 1);
    if (!is_count(slot, false) || !is_count(node_rank, false)) return false;
    const int n = std::stoi(slot);
    if (!out.empty() && n <= out.rbegin()->first) return false;
    out[n] = std::stoi(node_rank);
    return true;
  });
}

// ckpt's value: STEP:REASON:RANKS:AGE_MS (counts of up to 18, 9 and 18 digits, a reason of is_checkpoint_reason).
inline bool read_checkpoint(const std::string& value, std::optional<StatusCheckpoint>& out) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t colon; (colon = value.find(':', start)) != std::string::npos; start = colon + 1)
    parts.push_back(value.substr(start, colon - start));
  parts.push_back(value.substr(start));
  if (parts.size() != 4 || !is_count(parts[0], false, 18) || !is_checkpoint_reason(parts[1]) ||
      !is_count(parts[2], false, 9) || !is_count(parts[3], false, 18)) {
    return false;
  }
  out = StatusCheckpoint{std::stoll(parts[0]), parts[1], std::stoi(parts[2]), std::stoll(parts[3])};
  return true;
}

inline bool is_progress_key(const std::string& key) {
  for (const char* k : {"step", "total", "epoch", "samples", "sps", "age_ms", "up_ms", "busy_ms", "lost_ms", "slow",
                        "hang_age_ms", "hang_msg"})
    if (key == k) return true;
  return key.rfind("m.", 0) == 0;
}

}  // namespace status_line_detail

// Reads a line with or without its '\n'. Refuses another verb, a word without '=', a known field with a bad value
// (a count out of range, a malformed number, a metric beyond kMaxStatusMetrics, a hang message beyond
// kMaxHangMessage), progress without step, and a line without round, restarts, nodes or world_size. An unknown key
// with a count is a restart cause; one with any other value is ignored (a field of a newer launcher).
inline ParsedStatusLine parse_status_line(const std::string& line) {
  std::istringstream in(line);
  std::string word;
  if (!(in >> word) || word != kStatusVerb) {
    return {std::nullopt, "the rendezvous service answered '" + line + "', not a STATUS report"};
  }
  StatusReport r;
  StatusProgress progress;
  bool round = false, restarts = false, nodes = false, world = false, any_progress = false, step = false;
  const auto bad = [&] {
    return ParsedStatusLine{std::nullopt, "bad field '" + word + "' in the rendezvous STATUS report '" + line + "'"};
  };
  while (in >> word) {
    const size_t eq = word.find('=');
    const std::string key = eq == std::string::npos ? word : word.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : word.substr(eq + 1);
    if (key.empty() || eq == std::string::npos) return bad();
    if (key == "phase" || key == "run") {
      (key == "phase" ? r.phase : r.run_id) = value;
      continue;
    }
    if (key == "lost") {
      if (!status_line_detail::read_lost_nodes(value, r.lost_nodes)) return bad();
      continue;
    }
    if (key == "spares") {
      if (!status_line_detail::read_lost_nodes(value, r.spares, kMaxStatusSpares)) return bad();
      continue;
    }
    if (key == "stand_ins") {
      if (!status_line_detail::read_stand_ins(value, r.stand_ins)) return bad();
      continue;
    }
    if (key == "ckpt") {
      if (!status_line_detail::read_checkpoint(value, r.checkpoint)) return bad();
      continue;
    }
    if (key == "carried") {
      r.carried.emplace();
      if (!status_line_detail::read_carried(value, *r.carried)) return bad();
      continue;
    }
    if (status_line_detail::is_progress_key(key)) {
      if (!status_line_detail::read_progress_word(key, value, progress)) return bad();
      any_progress = true;
      step = step || key == "step";
      continue;
    }
    const bool known = key == "round" || key == "restarts" || key == "nodes" || key == "world_size";
    if (!status_line_detail::is_count(value, key == "round")) {
      if (known || status_line_detail::parse_number(value) || value.empty()) return bad();
      continue;  // a newer launcher's field
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
  if (any_progress && !step) return {std::nullopt, "the rendezvous STATUS report '" + line + "' has progress without step"};
  if (any_progress) r.progress = progress;
  return {r, ""};
}

}  // namespace kubedist::contract
