#include "rendezvous/coordinator.h"

#include <algorithm>
#include <tuple>

namespace kubedist::launcher {
namespace {

RendezvousMessage fail_message(int exit_code, std::string reason) {
  RendezvousMessage m;
  m.kind = RendezvousMessage::Kind::Fail;
  m.exit_code = exit_code;
  m.reason = std::move(reason);
  return m;
}

RendezvousMessage stop_message(int round) {
  RendezvousMessage m;
  m.kind = RendezvousMessage::Kind::Stop;
  m.round = round;
  return m;
}

}  // namespace

CoordinatorSettings coordinator_settings(const LaunchConfig& config) {
  return {config.run_id,
          config.min_nodes,
          config.max_nodes,
          config.max_restarts,
          std::chrono::milliseconds(static_cast<long>(config.last_call_timeout * 1000)),
          std::chrono::milliseconds(static_cast<long>(config.join_timeout * 1000)),
          config.permanent_exit_codes};
}

RendezvousCoordinator::RendezvousCoordinator(CoordinatorSettings settings, Clock::time_point now)
    : settings_(std::move(settings)), below_min_since_(now) {}

void RendezvousCoordinator::claim_slot(MemberId id, Member& m, int slot) {
  bool taken = false;  // by another stand-in, or by a member of the running group
  for (const auto& [other_id, other] : members_) {
    if (other_id != id && !other.info.spare && other.slot == slot && (other.in_round || other.slot != other.info.node_rank))
      taken = true;
  }
  if (taken) {  // given away meanwhile: a spare again
    m.info.spare = true;
    return;
  }
  m.info.spare = false;
  m.slot = slot;
  stand_ins_[slot] = m.info.node_rank;
  open_slots_.erase(slot);
  for (auto& [other_id, other] : members_)  // the lost node back and waiting: a spare now
    if (other_id != id && !other.info.spare && other.slot == slot) other.info.spare = true;
}

bool RendezvousCoordinator::can_stand_in(const Member& m) const {
  return m.info.spare && m.joined && released_.count(m.info.node_rank) == 0;
}

int RendezvousCoordinator::unclaimed_spares() const {
  const auto ready = std::count_if(members_.begin(), members_.end(), [this](const auto& m) { return can_stand_in(m.second); });
  return static_cast<int>(ready) - static_cast<int>(open_slots_.size());
}

RendezvousCoordinator::Gathered RendezvousCoordinator::gathered() const {
  Gathered g;
  int spares_ready = 0;
  for (const auto& [id, m] : members_) {
    if (m.info.spare) {
      spares_ready += can_stand_in(m) ? 1 : 0;
    } else {
      ++g.regular;
      g.regular_joined += m.joined ? 1 : 0;
    }
  }
  g.usable = g.regular_joined + std::min(spares_ready, static_cast<int>(open_slots_.size()));
  return g;
}

void RendezvousCoordinator::join(MemberId id, const JoinRequest& request, Clock::time_point now) {
  if (request.run_id != settings_.run_id) {
    send(id, fail_message(2,
              "run id mismatch: this node has '" + request.run_id + "', the rendezvous on node 0 has '" +
                  settings_.run_id + "'"));
    return;
  }
  if (phase_ == Phase::Over) {
    if (last_exit_code_ == 0 && request.spare) {
      send(id, fail_message(0, "this spare was not needed: the job had already finished"));
    } else if (last_exit_code_ == 0) {  // never a silent success for a node that ran nothing
      send(id, fail_message(1, "this node was not admitted: the job had already finished"));
    } else {
      send(id, fail_message(last_exit_code_, last_failure_));
    }
    return;
  }
  Member& m = members_[id];
  const bool placed = m.placed;  // a member of the last round joining again after its workers stopped
  m = Member{request, true, false, false, placed, request.node_rank};
  // Back: a later loss of it is a new one; a released node is not back, whatever it does.
  if (released_.count(request.node_rank) == 0) lost_nodes_.erase(request.node_rank);
  if (released_.count(request.node_rank) != 0) {
    m.info.spare = true;  // its node goes away (release()): it waits, and is never given a place
  } else {
    for (const auto& [slot, node_rank] : stand_ins_) {
      if (node_rank == request.node_rank) {  // a stand-in joining again (the group restarts): a member, in its slot
        m.info.spare = false;
        m.slot = slot;
      }
    }
    if (request.stand_in >= 0 && m.slot == request.node_rank) claim_slot(id, m, request.stand_in);
    if (!m.info.spare && m.slot == request.node_rank) {
      // A lost node back: its place is its own again, unless a spare took it meanwhile; then it waits as a spare.
      if (stand_ins_.count(request.node_rank)) m.info.spare = true;
      else open_slots_.erase(request.node_rank);
    }
  }
  if (phase_ == Phase::Gathering) {
    evaluate(now);
    return;
  }
  // A node joined while a round runs: grow the group if there is room. As in torchrun, a membership change is
  // not charged to --max-restarts (a node can only join again after leaving, and leaving is charged). Once a node
  // has finished the group cannot re-form: the joiner waits, and is told at the end that it was not admitted.
  // A spare only fills the place of a member lost from the group.
  if (round_nodes_ < settings_.max_nodes && !any_done_ && (!m.info.spare || (can_stand_in(m) && !open_slots_.empty()))) {
    new_round((m.info.spare ? "spare node " : "node ") + std::to_string(request.node_rank) + " joined", 0,
              kCauseScale, now, false);
  }
}

void RendezvousCoordinator::leave(MemberId id, Clock::time_point now, bool graceful) {
  auto it = members_.find(id);
  if (it == members_.end()) return;
  Member m = it->second;
  members_.erase(it);
  if (m.slot != m.info.node_rank) stand_ins_.erase(m.slot);
  const int node_rank = m.info.node_rank;
  if (std::none_of(members_.begin(), members_.end(), [&](const auto& o) { return o.second.info.node_rank == node_rank; }))
    released_.erase(node_rank);  // gone: a new launcher of that node rank runs on another node
  // A member of the last round gone without LEAVE: a spare may take its place (also while the group re-forms).
  // With LEAVE too in a rigid job, which is never scaled down, when a ready spare waits: the node is going away.
  const bool placed = m.placed && (m.in_round || phase_ == Phase::Gathering) && !m.done;
  const bool handed = graceful && placed && settings_.min_nodes == settings_.max_nodes && unclaimed_spares() > 0;
  if ((!graceful && placed) || handed) open_slots_.insert(m.slot);
  const bool lost = !graceful || handed;
  if (handed && lost_nodes_.size() < contract::kMaxLostNodes) lost_nodes_.insert(node_rank);
  if (phase_ == Phase::Gathering) {
    evaluate(now);
  } else if (phase_ == Phase::Running && m.in_round && !m.done) {
    std::string reason = "node " + std::to_string(node_rank) +
                         (handed     ? " left the job (its pod is being removed); a spare takes its place"
                          : graceful ? " left the job (scaled down)"
                                     : " left the job (its launcher exited or lost the connection)");
    if (any_done_) return end(1, reason + " after other nodes had finished");
    if (!graceful && lost_nodes_.size() < contract::kMaxLostNodes) lost_nodes_.insert(node_rank);
    new_round(reason, 1, lost ? kCauseNodeLost : kCauseScale, now);
  } else if (phase_ == Phase::Running && round_finished()) {
    end(0, "job finished");
  }
}

void RendezvousCoordinator::failed(MemberId id, int round, int exit_code, const std::string& summary,
                                   Clock::time_point now) {
  auto it = members_.find(id);
  if (phase_ != Phase::Running || round != round_ || it == members_.end() || !it->second.in_round) return;  // stale
  std::string reason = "node " + std::to_string(it->second.info.node_rank) + ": " + summary;
  if (any_done_) return end(exit_code, reason + " after other nodes had finished");
  if (settings_.permanent_exit_codes && exit_code >= 1 && exit_code <= 127) {
    return end(exit_code, reason + "; exit code " + std::to_string(exit_code) +
                              " is permanent under restartPolicy ExitCode, so no restart");
  }
  new_round(reason, exit_code, kCauseWorkerCrash, now);
}

void RendezvousCoordinator::done(MemberId id, int round, Clock::time_point) {
  auto it = members_.find(id);
  if (phase_ != Phase::Running || round != round_ || it == members_.end() || !it->second.in_round) return;
  it->second.done = true;
  any_done_ = true;
  if (round_finished()) end(0, "job finished");
}

void RendezvousCoordinator::hang(const std::string& reason, Clock::time_point now) {
  if (phase_ != Phase::Running) return;
  if (any_done_) return end(kHangExitCode, "hang: " + reason + " after other nodes had finished");
  new_round("hang: " + reason, kHangExitCode, kCauseHang, now);
}

std::vector<MemberId> RendezvousCoordinator::round_members() const {
  std::vector<MemberId> out;
  for (const auto& [id, m] : members_)
    if (m.in_round && !m.done) out.push_back(id);
  return out;
}

int RendezvousCoordinator::node_rank_of(MemberId id) const {
  auto it = members_.find(id);
  return it == members_.end() ? -1 : it->second.info.node_rank;
}

bool RendezvousCoordinator::round_finished() const {
  return std::all_of(members_.begin(), members_.end(), [](auto& m) { return !m.second.in_round || m.second.done; });
}

void RendezvousCoordinator::new_round(const std::string& reason, int exit_code, const char* cause,
                                      Clock::time_point now, bool charged) {
  last_failure_ = reason;
  last_exit_code_ = exit_code == 0 ? 1 : exit_code;
  if (charged && charged_restarts_ >= settings_.max_restarts) {
    return end(last_exit_code_, "giving up after " + std::to_string(charged_restarts_) +
                                    " restart(s) (--max-restarts=" + std::to_string(settings_.max_restarts) +
                                    "): " + reason);
  }
  if (charged) ++charged_restarts_;
  ++restart_count_;
  ++restarts_by_cause_[cause];
  phase_ = Phase::Gathering;
  below_min_since_ = now;
  last_call_deadline_.reset();
  awaiting_stoppers_ = false;
  for (auto& [id, m] : members_) {
    if (!m.in_round) continue;
    m.in_round = false;
    m.joined = false;  // it JOINs again once its workers have stopped
    send(id, stop_message(round_));
  }
  evaluate(now);
}

void RendezvousCoordinator::evaluate(Clock::time_point now) {
  if (phase_ != Phase::Gathering) return;
  const Gathered g = gathered();
  const int joined = g.usable;
  if (joined >= settings_.max_nodes) return form_round();
  if (joined >= settings_.min_nodes) {
    if (!last_call_deadline_) last_call_deadline_ = now + settings_.last_call;
    // After the last call, nodes still stopping their workers are waited for: their JOIN re-evaluates.
    awaiting_stoppers_ = now >= *last_call_deadline_;
    if (awaiting_stoppers_ && g.regular_joined == g.regular) form_round();
    return;
  }
  if (last_call_deadline_) {  // fell below MIN again: the join timeout counts from now
    last_call_deadline_.reset();
    awaiting_stoppers_ = false;
    below_min_since_ = now;
  }
  if (now >= below_min_since_ + settings_.join_timeout) {
    std::string why = "only " + std::to_string(joined) + " of the minimum " + std::to_string(settings_.min_nodes) +
                      " nodes joined within join_timeout (" + std::to_string(settings_.join_timeout.count() / 1000) +
                      " s)";
    if (!last_failure_.empty()) why += "; last event: " + last_failure_;
    end(last_failure_.empty() ? 1 : last_exit_code_, why);
  }
}

void RendezvousCoordinator::order_by_domain(std::vector<std::pair<int, MemberId>>& order) {
  for (const auto& [slot, id] : order) {
    const Member& m = members_[id];
    if (slot == m.info.node_rank) slot_domains_[slot] = m.info.domain;  // a stand-in keeps the slot's domain
  }
  const auto domain_of = [this](int slot) {
    const auto it = slot_domains_.find(slot);
    return it == slot_domains_.end() ? std::string() : it->second;
  };
  // Node 0 first (it hosts the store), then the nodes of its domain, then the other domains by name; by slot within
  // one domain. Without domains this is the order by slot.
  const std::string first = order.empty() ? std::string() : domain_of(order.front().first);
  const auto key = [&](int slot) { return std::make_tuple(slot != 0, domain_of(slot) != first, domain_of(slot), slot); };
  std::stable_sort(order.begin(), order.end(),
                   [&](const auto& a, const auto& b) { return key(a.first) < key(b.first); });
}

void RendezvousCoordinator::form_round() {
  // (slot, id): node rank 0 becomes group rank 0; a spare standing in takes the lost member's slot.
  std::vector<std::pair<int, MemberId>> order, spares;
  for (auto& [id, m] : members_) {
    m.placed = false;
    if (m.joined) (m.info.spare ? spares : order).emplace_back(m.info.spare ? m.info.node_rank : m.slot, id);
  }
  std::sort(order.begin(), order.end());
  std::sort(spares.begin(), spares.end());
  const auto max_nodes = static_cast<size_t>(settings_.max_nodes);
  if (order.size() > max_nodes) order.resize(max_nodes);
  for (const auto& [node_rank, id] : spares) {
    if (order.size() >= max_nodes || open_slots_.empty()) break;
    Member& m = members_[id];
    if (released_.count(node_rank) != 0) continue;  // its node goes away
    m.info.spare = false;
    m.slot = *open_slots_.begin();
    open_slots_.erase(open_slots_.begin());
    stand_ins_[m.slot] = node_rank;
    order.emplace_back(m.slot, id);
  }
  std::sort(order.begin(), order.end());
  order_by_domain(order);
  ++round_;
  int world = 0;
  for (auto& [rank, id] : order) world += members_[id].info.nproc;
  int offset = 0;
  for (size_t g = 0; g < order.size(); ++g) {
    Member& m = members_[order[g].second];
    Assignment a{round_, restart_count_, static_cast<int>(g), static_cast<int>(order.size()), offset, world, "", 0,
                 m.slot != m.info.node_rank ? m.slot : -1};
    offset += m.info.nproc;
    m.joined = false;
    m.in_round = true;
    m.done = false;
    m.placed = true;
    RendezvousMessage start;
    start.kind = RendezvousMessage::Kind::Round;
    start.assignment = a;
    start.round = round_;
    send(order[g].second, std::move(start));
  }
  round_nodes_ = static_cast<int>(order.size());
  round_world_size_ = world;
  phase_ = Phase::Running;
  any_done_ = false;
  last_call_deadline_.reset();
  awaiting_stoppers_ = false;
}

void RendezvousCoordinator::end(int exit_code, const std::string& reason) {
  phase_ = Phase::Over;
  last_exit_code_ = exit_code;
  last_failure_ = reason;
  for (auto& [id, m] : members_) {
    if (exit_code != 0 || m.in_round) {
      send(id, fail_message(exit_code, reason));
      continue;
    }
    if (m.info.spare) {  // waiting to stand in is what a spare is for: the job finishing is its success too
      send(id, fail_message(0, "this spare was not needed: the job finished"));
      continue;
    }
    // A node that waited outside the finishing group ran nothing of it: it must not look like a success.
    std::string why = round_nodes_ >= settings_.max_nodes
                          ? "the group already had the maximum of " + std::to_string(settings_.max_nodes) + " nodes"
                          : "other nodes had already finished, so the group could not re-form";
    send(id, fail_message(1,
              "this node was not admitted (" + why + ") and the job finished without it"));
  }
}

void RendezvousCoordinator::carry(const std::map<std::string, int>& counts) {
  if (round_ >= 0) return;
  for (const auto& [cause, n] : counts) carried_[cause] = std::max(carried_[cause], n);
}

RendezvousReport RendezvousCoordinator::report() const {
  const char* phase = phase_ == Phase::Gathering ? "gathering" : phase_ == Phase::Running ? "running" : "over";
  // A count stays one the STATUS line can carry (9 digits), whatever members carried.
  constexpr int64_t kMaxCount = 999999999;
  std::map<std::string, int> by_cause = restarts_by_cause_;
  int64_t restarts = restart_count_;
  for (const auto& [cause, n] : carried_) {
    by_cause[cause] = static_cast<int>(std::min<int64_t>(kMaxCount, int64_t{by_cause[cause]} + n));
    restarts += n;
  }
  restarts = std::min(restarts, kMaxCount);
  RendezvousReport r{round_,   static_cast<int>(restarts), by_cause, round_nodes_,
                     round_world_size_, phase,   settings_.run_id, std::nullopt,
                     std::vector<int>(lost_nodes_.begin(), lost_nodes_.end()), carried_, {}, {}};
  for (const auto& [id, m] : members_)
    if (can_stand_in(m) && r.spares.size() < contract::kMaxStatusSpares) r.spares.push_back(m.info.node_rank);
  std::sort(r.spares.begin(), r.spares.end());
  for (const auto& [slot, node_rank] : stand_ins_)
    if (r.stand_ins.size() < contract::kMaxStatusSpares) r.stand_ins[slot] = node_rank;
  return r;
}

contract::ReleaseAnswer RendezvousCoordinator::release(const contract::ReleaseNotice& notice, Clock::time_point now) {
  const int node_rank = notice.node_rank;
  const auto kept = [node_rank](std::string why) { return contract::ReleaseAnswer{node_rank, false, std::move(why)}; };
  if (phase_ == Phase::Over) return kept("the job is over");
  auto it = std::find_if(members_.begin(), members_.end(),
                         [node_rank](const auto& m) { return m.second.info.node_rank == node_rank; });
  if (it == members_.end()) return kept("no launcher of that node rank is connected");
  Member& m = it->second;
  const contract::ReleaseAnswer released{node_rank, true, ""};
  if (released_.count(node_rank) != 0) return released;  // the same notice again
  if (m.info.spare || !m.placed) {  // waits outside the group: it only must never be given a place
    released_.insert(node_rank);
    m.info.spare = true;
    return released;
  }
  if (m.slot == 0) return kept("node rank 0 hosts the rendezvous");
  if (m.done || any_done_) return kept("nodes have finished");
  if (unclaimed_spares() <= 0) return kept("no spare waits ready");
  released_.insert(node_rank);
  m.info.spare = true;
  if (m.slot != node_rank) stand_ins_.erase(m.slot);  // a stand-in gives back the place it held
  open_slots_.insert(m.slot);
  // Reported lost (and kept so while its launcher stays): the operator makes no pod of that node rank again when the
  // pod goes, whether or not the spare holds the place yet.
  if (lost_nodes_.size() < contract::kMaxLostNodes) lost_nodes_.insert(node_rank);
  if (phase_ == Phase::Running && m.in_round) {
    new_round("node " + std::to_string(node_rank) + "'s node is going away (" + contract::to_string(notice.why) +
                  "); a spare takes its place",
              1, kCauseNodeLost, now);
  } else {
    evaluate(now);
  }
  return released;
}

void RendezvousCoordinator::tick(Clock::time_point now) { evaluate(now); }

std::optional<RendezvousCoordinator::Clock::time_point> RendezvousCoordinator::next_deadline() const {
  if (phase_ != Phase::Gathering) return std::nullopt;
  if (last_call_deadline_) return awaiting_stoppers_ ? std::nullopt : last_call_deadline_;
  return below_min_since_ + settings_.join_timeout;
}

std::vector<Outgoing> RendezvousCoordinator::take_outbox() {
  std::vector<Outgoing> out;
  out.swap(outbox_);
  return out;
}

}  // namespace kubedist::launcher
