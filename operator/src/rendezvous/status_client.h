// The operator's STATUS client: one question to the rendezvous service on a job's node 0, over a plain TCP socket.
#pragma once

#include <chrono>
#include <string>

#include "common/result.h"
#include "contract/status_line.h"

namespace kubedist::rendezvous {

// One STATUS request to ip:port with a deadline for connecting, writing and reading the answer; with a secret, signed
// after node 0's HELLO and the answer's MAC checked (rendezvous/rdzv_auth.h). The answer is the contract's STATUS line.
Result<contract::StatusReport> query_status(const std::string& ip, int port, std::chrono::milliseconds timeout,
                                            const std::string& secret = "");

}  // namespace kubedist::rendezvous
