#include "controller/leader_election.h"

#include <algorithm>

#include "common/log.h"
#include "common/time.h"

namespace kubedist::controller {
namespace {

using nlohmann::json;

std::string micro_time() {
  const std::string t = format_rfc3339(now_unix());  // ...Z
  return t.substr(0, t.size() - 1) + ".000000Z";
}

}  // namespace

std::chrono::milliseconds renew_deadline(int lease_seconds) {
  return std::chrono::milliseconds(lease_seconds * 1000L * 2 / 3);
}

std::chrono::seconds write_deadline(int lease_seconds) { return std::chrono::seconds(std::max(1, lease_seconds / 3)); }

std::string LeaderElector::path() const {
  return "/apis/coordination.k8s.io/v1/namespaces/" + o_.ns + "/leases";
}

bool LeaderElector::try_acquire_or_renew() {
  const Clock::TimePoint sent = clock_.now();  // the other replicas' view of the lease starts after this
  if (!take_or_renew()) return false;
  fence_.renewed(sent);
  return true;
}

bool LeaderElector::take_or_renew() {
  auto current = client_.get(path() + "/" + o_.name);
  const std::string now = micro_time();
  if (!current) {
    if (current.error().kind != Error::Kind::kNotFound) {
      log_warn("leader", "cannot read lease " + o_.ns + "/" + o_.name + ": " + current.error().message);
      return false;
    }
    const json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                        {"kind", "Lease"},
                        {"metadata", {{"name", o_.name}, {"namespace", o_.ns}}},
                        {"spec",
                         {{"holderIdentity", o_.identity},
                          {"leaseDurationSeconds", o_.lease_seconds},
                          {"acquireTime", now},
                          {"renewTime", now},
                          {"leaseTransitions", 0}}}};
    return client_.create(path(), lease).ok();
  }
  json lease = *current;
  json spec = lease.value("spec", json::object());
  const std::string holder = spec.value("holderIdentity", "");
  if (holder != o_.identity && !holder.empty()) {
    const std::string record = holder + "|" + spec.value("renewTime", "");
    const auto seen = clock_.now();
    if (record != observed_record_) {
      observed_record_ = record;
      observed_at_ = seen;
      return false;
    }
    const int duration = spec.value("leaseDurationSeconds", o_.lease_seconds);
    if (seen - observed_at_ < std::chrono::seconds(duration)) return false;  // the holder is still alive
    log_info("leader", "lease held by " + holder + " expired; taking over");
  }
  if (holder != o_.identity) {
    spec["acquireTime"] = now;
    spec["leaseTransitions"] = spec.value("leaseTransitions", 0) + (holder.empty() ? 0 : 1);
  }
  spec["holderIdentity"] = o_.identity;
  spec["leaseDurationSeconds"] = o_.lease_seconds;
  spec["renewTime"] = now;
  // The merge patch carries the resourceVersion we read, so two candidates cannot both win.
  const json patch = {{"metadata", {{"resourceVersion", lease["metadata"].value("resourceVersion", "")}}},
                      {"spec", spec}};
  return client_.merge_patch(path() + "/" + o_.name, patch).ok();
}

bool LeaderElector::acquire(std::stop_token stop) {
  log_info("leader", "waiting to lead as " + o_.identity + " (lease " + o_.ns + "/" + o_.name + ")");
  while (!stop.stop_requested()) {
    if (try_acquire_or_renew()) {
      log_info("leader", "leading as " + o_.identity);
      return true;
    }
    clock_.sleep_for(std::chrono::milliseconds(o_.lease_seconds * 1000 / 5), stop);
  }
  return false;
}

bool LeaderElector::hold(std::stop_token stop) {
  while (clock_.sleep_for(std::chrono::milliseconds(o_.lease_seconds * 1000 / 3), stop)) {
    if (!try_acquire_or_renew() && !fence_.holds(clock_.now())) {
      // Stop before the lease can expire for the others: two leaders at once is the one thing to avoid. The
      // fence has already closed for every writer (leading() is false).
      fence_.close();
      log_error("leader", "could not renew the lease within " + std::to_string(fence_.renew_deadline().count()) +
                              " ms; giving up leadership");
      return false;
    }
  }
  return true;
}

void LeaderElector::release() {
  fence_.close();
  auto current = client_.get(path() + "/" + o_.name);
  if (!current || (*current)["spec"].value("holderIdentity", "") != o_.identity) return;
  const json patch = {{"metadata", {{"resourceVersion", (*current)["metadata"].value("resourceVersion", "")}}},
                      {"spec", {{"holderIdentity", nullptr}, {"leaseDurationSeconds", 1}}}};
  client_.merge_patch(path() + "/" + o_.name, patch);
}

}  // namespace kubedist::controller
