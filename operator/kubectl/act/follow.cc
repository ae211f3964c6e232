#include "kubectl/act/follow.h"

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <thread>
#include <vector>

#include "kube/client.h"
#include "kubectl/act/report.h"
#include "kubectl/render/job.h"

namespace kubedist::kubectl {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// A training may print nothing for a long while; the stream ends with its container, or when the follow stops.
constexpr std::chrono::seconds kQuietTraining{24 * 3600};

int node_of(const json& pod) {
  const json labels = pod["metadata"].value("labels", json::object());
  return std::atoi(labels.value("kubedist.io/node-rank", "0").c_str());
}

// Whether the container has started (running or ended), so that its log can be read.
bool started(const json& pod, const char* statuses, const std::string& container) {
  for (const auto& cs : pod["status"].value(statuses, json::array())) {
    if (cs.value("name", "") != container) continue;
    const json state = cs.value("state", json::object());
    return state.contains("running") || state.contains("terminated");
  }
  return false;
}

Result<std::vector<json>> list_pods(Cluster& cluster, const std::string& job) {
  auto r = cluster.client->get(cluster.pods_path("labelSelector=" + kube::query_escape("kubedist.io/job-name=" + job)));
  if (!r) return explain(cluster, r.error(), "listing the pods of " + job);
  std::vector<json> pods;
  for (const auto& p : (*r)["items"]) pods.push_back(p);
  return pods;
}

std::string log_path(const Cluster& cluster, const std::string& pod, const std::string& container, bool follow) {
  return "/api/v1/namespaces/" + cluster.ns + "/pods/" + pod + "/log?container=" + container +
         (follow ? "&follow=true" : "");
}

// One thread per container log; a stream that fails before its first line (a container not ready yet) is
// dropped so that the next poll opens it again.
class LogStreams {
 public:
  LogStreams(Cluster& cluster, std::ostream& out, std::mutex& out_mu) : cluster_(cluster), out_(out), out_mu_(out_mu) {}
  ~LogStreams() { stop(); }

  void ensure(const json& pod, const std::string& container, bool setup) {
    const std::string key = pod["metadata"].value("uid", "") + "/" + container;
    auto it = streams_.find(key);
    if (it != streams_.end()) {
      if (!it->second->failed) return;
      if (it->second->thread.joinable()) it->second->thread.join();
      streams_.erase(it);
    }
    auto s = std::make_unique<Stream>();
    Stream* raw = s.get();
    const std::string path = log_path(cluster_, pod["metadata"].value("name", ""), container, true);
    const int node = node_of(pod);
    raw->thread = std::thread([this, raw, path, node, setup] {
      bool any = false;
      auto r = cluster_.client->stream_lines(path, [&](const std::string& line) {
        any = true;
        std::lock_guard<std::mutex> lock(out_mu_);
        out_ << log_line(node, setup, line) << "\n" << std::flush;
        return true;
      }, kQuietTraining);
      raw->failed = !r.ok() && !any;
      raw->done = true;
    });
    streams_[key] = std::move(s);
  }

  bool all_done() const {
    for (const auto& [k, s] : streams_)
      if (!s->done) return false;
    return true;
  }

  void stop() {
    if (!all_done()) cluster_.client->cancel_watches();
    for (auto& [k, s] : streams_)
      if (s->thread.joinable()) s->thread.join();
  }

