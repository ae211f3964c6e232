#include "kubectl/act/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <sstream>

#include "kubectl/render/terminal_safe.h"

namespace kubedist::kubectl {
namespace {

using nlohmann::json;

std::string str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

int num(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int>() : 0;
}

int64_t count(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

const json& field(const json& j, const char* key) {
  static const json empty = json::object();
  auto it = j.find(key);
  return it != j.end() && it->is_object() ? *it : empty;
}

std::string age(const json& obj, UnixSeconds now) {
  auto t = parse_rfc3339(str(field(obj, "metadata"), "creationTimestamp"));
  return t ? human_duration(std::max<int64_t>(0, now - *t)) : "?";
}

// Columns padded to their widest cell, two spaces apart, as kubectl prints tables.
std::string table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size(); ++i) {
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], r[i].size());
    }
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) {
      line += r[i];
      if (i + 1 < r.size()) line += std::string(width[i] - r[i].size() + 3, ' ');
    }
    out += line + "\n";
  }
  return out;
}

std::string node_rank_of(const json& pod) {
  return str(field(field(pod, "metadata"), "labels"), "kubedist.io/node-rank");
}

}  // namespace

std::string human_duration(int64_t s) {
  if (s < 60) return std::to_string(s) + "s";
  if (s < 3600) return std::to_string(s / 60) + "m" + (s % 60 ? std::to_string(s % 60) + "s" : "");
  if (s < 86400) return std::to_string(s / 3600) + "h" + (s % 3600 / 60 ? std::to_string(s % 3600 / 60) + "m" : "");
  return std::to_string(s / 86400) + "d" + (s % 86400 / 3600 ? std::to_string(s % 86400 / 3600) + "h" : "");
}

std::string restarts_text(const json& status) {
  std::string out = std::to_string(num(status, "restarts"));
  std::string parts;
  for (const auto& [reason, n] : field(status, "restartsByReason").items()) {
    if (!n.is_number_integer() || n.get<int>() == 0) continue;
    parts += (parts.empty() ? "" : ", ") + reason + " " + std::to_string(n.get<int>());
  }
  return parts.empty() ? out : out + " (" + parts + ")";
}

std::string last_failure_text(const json& status) {
  const json& lf = field(status, "lastFailure");
  if (lf.empty()) return "";
  std::string out = "pod " + str(lf, "pod");
  if (!str(lf, "node").empty()) out += " on " + str(lf, "node");
  if (auto code = lf.find("exitCode"); code != lf.end() && code->is_number_integer()) {
    out += " exited with code " + std::to_string(code->get<int>());
  } else {
    out += " failed";
  }
  if (!str(lf, "reason").empty()) out += " (" + str(lf, "reason") + ")";
  // The message is the container's termination message: the pod's own text, as untrusted as its log.
  if (!str(lf, "message").empty()) out += ": " + terminal_safe(str(lf, "message"));
  return out;
}

std::string progress_text(const json& status, UnixSeconds now) {
  const json& p = field(status, "progress");
  if (p.empty()) return "";
  std::string out;
  auto add = [&](const std::string& s) { out += (out.empty() ? "" : ", ") + s; };
  auto number = [](const json& v, int digits) {
    std::ostringstream s;
    s << std::fixed << std::setprecision(digits) << v.get<double>();
    return s.str();
  };
  // The operator's summary is what `kubectl get tj` shows under PROGRESS ("24% (240/1000)" or "step 240").
  if (!str(p, "summary").empty()) add(str(p, "summary"));
  else if (p.contains("step")) add("step " + std::to_string(count(p, "step")) +
                                   (p.contains("totalSteps") ? "/" + std::to_string(count(p, "totalSteps")) : ""));
  if (p.contains("epoch")) add("epoch " + std::to_string(count(p, "epoch")));
  if (auto v = p.find("stepsPerSecond"); v != p.end() && v->is_number() && v->get<double>() > 0)
    add(number(*v, v->get<double>() >= 10 ? 1 : 3) + " steps/s");
  for (const auto& [k, v] : field(p, "metrics").items())
    if (v.is_number()) add(k + " " + number(v, 4));
  if (auto eta = parse_rfc3339(str(p, "estimatedCompletionTime")); eta && *eta > now)
    add("eta " + human_duration(*eta - now));
  if (const json& slow = field(p, "slowestRank"); slow.contains("rank")) {
    std::string s = "slowest rank " + std::to_string(num(slow, "rank"));
    if (!str(slow, "pod").empty()) s += " on " + str(slow, "pod");
    if (auto r = slow.find("ratio"); r != slow.end() && r->is_number()) s += " (" + number(*r, 1) + "x the others' step time)";
    add(s);
  }
  if (auto g = p.find("goodput"); g != p.end() && g->is_number())
    add("goodput " + std::to_string(static_cast<int>(std::lround(g->get<double>() * 100))) + "%");
  return out;
}

