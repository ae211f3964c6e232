// TcpMember: a node other than rank 0 taking part in the rendezvous over TCP. It keeps (re)connecting, also while
// node 0's name does not resolve yet, for up to join_timeout; losing the connection stops this node's workers.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "contract/status_line.h"
#include "io/event_loop.h"
#include "io/resolver.h"
#include "rendezvous/auth.h"
#include "rendezvous/member.h"

namespace kubedist::launcher {

class TcpMember : public RendezvousMember {
 public:
  TcpMember(EventLoop& loop, std::string host, int port, std::chrono::milliseconds join_timeout,
            ResolverConfig resolver, MemberEvents events, std::string secret = "");
  ~TcpMember() override;
  void join(const JoinRequest& request) override;
  void failed(int round, int exit_code, const std::string& summary) override;
  void done(int round) override;
  void leave() override;
  void progress(int round, const NodeProgress& progress) override;
  void stacks(int round, const std::map<int, StackSummary>& stacks) override;

 private:
  void connect_soon(std::chrono::milliseconds delay);
  void try_connect();
  void on_ready(std::uint32_t events);
  void lost(const std::string& why);
  void give_up(const std::string& why);  // retrying cannot help (node 0 refused this node): end this node
  void refused_unverified(const std::string& why);  // a refusal node 0 did not sign: retried until join_timeout
  void send_line(const std::string& line);
  void close_socket();

  EventLoop& loop_;
  std::string host_;
  int port_;
  std::chrono::milliseconds join_timeout_;
  ResolverConfig resolver_;
  MemberEvents events_;
  int fd_ = -1;
  bool connected_ = false;
  bool ended_ = false;
  std::optional<JoinRequest> want_join_;  // a JOIN not yet answered by a ROUND
  std::optional<std::chrono::steady_clock::time_point> unreachable_since_;
  std::optional<std::chrono::steady_clock::time_point> refused_since_;  // refused without node 0's signature since
  std::string last_error_;
  in_addr connecting_to_{};  // the address host_ resolved to for the connection being made
  std::string in_, out_;
  std::string secret_;                // "": no authentication
  std::optional<AuthSession> auth_;   // once node 0's HELLO arrived on this connection
  bool nonce_unanswered_ = false;     // sent our NONCE; no line of node 0 verified since
  bool earlier_host_ = false;         // node 0 closed on our NONCE: join without one (auth.h)
  bool nonce_proven_ = false;         // node 0 once answered after our NONCE: never join without one again
  // Node 0 knows PROGRESS and STACKS (older launchers drop a connection that sends them): learnt from its answer to
  // the STATUS this member asks on every connection, which counts hangs once it does.
  bool host_speaks_progress_ = false;
  // The JOIN of a connection waits for node 0's answer to that STATUS: a node 0 that says carried= takes the
  // restart counts this member last saw from node 0 (CARRY, before the JOIN), so that a node 0 replaced since
  // loses none of them (coordinator.h, carry()).
  void send_join();
  void on_status(const std::optional<contract::StatusReport>& report);
  bool status_awaited_ = false;                // this connection's first STATUS not answered yet
  EventLoop::TimerId status_timer_ = 0;        // a node 0 that does not answer it gets the JOIN anyway
  bool host_takes_carry_ = false;              // node 0's answer said carried=
  bool carried_ = false;                       // CARRY sent on this connection
  std::map<std::string, int> seen_counts_;     // the highest restart counts by cause node 0 ever answered
  std::string run_id_;                         // of the last JOIN: whose counts seen_counts_ are
  std::string unsent_;                // plain lines waiting for that HELLO
  EventLoop::TimerId retry_timer_ = 0;
  EventLoop::TimerId hello_timer_ = 0;  // with a secret: node 0's HELLO is due
};

}  // namespace kubedist::launcher
