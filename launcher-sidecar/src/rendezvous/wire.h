// The rendezvous wire format: one text line per message (see coordinator.h for the protocol).
#pragma once

#include <string>

#include <map>

#include "progress/local_progress.h"
#include "progress/stacks.h"
#include "rendezvous/coordinator.h"
#include "util/result.h"

namespace kubedist::launcher {

struct MemberRequest {
  enum class Kind { Join, Failed, Done, Leave, Status, Progress, Stacks, Carry, Release } kind = Kind::Join;
  JoinRequest join;
  int round = 0;
  int exit_code = 0;
  std::string summary;
  NodeProgress progress;                // Progress
  std::map<int, StackSummary> stacks;   // Stacks, by rank
  std::string run_id;                   // Carry: whose counts
  std::map<std::string, int> carried;   // Carry: restarts by cause
  contract::ReleaseNotice release{};    // Release: the operator's notice (contract/notice.h)
};

// The requests, one encoder per kind: "JOIN run 1 4[ 1 2 0 1000 600000 0][ domain=D][ spare]\n" (the optional
// joiner's settings: min and max nodes, max restarts, last call and join timeout in ms, permanent exit codes; then
// its topology domain, if it knows one; then " spare" for a spare, or " stand_in=K" for one that stood in for slot
// K), "FAILED 2 3 text\n",
// "DONE 2\n", "LEAVE\n", "STATUS\n" (its answer: contract/status_line.h); the operator's "RELEASE 1 cordoned\n"
// (and its answer: contract/notice.h).
// A node's progress for node 0 (only to a host whose STATUS counts hangs, which knows the verb):
// "PROGRESS round rank:step:step_seconds... [total=N] [epoch=N] [samples=N] [m.name=value...]\n"; the stacks it
// took when told DUMP: "STACKS round rank :host :where :trace ...\n" (each text percent-escaped after its ':').
// parse_request() reads any of them back into a MemberRequest.
std::string encode_progress(int round, const NodeProgress& progress);
std::string encode_stacks(int round, const std::map<int, StackSummary>& stacks);
std::string encode_join(const JoinRequest& join);
std::string encode_failed(int round, int exit_code, const std::string& summary);
std::string encode_done(int round);
std::string encode_leave();
std::string encode_status();
// "CARRY run cause=n ...\n": the restart counts by cause the member last saw from node 0, for a node 0 that took over
// (only to one whose STATUS says carried=: coordinator.h, carry()).
std::string encode_carry(const std::string& run_id, const std::map<std::string, int>& counts);
// "ROUND r rc g gws off ws [master_addr master_port] [slot=K]\n" (slot: to a spare standing in for node rank K),
// "STOP r\n", "FAIL c text\n", "DUMP r\n"
std::string encode_message(const RendezvousMessage& message);
Result<MemberRequest> parse_request(const std::string& line);
Result<RendezvousMessage> parse_message(const std::string& line);

}  // namespace kubedist::launcher
