// The rendezvous wire format: one text line per message (see rendezvous_coordinator.h for the protocol).
#pragma once

#include <string>

#include "rendezvous/coordinator.h"
#include "util/result.h"

namespace kubedist::launcher {

struct MemberRequest {
  enum class Kind { Join, Failed, Done, Leave, Status } kind = Kind::Join;
  JoinRequest join;
  int round = 0;
  int exit_code = 0;
  std::string summary;
};

// The requests, one encoder per kind: "JOIN run 1 4[ 1 2 0 1000 600000 0]\n" (the optional joiner's settings:
// min and max nodes, max restarts, last call and join timeout in ms, permanent exit codes), "FAILED 2 3 text\n",
// "DONE 2\n", "LEAVE\n", "STATUS\n" (its answer: contract/status_line.h).
// parse_request() reads any of them back into a MemberRequest.
std::string encode_join(const JoinRequest& join);
std::string encode_failed(int round, int exit_code, const std::string& summary);
std::string encode_done(int round);
std::string encode_leave();
std::string encode_status();
// "ROUND r rc g gws off ws [master_addr master_port]\n", "STOP r\n", "FAIL c text\n"
std::string encode_message(const RendezvousMessage& message);
Result<MemberRequest> parse_request(const std::string& line);
Result<RendezvousMessage> parse_message(const std::string& line);

}  // namespace kubedist::launcher
