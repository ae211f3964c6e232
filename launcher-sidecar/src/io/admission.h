// Admission: which connections a listener holds when strangers flood it (pure; the listener's owner does the I/O).
//
// A connection starts as a stranger (it has said nothing that proves it belongs: a joiner before its JOIN, a STATUS
// asker, a /metrics scrape, a flood) and may become a member (a node of the job). Members and strangers have caps of
// their own, so strangers never take the room kept for members. When the strangers' room is full, a newcomer
// pushes out the oldest stranger of the source address that holds the most strangers: a flood from one address
// (or a few) pushes out itself, and a joiner from another address, which holds one connection, stays until it
// speaks.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace kubedist::launcher {

class Admission {
 public:
  using Clock = std::chrono::steady_clock;
  struct Limits {
    size_t strangers = 64;  // connections that are not (yet) members
    size_t members = 64;    // the reserve: members never compete with strangers for room
  };
  // What to do with a newcomer: admit it, after closing `evict` when that is set.
  struct Decision {
    bool admit = true;
    std::optional<int> evict;
  };

  explicit Admission(Limits limits) : limits_(limits) {}
  Decision arrive(std::uint32_t source) const;
  void add(int fd, std::uint32_t source, Clock::time_point since);
  // The stranger proved to be a member; false when the members' room is full (it stays a stranger).
  bool promote(int fd);
  void remove(int fd);
  bool member(int fd) const;
  std::vector<int> stranger_fds() const;
  size_t strangers() const { return strangers_; }
  size_t members() const { return entries_.size() - strangers_; }
  const Limits& limits() const { return limits_; }

 private:
  struct Entry {
    std::uint32_t source;
    Clock::time_point since;
    bool member = false;
  };
  Limits limits_;
  std::map<int, Entry> entries_;  // by fd
  size_t strangers_ = 0;
};

}  // namespace kubedist::launcher
