// WatchStream: list+watch of one kind from the API server: paged lists, watches resumed from the last
// resourceVersion, a relist on 410 Gone, and backoff while the API server is away. It keeps no objects: it hands
// them to a Sink (an informer's store).
#pragma once

#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/backoff.h"
#include "common/clock.h"
#include "common/watchdog.h"
#include "kube/client.h"
#include "kube/watch_event.h"

namespace kubedist::kube {

inline constexpr int kListPageSize = 20;

struct WatchOptions {
  std::string list_path;        // e.g. /api/v1/pods or /apis/kubedist.io/v1alpha1/namespaces/ns/trainingjobs
  std::string label_selector;   // "" = all
  std::string field_selector = "";  // "" = all; "metadata.name=N" lets RBAC grant list/watch of that name only
  int watch_timeout_s = 300;    // the server closes each watch after this; we resume from the last version
  // Objects a list page asks for: small, so that a page of tenants' large objects (a pod may hold megabytes of
  // environment) stays small in the operator's memory; each page is read item by item (kube/list_page.h).
  int page_size = kListPageSize;
};

class WatchStream {
 public:
  // Reads one watch line and applies it (Sink::line).
  using LineHandler = std::function<std::optional<std::pair<WatchEvent, AfterEvent>>(const std::string& line)>;
  struct Sink {
    std::function<void(const nlohmann::json& item)> listed;  // each object of a relist, page by page
    std::function<void(bool complete)> list_ended;           // complete: every page was read; else forget them
    std::function<AfterEvent(const WatchEvent&)> event;      // one watch event
    // When set, instead of `event`: reads one watch line itself, without the JSON tree, and applies it; returns the
    // event without its object and what to do next, nullopt when the line is not JSON (the watch is reopened).
    LineHandler line;
    // When set, instead of `listed`: reads each object of a relist from its text itself, without the JSON tree.
    std::function<void(std::string_view item)> listed_text;
  };

  // Reconnect delays: 200 ms doubling to 5 s, reset by a stream that brought events.
  static constexpr BackoffPolicy kBackoff{std::chrono::milliseconds(200), std::chrono::milliseconds(5000)};
  // The longest one list page may take: the client's tries (30 s each), its waits between them (Retry-After).
  static constexpr std::chrono::minutes kListPageBound{10};
  // How long a watch may stay silent beyond its timeoutSeconds: the client's timeout for a dead connection.
  static constexpr std::chrono::seconds kWatchSilenceBound{120};

  WatchStream(Client& client, WatchOptions options, const Clock& clock = steady_clock())
      : client_(client), options_(std::move(options)), clock_(clock) {}

  // Lists, then watches, until stop is requested. Watch streams are only interrupted by the server or by
  // Client::cancel_watches(). No exception ends it.
  void run(std::stop_token stop, const Sink& sink);
  const std::string& path() const { return options_.list_path; }
  // How late the stream's loop is at now, if it is stuck in one step (a list page, a watch, a wait) longer than
  // that step may take; nullopt while it keeps going, and once run() has returned.
  std::optional<std::chrono::milliseconds> overdue(Clock::TimePoint now) const { return watchdog_.overdue(now); }

 private:
  void run_once(std::stop_token stop, const Sink& sink);
  bool relist(std::stop_token stop, const Sink& sink);
  // Waits the backoff's next delay, telling the watchdog; false when stop was requested.
  bool wait(Backoff& backoff, std::stop_token stop);
  std::string with_query(bool watch) const;

  Client& client_;
  const WatchOptions options_;
  const Clock& clock_;
  std::string resource_version_;
  Watchdog watchdog_;
};

}  // namespace kubedist::kube
