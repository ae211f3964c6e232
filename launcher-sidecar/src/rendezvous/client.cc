#include "rendezvous/client.h"

#include <arpa/inet.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "contract/restart_cause.h"
#include "contract/signed_line.h"
#include "contract/status_line.h"
#include "io/log_mux.h"
#include "io/net.h"
#include "rendezvous/wire.h"

namespace kubedist::launcher {
namespace {
constexpr size_t kMaxLine = 64 * 1024;  // as node 0 bounds ours
}  // namespace

TcpMember::TcpMember(EventLoop& loop, std::string host, int port, std::chrono::milliseconds join_timeout,
                     ResolverConfig resolver, MemberEvents events, std::string secret)
    : loop_(loop),
      host_(std::move(host)),
      port_(port),
      join_timeout_(join_timeout),
      resolver_(std::move(resolver)),
      events_(std::move(events)),
      secret_(std::move(secret)) {}

TcpMember::~TcpMember() {
  if (retry_timer_) loop_.cancel(retry_timer_);
  close_socket();
}

void TcpMember::join(const JoinRequest& request) {
  want_join_ = request;
  run_id_ = request.run_id;
  if (connected_ && !status_awaited_) return send_join();
  if (fd_ < 0 && !retry_timer_) try_connect();
}

void TcpMember::send_join() {
  if (!want_join_) return;
  if (host_takes_carry_ && !carried_ && !seen_counts_.empty()) {
    send_line(encode_carry(want_join_->run_id, seen_counts_));
    carried_ = true;
  }
  send_line(encode_join(*want_join_));
}

void TcpMember::on_status(const std::optional<contract::StatusReport>& report) {
  host_speaks_progress_ = report && report->restarts_by_cause.count(contract::kCauseHang);
  const bool first = status_awaited_;
  status_awaited_ = false;
  if (status_timer_) loop_.cancel(status_timer_);
  status_timer_ = 0;
  if (first) {
    host_takes_carry_ = report && report->carried.has_value();
    send_join();  // with the counts seen before this connection
  }
  // This job's counts only: an endpoint may host other jobs' rendezvous, and answers for its own.
  if (!report || report->run_id != run_id_) return;
  for (const auto& [cause, n] : report->restarts_by_cause) seen_counts_[cause] = std::max(seen_counts_[cause], n);
}

void TcpMember::failed(int round, int exit_code, const std::string& summary) {
  if (connected_) send_line(encode_failed(round, exit_code, summary));
}

void TcpMember::done(int round) {
  // This node is finished: tell node 0 and leave. The rest of the job is node 0's business.
  if (connected_) send_line(encode_done(round));
  ended_ = true;
  close_socket();
  loop_.defer([this] { events_.on_end(0, ""); });
}

void TcpMember::leave() {
  if (ended_) return;
  if (connected_) send_line(encode_leave());
  ended_ = true;
  want_join_.reset();
  if (retry_timer_) loop_.cancel(retry_timer_);
  retry_timer_ = 0;
  close_socket();
}

void TcpMember::progress(int round, const NodeProgress& p) {
  // A checkpoint's report alone (no rank's step yet) is node 0's own business: rank 0 runs there.
  if (connected_ && host_speaks_progress_ && !p.ranks.empty()) send_line(encode_progress(round, p));
}

void TcpMember::stacks(int round, const std::map<int, StackSummary>& s) {
  if (connected_ && host_speaks_progress_) send_line(encode_stacks(round, s));
}

void TcpMember::connect_soon(std::chrono::milliseconds delay) {
  retry_timer_ = loop_.after(delay, [this] {
    retry_timer_ = 0;
    try_connect();
  });
}

void TcpMember::try_connect() {
  if (ended_) return;
  auto now = std::chrono::steady_clock::now();
  if (!unreachable_since_) unreachable_since_ = now;
  if (now - *unreachable_since_ > join_timeout_) {
    ended_ = true;
    std::string why = "cannot reach the rendezvous on node 0 at " + host_ + ":" + std::to_string(port_) + " for " +
                      std::to_string(join_timeout_.count() / 1000) + " s: " + last_error_;
    loop_.defer([this, why] { events_.on_end(1, why); });
    return;
  }
  auto addr = resolve_ipv4(host_, resolver_);  // node 0's name appears in DNS only once its pod has an IP
  if (!addr) {
    last_error_ = addr.error();
    return connect_soon(std::chrono::milliseconds(500));
  }
  auto fd = start_connect(*addr, port_);
  if (!fd) {
    last_error_ = fd.error();
    return connect_soon(std::chrono::milliseconds(200));
  }
  fd_ = *fd;
  detect_dead_peer(fd_);  // a node 0 that vanished is given up within kDeadPeerSeconds, and joined again
  connecting_to_ = *addr;
  loop_.watch(fd_, EPOLLOUT, [this](std::uint32_t ev) { on_ready(ev); });
}

void TcpMember::on_ready(std::uint32_t events) {
  if (!connected_) {
    int err = connect_error(fd_);
    if (err != 0) {
      last_error_ = std::strerror(err);
      close_socket();
      return connect_soon(std::chrono::milliseconds(200));
    }
    connected_ = true;
    if (secret_.empty()) {
      unreachable_since_.reset();
    } else {
      // Reached only once node 0 greets us: a node 0 without the secret never does, and join_timeout still applies.
      hello_timer_ = loop_.after(std::min<std::chrono::milliseconds>(join_timeout_, std::chrono::seconds(10)), [this] {
        hello_timer_ = 0;
        lost("no HELLO from node 0 (does it have the same --rdzv-secret-file?)");
      });
    }
    // Which address node 0's name led to (our own resolver, not glibc's): what to check when a node cannot join.
    char ip[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &connecting_to_, ip, sizeof ip);
    write_all(2, "kubedist-launcher: joined the rendezvous at " + host_ + ":" + std::to_string(port_) + " (" + ip +
                     ")\n");
    loop_.modify(fd_, EPOLLIN);
    host_speaks_progress_ = host_takes_carry_ = carried_ = false;
    status_awaited_ = true;  // the JOIN follows node 0's answer (send_join), or a second without one
    status_timer_ = loop_.after(std::chrono::seconds(1), [this] {
      status_timer_ = 0;
      if (!status_awaited_) return;
      status_awaited_ = false;
      send_join();
    });
    send_line(encode_status());
    return;
  }
  if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
    char buf[4096];
    bool closed = false;
    while (true) {
      ssize_t n = read(fd_, buf, sizeof buf);
      if (n > 0) {
        in_.append(buf, static_cast<size_t>(n));
        // Node 0's lines are short; whatever sends more without a newline is not node 0 (or is broken).
        if (in_.size() > kMaxLine && in_.find('\n') == std::string::npos)
          return lost("node 0 sent a line longer than " + std::to_string(kMaxLine) + " bytes");
        if (in_.size() > kMaxLine) break;  // handle the lines first, then read on
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
      closed = true;  // after the lines that came before it (node 0's REFUSED or FAIL, then its close)
      break;
    }
    for (size_t nl; fd_ >= 0 && (nl = in_.find('\n')) != std::string::npos;) {
      std::string line = in_.substr(0, nl);
      in_.erase(0, nl + 1);
      if (is_refused(line)) {
        // With a secret, only a signed refusal counts: anyone on the path (or at node 0's address while it is
        // away) could send a plain one to make this node give up.
        if (secret_.empty()) return give_up("node 0 refused this node: " + line.substr(8));
        return refused_unverified("an unsigned refusal (" + line.substr(8) + "), not node 0's");
      }
      if (!secret_.empty() && !auth_) {
        auto challenge = parse_hello(line);
        if (!challenge) return lost(challenge.error());
        auth_.emplace(secret_, *challenge, AuthSession::Side::Member);
        unreachable_since_.reset();
        if (hello_timer_) loop_.cancel(hello_timer_);
        hello_timer_ = 0;
        if (!earlier_host_) {
          // Sealed with the challenge alone; everything after it covers this nonce too (auth.h).
          const std::string nonce = new_challenge();
          out_ += auth_->seal(encode_nonce(nonce));
          auth_->adopt_member_nonce(nonce);
          nonce_unanswered_ = true;
        }
        std::string waiting;
        waiting.swap(unsent_);
        send_line(waiting);
        continue;
      }
      if (auth_) {
        auto opened = auth_->open(line);
        if (!opened) {
          const std::string plain(contract::split_signed_line(line).plain);
          if (is_refused(plain))
            return refused_unverified("node 0 refused this node (" + plain.substr(8) + "), and the refusal does not "
                                      "verify with this node's secret: is --rdzv-secret-file the same on every node?");
          return lost("refused a message from node 0: " + opened.error());
        }
        line = *opened;
        refused_since_.reset();
        if (is_refused(line)) return give_up("node 0 refused this node: " + line.substr(8));
        if (line + "\n" == kNonceTaken) {
          if (!nonce_unanswered_) return lost("node 0 took a nonce this node did not send");
          nonce_unanswered_ = false;
          nonce_proven_ = true;
          continue;
        }
      } else if (line.rfind("HELLO ", 0) == 0) {
        return give_up("node 0 asks for a rendezvous secret: give every node the same --rdzv-secret-file");
      }
      if (line.rfind(contract::kStatusVerb, 0) == 0) {  // the answer to our STATUS
        on_status(contract::parse_status_line(line).report);
        continue;
      }
      auto m = parse_message(line);
      if (!m) return lost(m.error());
      switch (m->kind) {
        case RendezvousMessage::Kind::Round:
          want_join_.reset();  // node 0 follows the ROUND with its STATUS (the counts to carry if it goes)
          loop_.defer([this, a = m->assignment] { events_.on_round(a); });
          break;
        case RendezvousMessage::Kind::Stop:
          loop_.defer([this] { events_.on_stop(); });
          break;
        case RendezvousMessage::Kind::Dump:
          if (events_.on_dump) loop_.defer([this, round = m->round] { events_.on_dump(round); });
          break;
        case RendezvousMessage::Kind::Fail:
          ended_ = true;
          close_socket();
          loop_.defer([this, code = m->exit_code, reason = m->reason] { events_.on_end(code, reason); });
          return;
      }
    }
    if (closed && fd_ >= 0) {
      if (nonce_unanswered_ && !nonce_proven_ && !earlier_host_) {
        // Closed after our NONCE without a word: an earlier node 0, which does not know it. Joining without one
        // is what that node 0 speaks (its lines are still signed; only their freshness to this member is not
        // proven). Only until node 0 has once taken our nonce: from then on a close like this is not a reason to
        // trust less (whoever holds node 0's address could close to replay what it recorded), so there is no way
        // back; nor is a line that fails its MAC.
        earlier_host_ = true;
        write_all(2, "kubedist-launcher: rendezvous: node 0 took no member nonce (an earlier launcher?): joining "
                     "without one\n");
      }
      return lost(secret_.empty() || auth_ ? "node 0 closed the rendezvous connection"
                                           : "node 0 closed the rendezvous connection before its HELLO (does it have "
                                             "the same --rdzv-secret-file?)");
    }
  }
  if (fd_ >= 0 && (events & EPOLLOUT) && !out_.empty()) send_line("");
}

void TcpMember::send_line(const std::string& lines) {
  if (!secret_.empty() && !auth_) {
    unsent_ += lines;  // sealed once node 0's challenge is known
    return;
  }
  // One or more lines (those that waited for the HELLO); sealed one by one.
  for (size_t start = 0, nl; start < lines.size(); start = nl + 1) {
    nl = lines.find('\n', start);
    if (nl == std::string::npos) nl = lines.size() - 1;
    std::string line = lines.substr(start, nl - start + 1);
    out_ += auth_ ? auth_->seal(line) : line;
  }
  if (fd_ < 0 || !connected_) return;
  ssize_t n = send(fd_, out_.data(), out_.size(), MSG_NOSIGNAL);
  if (n > 0) out_.erase(0, static_cast<size_t>(n));
  loop_.modify(fd_, out_.empty() ? EPOLLIN : EPOLLIN | EPOLLOUT);
}

void TcpMember::lost(const std::string& why) {
  write_all(2, "kubedist-launcher: rendezvous: " + why + "; reconnecting to " + host_ + ":" + std::to_string(port_) + "\n");
  nonce_unanswered_ = false;
  last_error_ = why;
  close_socket();
  out_.clear();
  in_.clear();
  loop_.defer([this] { events_.on_stop(); });  // our workers' round is gone with the connection
  if (want_join_) connect_soon(std::chrono::milliseconds(200));
}

void TcpMember::refused_unverified(const std::string& why) {
  // Not a reason to stop at once (node 0 did not sign it), nor to retry forever (a node with another secret is
  // refused every time): retried until join_timeout, then this node gives up with the reason.
  const auto now = std::chrono::steady_clock::now();
  if (!refused_since_) refused_since_ = now;
  if (now - *refused_since_ >= join_timeout_) return give_up(why);
  lost(why);
}

void TcpMember::give_up(const std::string& why) {
  ended_ = true;
  want_join_.reset();
  if (retry_timer_) loop_.cancel(retry_timer_);
  retry_timer_ = 0;
  close_socket();
  loop_.defer([this, why] { events_.on_end(1, "rendezvous: " + why); });
}

void TcpMember::close_socket() {
  if (status_timer_) loop_.cancel(status_timer_);
  status_timer_ = 0;
  status_awaited_ = false;
  if (fd_ < 0) return;
  loop_.unwatch(fd_);
  close(fd_);
  fd_ = -1;
  connected_ = false;
  if (hello_timer_) loop_.cancel(hello_timer_);
  hello_timer_ = 0;
  auth_.reset();
  unsent_.clear();
}

}  // namespace kubedist::launcher