 private:
  struct Stream {
    std::thread thread;
    std::atomic<bool> done{false};
    std::atomic<bool> failed{false};
  };
  Cluster& cluster_;
  std::ostream& out_;
  std::mutex& out_mu_;
  std::map<std::string, std::unique_ptr<Stream>> streams_;
};

bool finished(const json& job) {
  const std::string phase = job.value("status", json::object()).value("phase", "");
  return phase == "Succeeded" || phase == "Failed";
}

void sleep_unless(const std::atomic<bool>& interrupted, std::chrono::milliseconds total) {
  const auto until = Clock::now() + total;
  while (!interrupted && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

}  // namespace

Result<FollowResult> follow_job(Cluster& cluster, const std::string& name, const FollowOptions& options,
                                const std::atomic<bool>& interrupted, std::ostream& out) {
  std::mutex out_mu;
  LogStreams streams(cluster, out, out_mu);
  FollowResult result;
  std::string last_phase, last_restarts, last_progress;
  std::optional<Clock::time_point> ended_at;
  while (true) {
    auto job = get_job(cluster, name);
    if (!job) return job.error();
    result.job = *job;
    const json st = job->value("status", json::object());
    result.max_world_size = std::max(result.max_world_size, st.value("worldSize", 0));
    if (options.report_status) {
      std::lock_guard<std::mutex> lock(out_mu);
      const std::string phase = st.value("phase", "Pending");
      if (phase != last_phase && !(phase == "Succeeded" || phase == "Failed")) {
        out << "[tj/" << name << "] " << phase << ": " << st.value("readyReplicas", 0) << "/"
            << (*job)["spec"].value("replicas", 0) << " nodes running, world size " << st.value("worldSize", 0)
            << "\n";
      }
      last_phase = phase;
      if (auto r = restarts_text(st); r != last_restarts && !last_restarts.empty()) {
        out << "[tj/" << name << "] restarts: " << r << "\n";
        last_restarts = r;
      } else if (last_restarts.empty()) {
        last_restarts = r;
      }
      // A line each time the operator writes new progress (at most every 30 s), not each time the eta moves.
      if (const auto p = st.find("progress"); p != st.end() && p->is_object() && p->dump() != last_progress) {
        last_progress = p->dump();
        if (auto text = progress_text(st, now_unix()); !text.empty()) out << "[tj/" << name << "] progress: " << text << "\n";
      }
      out << std::flush;
    }
    auto pods = list_pods(cluster, name);
    if (!pods) return pods.error();
    for (const auto& pod : *pods) {
      if (options.node && node_of(pod) != *options.node) continue;
      if (started(pod, "initContainerStatuses", kSetupContainer)) streams.ensure(pod, kSetupContainer, true);
      if (started(pod, "containerStatuses", "trainer")) streams.ensure(pod, "trainer", false);
    }
    if (finished(*job)) {
      // The containers have ended, so their streams end too; a pod deleted on the way may leave one hanging.
      if (!ended_at) ended_at = Clock::now();
      if (streams.all_done() || Clock::now() - *ended_at > std::chrono::seconds(15)) break;
    }
    if (interrupted) {
      result.interrupted = true;
      break;
    }
    sleep_unless(interrupted, std::chrono::milliseconds(ended_at ? 300 : 1000));
  }
  streams.stop();
  return result;
}

Result<void> print_logs(Cluster& cluster, const std::string& name, std::optional<int> node, std::ostream& out) {
  auto job = get_job(cluster, name);
  if (!job) return job.error();
  auto pods = list_pods(cluster, name);
  if (!pods) return pods.error();
  std::sort(pods->begin(), pods->end(), [](const json& a, const json& b) { return node_of(a) < node_of(b); });
  bool any = false;
  for (const auto& pod : *pods) {
    if (node && node_of(pod) != *node) continue;
    const std::string pod_name = pod["metadata"].value("name", "");
    for (auto [container, setup] : {std::pair<std::string, bool>{kSetupContainer, true}, {"trainer", false}}) {
      if (!started(pod, setup ? "initContainerStatuses" : "containerStatuses", container)) continue;
      any = true;
      auto r = cluster.client->stream_lines(log_path(cluster, pod_name, container, false), [&](const std::string& l) {
        out << log_line(node_of(pod), setup, l) << "\n";
        return true;
      });
      if (!r) return explain(cluster, r.error(), "reading the log of " + pod_name);
    }
  }
  if (!any) {
    out << "tj/" << name << ": no pod has started yet" << (node ? " on node " + std::to_string(*node) : "") << "\n";
  }
  return {};
}

}  // namespace kubedist::kubectl