std::string status_report(const json& job, const std::vector<json>& pods, UnixSeconds now) {
  const json& md = field(job, "metadata");
  const json& spec = field(job, "spec");
  const json& st = field(job, "status");
  std::ostringstream out;
  const std::string phase = str(st, "phase").empty() ? "Pending" : str(st, "phase");
  out << "TrainingJob " << str(md, "name") << " in " << str(md, "namespace") << ": " << phase << " (age "
      << age(job, now) << ")\n";
  int replicas = num(spec, "replicas");
  std::string nodes = std::to_string(num(st, "readyReplicas")) + "/" + std::to_string(replicas) + " running";
  if (spec.contains("minReplicas") && num(spec, "minReplicas") < num(spec, "maxReplicas")) {
    nodes += " (elastic " + std::to_string(num(spec, "minReplicas")) + ".." + std::to_string(num(spec, "maxReplicas")) +
             ")";
  }
  out << "  nodes:        " << nodes << "\n";
  out << "  world size:   " << num(st, "worldSize") << "\n";
  out << "  restarts:     " << restarts_text(st) << "\n";
  if (auto p = progress_text(st, now); !p.empty()) out << "  progress:     " << p << "\n";
  if (auto lf = last_failure_text(st); !lf.empty()) out << "  last failure: " << lf << "\n";
  if (auto it = st.find("conditions"); it != st.end() && it->is_array()) {
    for (const auto& c : *it) {
      out << "  condition:    " << str(c, "type") << "=" << str(c, "status");
      if (!str(c, "reason").empty()) out << " " << str(c, "reason");
      if (!str(c, "message").empty()) out << ": " << terminal_safe(str(c, "message"));
      out << "\n";
    }
  }
  std::vector<json> sorted = pods;
  std::sort(sorted.begin(), sorted.end(), [](const json& a, const json& b) {
    return std::atoi(node_rank_of(a).c_str()) < std::atoi(node_rank_of(b).c_str());
  });
  std::vector<std::vector<std::string>> rows = {{"POD", "NODE-RANK", "PHASE", "NODE", "IP", "EXIT", "AGE"}};
  for (const auto& p : sorted) {
    std::string exit = "";
    for (const auto& cs : field(p, "status").value("containerStatuses", json::array())) {
      if (str(cs, "name") != "trainer") continue;
      const json& term = field(field(cs, "state"), "terminated");
      if (!term.empty()) exit = std::to_string(num(term, "exitCode"));
    }
    rows.push_back({str(field(p, "metadata"), "name"), node_rank_of(p), str(field(p, "status"), "phase"),
                    str(field(p, "spec"), "nodeName"), str(field(p, "status"), "podIP"), exit, age(p, now)});
  }
  if (sorted.empty()) {
    out << "  no pods\n";
  } else {
    out << "\n" << table(rows);
  }
  return out.str();
}

std::string list_table(const std::vector<json>& jobs, UnixSeconds now) {
  std::vector<std::vector<std::string>> rows = {{"NAME", "PHASE", "NODES", "WORLD", "RESTARTS", "AGE"}};
  for (const auto& j : jobs) {
    const json& st = field(j, "status");
    rows.push_back({str(field(j, "metadata"), "name"), str(st, "phase").empty() ? "Pending" : str(st, "phase"),
                    std::to_string(num(st, "readyReplicas")) + "/" + std::to_string(num(field(j, "spec"), "replicas")),
                    std::to_string(num(st, "worldSize")), std::to_string(num(st, "restarts")), age(j, now)});
  }
  return table(rows);
}

std::string final_report(const json& job, int max_world_size) {
  const json& st = field(job, "status");
  const std::string name = str(field(job, "metadata"), "name");
  const std::string phase = str(st, "phase");
  std::ostringstream out;
  auto start = parse_rfc3339(str(st, "startTime"));
  auto end = parse_rfc3339(str(st, "completionTime"));
  out << "tj/" << name << " " << phase;
  if (start && end) out << " after " << human_duration(*end - *start);
  out << ": world size " << max_world_size << ", restarts " << restarts_text(st) << "\n";
  if (phase == "Failed") {
    for (const auto& c : st.value("conditions", json::array())) {
      if (str(c, "type") == "Failed" && str(c, "status") == "True") {
        out << "failed: " << str(c, "reason")
            << (str(c, "message").empty() ? "" : ": " + terminal_safe(str(c, "message"))) << "\n";
      }
    }
  }
  if (auto lf = last_failure_text(st); !lf.empty()) out << "last failure: " << lf << "\n";
  return out.str();
}

int exit_code_for(const json& job) {
  const json& st = field(job, "status");
  if (str(st, "phase") == "Succeeded") return 0;
  const json& lf = field(st, "lastFailure");
  if (auto code = lf.find("exitCode"); code != lf.end() && code->is_number_integer()) {
    const int c = code->get<int>();
    if (c > 0 && c < 256) return c;
  }
  return 1;
}

std::string log_line(int node, bool setup, const std::string& raw) {
  const std::string line = terminal_safe(raw);  // a pod's line must not move the cursor or retitle the terminal
  if (setup) return "[node " + std::to_string(node) + " setup] " + line;
  if (line.rfind("[rank", 0) == 0) return line;
  return "[node " + std::to_string(node) + "] " + line;
}

}  // namespace kubedist::kubectl
