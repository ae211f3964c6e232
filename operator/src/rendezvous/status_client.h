// The operator's client of the rendezvous service on a job's node 0, over a plain TCP socket: its STATUS, and the
// notices of contract/notice.h; one request and one answer a connection.
#pragma once

#include <chrono>
#include <string>

#include "common/result.h"
#include "contract/notice.h"
#include "contract/status_line.h"

namespace kubedist::rendezvous {

// One STATUS request to ip:port with a deadline for connecting, writing and reading the answer; with a secret, signed
// after node 0's HELLO and the answer's MAC checked (rendezvous/rdzv_auth.h). The answer is the contract's STATUS line.
Result<contract::StatusReport> query_status(const std::string& ip, int port, std::chrono::milliseconds timeout,
                                            const std::string& secret = "");

// One RELEASE notice (contract/notice.h), as query_status asks: node 0's answer, RELEASED or KEPT and why.
Result<contract::ReleaseAnswer> send_release(const std::string& ip, int port, std::chrono::milliseconds timeout,
                                             const std::string& secret, const contract::ReleaseNotice& notice);

}  // namespace kubedist::rendezvous
