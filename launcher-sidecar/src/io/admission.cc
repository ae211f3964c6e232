#include "io/admission.h"

#include <algorithm>
#include <unordered_map>

namespace kubedist::launcher {

Admission::Decision Admission::arrive(std::uint32_t source) const {
  if (strangers_ < limits_.strangers) return {};
  // Strangers per source, the newcomer counted with its own: a flood pushes out itself first.
  std::unordered_map<std::uint32_t, size_t> held{{source, 1}};
  for (const auto& [fd, e] : entries_)
    if (!e.member) ++held[e.source];
  size_t most = 0;
  for (const auto& [s, n] : held) most = std::max(most, n);
  // The oldest stranger of a source that holds the most (of anyone when every source holds one).
  std::optional<int> oldest;
  Clock::time_point oldest_since{};
  for (const auto& [fd, e] : entries_) {
    if (e.member || (most > 1 && held[e.source] != most)) continue;
    if (!oldest || e.since < oldest_since) {
      oldest = fd;
      oldest_since = e.since;
    }
  }
  if (!oldest) return {false, std::nullopt};  // no stranger room at all
  return {true, oldest};
}

void Admission::add(int fd, std::uint32_t source, Clock::time_point since) {
  remove(fd);
  entries_[fd] = Entry{source, since, false};
  ++strangers_;
}

bool Admission::promote(int fd) {
  auto it = entries_.find(fd);
  if (it == entries_.end()) return false;
  if (it->second.member) return true;
  if (members() >= limits_.members) return false;
  it->second.member = true;
  --strangers_;
  return true;
}

void Admission::remove(int fd) {
  auto it = entries_.find(fd);
  if (it == entries_.end()) return;
  if (!it->second.member) --strangers_;
  entries_.erase(it);
}

std::vector<int> Admission::stranger_fds() const {
  std::vector<int> fds;
  fds.reserve(strangers_);
  for (const auto& [fd, e] : entries_)
    if (!e.member) fds.push_back(fd);
  return fds;
}

bool Admission::member(int fd) const {
  auto it = entries_.find(fd);
  return it != entries_.end() && it->second.member;
}

}  // namespace kubedist::launcher
