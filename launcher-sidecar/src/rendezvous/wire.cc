#include "rendezvous/wire.h"

#include <sstream>

#include "contract/pod_env.h"
#include "contract/status_line.h"

namespace kubedist::launcher {
namespace {

std::string one_line(std::string text) {
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  return text;
}

// Reads the rest of the stream after the fixed fields, without its leading space.
std::string rest_of(std::istringstream& in) {
  std::string rest;
  std::getline(in, rest);
  if (!rest.empty() && rest[0] == ' ') rest.erase(0, 1);
  return rest;
}

using contract::status_line_detail::escape;
using contract::status_line_detail::is_count;
using contract::status_line_detail::number;
using contract::status_line_detail::parse_number;
using contract::status_line_detail::unescape;

bool parse_count64(const std::string& v, std::int64_t& out) {
  if (!is_count(v, false, 18)) return false;
  out = std::stoll(v);
  return true;
}

// "rank:step:step_seconds"
bool parse_rank_summary(const std::string& word, RankSummary& r) {
  const auto a = word.find(':'), b = word.find(':', a == std::string::npos ? a : a + 1);
  if (a == std::string::npos || b == std::string::npos || word.find(':', b + 1) != std::string::npos) return false;
  const std::string rank = word.substr(0, a);
  const auto secs = parse_number(word.substr(b + 1));
  if (!is_count(rank, false) || !parse_count64(word.substr(a + 1, b - a - 1), r.step) || !secs || *secs < 0)
    return false;
  r.rank = std::stoi(rank);
  r.step_seconds = *secs;
  return true;
}

bool parse_progress_words(std::istringstream& in, NodeProgress& p) {
  std::string word;
  while (in >> word) {
    const auto eq = word.find('=');
    if (eq == std::string::npos) {
      RankSummary r;
      if (!p.metrics.empty() || p.total_steps || p.epoch || p.samples || !parse_rank_summary(word, r)) return false;
      p.ranks.push_back(r);
      continue;
    }
    const std::string key = word.substr(0, eq), value = word.substr(eq + 1);
    std::int64_t n = 0;
    if (key == "total" || key == "epoch" || key == "samples") {
      if (!parse_count64(value, n)) return false;
      (key == "total" ? p.total_steps : key == "epoch" ? p.epoch : p.samples) = n;
    } else if (key.rfind("m.", 0) == 0) {
      const auto v = parse_number(value);
      if (!v || !contract::status_line_detail::is_metric_name(key.substr(2)) ||
          p.metrics.size() >= contract::kMaxStatusMetrics)
        return false;
      p.metrics[key.substr(2)] = *v;
    } else {
      return false;
    }
  }
  return !p.ranks.empty();
}

bool parse_stack_words(std::istringstream& in, std::map<int, StackSummary>& stacks) {
  std::string rank, host, where, trace;
  while (in >> rank) {
    if (!is_count(rank, false) || !(in >> host >> where >> trace)) return false;
    StackSummary s;
    for (auto [word, out] : {std::pair{&host, &s.host}, {&where, &s.where}, {&trace, &s.trace}}) {
      if (word->empty() || (*word)[0] != ':') return false;
      auto text = unescape(word->substr(1));
      if (!text) return false;
      *out = *text;
    }
    stacks[std::stoi(rank)] = std::move(s);
  }
  return true;
}

}  // namespace

// Appends rather than "literal" + std::string: GCC 12 warns falsely (-Wrestrict) about the latter in Release.
std::string encode_progress(int round, const NodeProgress& p) {
  std::string line = "PROGRESS ";
  line += std::to_string(round);
  for (const auto& r : p.ranks) {
    line += ' ';
    line += std::to_string(r.rank);
    line += ':';
    line += std::to_string(r.step);
    line += ':';
    line += number(r.step_seconds);
  }
  if (p.total_steps) line.append(" total=").append(std::to_string(*p.total_steps));
  if (p.epoch) line.append(" epoch=").append(std::to_string(*p.epoch));
  if (p.samples) line.append(" samples=").append(std::to_string(*p.samples));
  size_t n = 0;
  for (const auto& [name, value] : p.metrics) {
    if (n == contract::kMaxStatusMetrics || !contract::status_line_detail::is_metric_name(name)) continue;
    line.append(" m.").append(name).append("=").append(number(value));
    ++n;
  }
  line += '\n';
  return line;
}

std::string encode_stacks(int round, const std::map<int, StackSummary>& stacks) {
  std::string line = "STACKS ";
  line += std::to_string(round);
  for (const auto& [rank, s] : stacks) {
    line += ' ';
    line += std::to_string(rank);
    line.append(" :").append(escape(s.host)).append(" :").append(escape(s.where)).append(" :").append(escape(s.trace));
  }
  line += '\n';
  return line;
}

std::string encode_join(const JoinRequest& join) {
  // A stream, not "literal" + std::string: GCC 12 warns falsely (-Wrestrict) about the latter here in Release.
  std::ostringstream line;
  line << "JOIN " << join.run_id << ' ' << join.node_rank << ' ' << join.nproc;
  if (const auto& g = join.settings) {
    line << ' ' << g->min_nodes << ' ' << g->max_nodes << ' ' << g->max_restarts << ' ' << g->last_call.count()
         << ' ' << g->join_timeout.count() << ' ' << (g->permanent_exit_codes ? 1 : 0);
  }
  if (!join.domain.empty()) line << " domain=" << join.domain;
  if (join.stand_in >= 0) line << " stand_in=" << join.stand_in;
  else if (join.spare) line << " spare";
  line << '\n';
  return line.str();
}

std::string encode_failed(int round, int exit_code, const std::string& summary) {
  return "FAILED " + std::to_string(round) + " " + std::to_string(exit_code) + " " + one_line(summary) + "\n";
}

std::string encode_done(int round) { return "DONE " + std::to_string(round) + "\n"; }

std::string encode_leave() { return "LEAVE\n"; }

std::string encode_status() { return std::string(contract::kStatusVerb) + "\n"; }

std::string encode_carry(const std::string& run_id, const std::map<std::string, int>& counts) {
  std::ostringstream line;  // a stream: see encode_join
  line << "CARRY " << run_id;
  for (const auto& [cause, n] : counts) line << ' ' << cause << '=' << n;
  line << '\n';
  return line.str();
}

std::string encode_message(const RendezvousMessage& m) {
  switch (m.kind) {
    case RendezvousMessage::Kind::Round: {
      const Assignment& a = m.assignment;
      return "ROUND " + std::to_string(a.round) + " " + std::to_string(a.restart_count) + " " +
             std::to_string(a.group_rank) + " " + std::to_string(a.group_world_size) + " " +
             std::to_string(a.rank_offset) + " " + std::to_string(a.world_size) +
             (a.master_addr.empty() ? "" : " " + a.master_addr + " " + std::to_string(a.master_port)) +
             (a.stand_in_slot < 0 ? "" : " slot=" + std::to_string(a.stand_in_slot)) + "\n";
    }
    case RendezvousMessage::Kind::Stop:
      return "STOP " + std::to_string(m.round) + "\n";
    case RendezvousMessage::Kind::Fail:
      return "FAIL " + std::to_string(m.exit_code) + " " + one_line(m.reason) + "\n";
    case RendezvousMessage::Kind::Dump:
      return "DUMP " + std::to_string(m.round) + "\n";
  }
  return "";
}

Result<MemberRequest> parse_request(const std::string& line) {
  std::istringstream in(line);
  std::string verb;
  in >> verb;
  MemberRequest r;
  if (verb == "JOIN") {
    r.kind = MemberRequest::Kind::Join;
    if (in >> r.join.run_id >> r.join.node_rank >> r.join.nproc && r.join.nproc > 0 && r.join.node_rank >= 0) {
      // Optional: the joiner's settings "MIN MAX MAX_RESTARTS LAST_CALL_MS JOIN_TIMEOUT_MS PERMANENT(0|1)", then
      // optional "domain=D", then optional "spare" or "stand_in=K" (the last word).
      std::string tail = rest_of(in);
      size_t space = tail.rfind(' ');
      std::string last = tail.substr(space == std::string::npos ? 0 : space + 1);
      const bool stand_in = last.rfind("stand_in=", 0) == 0;
      if (last == "spare" || stand_in) {
        if (stand_in) {
          const std::string slot = last.substr(9);
          if (!contract::status_line_detail::is_count(slot, false)) return make_error("bad rendezvous request: '" + line + "'");
          r.join.stand_in = std::stoi(slot);
        }
        r.join.spare = !stand_in;
        tail.resize(space == std::string::npos ? 0 : space);
        space = tail.rfind(' ');
        last = tail.substr(space == std::string::npos ? 0 : space + 1);
      }
      if (last.rfind("domain=", 0) == 0) {
        if (!contract::is_topology_domain(std::string_view(last).substr(7))) {
          return make_error("bad rendezvous request: '" + line + "'");
        }
        r.join.domain = last.substr(7);
        tail.resize(space == std::string::npos ? 0 : space);
      }
      std::istringstream settings(tail);
      std::string first;
      if (!(settings >> first)) return r;
      CoordinatorSettings g;
      g.run_id = r.join.run_id;
      long last_call = 0, join_timeout = 0;
      int permanent = 0;
      std::string extra;
      std::istringstream fields(first + " " + rest_of(settings));
      if (fields >> g.min_nodes >> g.max_nodes >> g.max_restarts >> last_call >> join_timeout >> permanent &&
          !(fields >> extra) && g.min_nodes >= 1 && g.max_nodes >= g.min_nodes && g.max_restarts >= 0 &&
          last_call >= 0 && join_timeout >= 0 && (permanent == 0 || permanent == 1)) {
        g.last_call = std::chrono::milliseconds(last_call);
        g.join_timeout = std::chrono::milliseconds(join_timeout);
        g.permanent_exit_codes = permanent == 1;
        r.join.settings = g;
        return r;
      }
    }
  } else if (verb == "FAILED") {
    r.kind = MemberRequest::Kind::Failed;
    if (in >> r.round >> r.exit_code) {
      r.summary = rest_of(in);
      return r;
    }
  } else if (verb == "DONE") {
    r.kind = MemberRequest::Kind::Done;
    if (in >> r.round) return r;
  } else if (verb == "PROGRESS") {
    r.kind = MemberRequest::Kind::Progress;
    if (in >> r.round && r.round >= 0 && parse_progress_words(in, r.progress)) return r;
  } else if (verb == "STACKS") {
    r.kind = MemberRequest::Kind::Stacks;
    if (in >> r.round && r.round >= 0 && parse_stack_words(in, r.stacks)) return r;
  } else if (verb == "CARRY") {
    r.kind = MemberRequest::Kind::Carry;
    std::string word;
    bool ok = static_cast<bool>(in >> r.run_id);
    while (ok && in >> word) {
      const size_t eq = word.find('=');
      const std::string cause = word.substr(0, eq == std::string::npos ? 0 : eq);
      const std::string count = eq == std::string::npos ? "" : word.substr(eq + 1);
      namespace line = contract::status_line_detail;
      ok = line::is_cause_name(cause) && line::is_count(count, false) && !r.carried.count(cause) &&
           r.carried.size() < line::kMaxCarriedCauses;
      if (ok) r.carried[cause] = std::stoi(count);
    }
    if (ok) return r;
  } else if (verb == contract::kReleaseVerb) {
    r.kind = MemberRequest::Kind::Release;
    if (auto notice = contract::parse_release_words(in)) {
      r.release = *notice;
      return r;
    }
  } else if (verb == "LEAVE" || verb == contract::kStatusVerb) {
    r.kind = verb == "LEAVE" ? MemberRequest::Kind::Leave : MemberRequest::Kind::Status;
    std::string extra;
    if (!(in >> extra)) return r;
  }
  return make_error("bad rendezvous request: '" + line + "'");
}

Result<RendezvousMessage> parse_message(const std::string& line) {
  std::istringstream in(line);
  std::string verb;
  in >> verb;
  RendezvousMessage m;
  if (verb == "ROUND") {
    m.kind = RendezvousMessage::Kind::Round;
    Assignment& a = m.assignment;
    if (in >> a.round >> a.restart_count >> a.group_rank >> a.group_world_size >> a.rank_offset >> a.world_size) {
      m.round = a.round;
      // Optional: the workers' store the host chose for this round ("ADDR PORT"), then a stand-in's slot ("slot=K").
      std::vector<std::string> words;
      for (std::string word; in >> word;) words.push_back(word);
      if (!words.empty() && words.back().rfind("slot=", 0) == 0) {
        const std::string slot = words.back().substr(5);
        if (!contract::status_line_detail::is_count(slot, false)) return make_error("bad rendezvous message: '" + line + "'");
        a.stand_in_slot = std::stoi(slot);
        words.pop_back();
      }
      if (words.empty()) return m;
      if (words.size() == 2 && contract::status_line_detail::is_count(words[1], false, 5)) {
        a.master_addr = words[0];
        a.master_port = std::stoi(words[1]);
        if (a.master_port >= 1 && a.master_port <= 65535) return m;
      }
    }
  } else if (verb == "STOP" || verb == "DUMP") {
    m.kind = verb == "STOP" ? RendezvousMessage::Kind::Stop : RendezvousMessage::Kind::Dump;
    if (in >> m.round) return m;
  } else if (verb == "FAIL") {
    m.kind = RendezvousMessage::Kind::Fail;
    if (in >> m.exit_code) {
      m.reason = rest_of(in);
      return m;
    }
  }
  return make_error("bad rendezvous message: '" + line + "'");
}

}  // namespace kubedist::launcher
