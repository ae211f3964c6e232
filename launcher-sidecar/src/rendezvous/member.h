// RendezvousMember: how an agent takes part in the rendezvous, in-process on node 0 or over TCP elsewhere.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "progress/local_progress.h"
#include "progress/stacks.h"
#include "rendezvous/coordinator.h"

namespace kubedist::launcher {

struct MemberEvents {
  std::function<void(const Assignment&)> on_round;                     // start workers for this round
  std::function<void()> on_stop;                                       // stop workers, then join() again
  std::function<void(int exit_code, const std::string& reason)> on_end;  // the job is over for this node
  std::function<void(int round)> on_dump;  // the job hangs: take the workers' stacks, answer with stacks()
  // Node 0 only: the group restarts for this hang (its message names the stuck ranks and where they are).
  std::function<void(const std::string& message)> on_hang;
};

class RendezvousMember {
 public:
  virtual ~RendezvousMember() = default;
  virtual void join(const JoinRequest& request) = 0;
  virtual void failed(int round, int exit_code, const std::string& summary) = 0;
  virtual void done(int round) = 0;
  // The node is leaving on purpose (SIGTERM while the group runs, e.g. the operator scales down): the others
  // re-form the group and count a scale restart rather than a lost node.
  virtual void leave() = 0;
  // How far this node's workers are (to node 0's JobProgress), and the stacks on_dump asked for. Dropped where
  // node 0 is a launcher older than progress.
  virtual void progress(int round, const NodeProgress& progress) = 0;
  virtual void stacks(int round, const std::map<int, StackSummary>& stacks) = 0;
};

}  // namespace kubedist::launcher
