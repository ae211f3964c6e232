#include "io/resolver.h"

#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cctype>
#include <cstring>
#include <sstream>

#include "util/fs_util.h"
#include "io/net.h"

namespace kubedist::launcher {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string strip_dot(std::string s) {
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

ResolverConfig parse_resolv_conf(const std::string& text) {
  ResolverConfig c;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    line = line.substr(0, line.find_first_of("#;"));
    std::istringstream words(line);
    std::string key;
    words >> key;
    if (key == "nameserver") {
      std::string addr;
      words >> addr;
      if (auto a = parse_ipv4(addr)) c.nameservers.push_back({*a, 53});
    } else if (key == "search" || key == "domain") {
      c.search.clear();
      for (std::string d; words >> d;) c.search.push_back(strip_dot(d));
    } else if (key == "options") {
      for (std::string opt; words >> opt;) {
        if (opt.rfind("ndots:", 0) == 0) c.ndots = std::clamp(std::atoi(opt.c_str() + 6), 0, 15);
        if (opt.rfind("timeout:", 0) == 0) c.timeout_ms = std::clamp(std::atoi(opt.c_str() + 8), 1, 30) * 1000;
        if (opt.rfind("attempts:", 0) == 0) c.attempts = std::clamp(std::atoi(opt.c_str() + 9), 1, 5);
      }
    }
  }
  return c;
}

std::optional<in_addr> lookup_hosts(const std::string& hosts_text, const std::string& name) {
  const std::string want = lower(strip_dot(name));
  std::istringstream lines(hosts_text);
  std::string line;
  while (std::getline(lines, line)) {
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string addr;
    if (!(words >> addr)) continue;
    auto a = parse_ipv4(addr);
    if (!a) continue;  // IPv6 lines
    for (std::string host; words >> host;)
      if (lower(host) == want) return a;
  }
  return std::nullopt;
}

std::vector<std::string> candidate_names(const std::string& name, const std::vector<std::string>& search, int ndots) {
  if (!name.empty() && name.back() == '.') return {strip_dot(name)};
  std::vector<std::string> out;
  const int dots = static_cast<int>(std::count(name.begin(), name.end(), '.'));
  if (dots >= ndots) out.push_back(name);
  for (const auto& domain : search) out.push_back(name + "." + domain);
  if (dots < ndots) out.push_back(name);
  return out;
}

std::string build_query(unsigned short id, const std::string& name) {
  std::string q;
  q += static_cast<char>(id >> 8);
  q += static_cast<char>(id & 0xff);
  q += std::string("\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00", 10);  // RD; one question
  size_t start = 0;
  while (start < name.size()) {
    size_t dot = name.find('.', start);
    if (dot == std::string::npos) dot = name.size();
    q += static_cast<char>(dot - start);
    q += name.substr(start, dot - start);
    start = dot + 1;
  }
  q += std::string("\x00\x00\x01\x00\x01", 5);  // root, type A, class IN
  return q;
}

Result<in_addr> parse_response(unsigned short id, const std::string& r) {
  auto u8 = [&](size_t i) { return static_cast<unsigned>(static_cast<unsigned char>(r[i])); };
  auto u16 = [&](size_t i) { return (u8(i) << 8) | u8(i + 1); };
  if (r.size() < 12 || u16(0) != id || !(u8(2) & 0x80)) return make_error("malformed DNS response");
  const unsigned rcode = u8(3) & 0x0f;
  if (rcode == 3) return make_error("no such host (NXDOMAIN)");
  if (rcode != 0) return make_error("DNS error rcode " + std::to_string(rcode));
  const unsigned qd = u16(4), an = u16(6);
  size_t pos = 12;
  auto skip_name = [&]() -> bool {
    while (pos < r.size()) {
      unsigned len = u8(pos);
      if ((len & 0xc0) == 0xc0) {
        pos += 2;
        return pos <= r.size();
      }
      pos += 1 + len;
      if (len == 0) return pos <= r.size();
    }
    return false;
  };
  for (unsigned i = 0; i < qd; ++i) {
    if (!skip_name()) return make_error("malformed DNS response");
    pos += 4;
  }
  for (unsigned i = 0; i < an; ++i) {
    if (!skip_name() || pos + 10 > r.size()) return make_error("malformed DNS response");
    unsigned type = u16(pos), klass = u16(pos + 2), len = u16(pos + 8);
    pos += 10;
    if (pos + len > r.size()) return make_error("malformed DNS response");
    if (type == 1 && klass == 1 && len == 4) {
      in_addr a{};
      std::memcpy(&a, r.data() + pos, 4);
      return a;
    }
    pos += len;
  }
  return make_error("no IPv4 address");
}

namespace {

Result<in_addr> query_one(const Nameserver& ns, const std::string& name, int timeout_ms) {
  static unsigned short next_id = static_cast<unsigned short>(getpid() * 7919u);
  const unsigned short id = ++next_id;
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return make_error("socket failed");
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(ns.port));
  sa.sin_addr = ns.addr;
  const std::string q = build_query(id, name);
  Result<in_addr> result = make_error("no answer from " + std::string(inet_ntoa(ns.addr)));
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0 && send(fd, q.data(), q.size(), 0) > 0) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (true) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd p{fd, POLLIN, 0};
      if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
      char buf[1500];
      ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      std::string response(buf, static_cast<size_t>(n));
      if (response.size() >= 2 && ((static_cast<unsigned char>(response[0]) << 8) | static_cast<unsigned char>(response[1])) != id)
        continue;  // a late answer to an earlier query
      result = parse_response(id, response);
      break;
    }
  }
  close(fd);
  return result;
}

}  // namespace

Result<in_addr> resolve_ipv4(const std::string& name, const ResolverConfig& config) {
  if (auto a = parse_ipv4(name)) return *a;
  if (name.empty()) return make_error("empty host name");
  if (auto a = lookup_hosts(read_file_prefix(config.hosts_file, 1 << 20), name)) return *a;
  if (config.nameservers.empty()) return make_error("cannot resolve '" + name + "': not in " + config.hosts_file + " and no nameserver configured");
  std::string last = "no answer";
  for (const auto& candidate : candidate_names(name, config.search, config.ndots)) {
    for (int attempt = 0; attempt < config.attempts; ++attempt) {
      bool answered = false;
      for (const auto& ns : config.nameservers) {
        auto r = query_one(ns, candidate, config.timeout_ms);
        if (r) return r;
        last = r.error();
        if (last.rfind("no answer", 0) != 0) {
          answered = true;  // NXDOMAIN and friends: try the next candidate, not another attempt
          break;
        }
      }
      if (answered) break;
    }
  }
  return make_error("cannot resolve '" + name + "': " + last);
}

ResolverConfig system_resolver_config() { return parse_resolv_conf(read_file_prefix("/etc/resolv.conf", 1 << 16)); }

}  // namespace kubedist::launcher
