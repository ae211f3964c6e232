#include "kube/watch_stream.h"

#include "common/log.h"
#include "kube/client.h"
#include "kube/list_page.h"

namespace kubedist::kube {
std::string WatchStream::with_query(bool watch) const {
  std::string p = options_.list_path + "?";
  if (!options_.label_selector.empty()) p += "labelSelector=" + query_escape(options_.label_selector) + "&";
  if (!options_.field_selector.empty()) p += "fieldSelector=" + query_escape(options_.field_selector) + "&";
  if (watch) {
    p += "watch=1&allowWatchBookmarks=true&timeoutSeconds=" + std::to_string(options_.watch_timeout_s) +
         "&resourceVersion=" + resource_version_;
  } else {
    p += "limit=" + std::to_string(options_.page_size);
  }
  return p;
}

bool WatchStream::relist(std::stop_token stop, const Sink& sink) {
  std::string cont;
  std::string rv;
  // Each item of a page, as text: read by the sink's own reader, else parsed alone (one item's tree at a time).
  const auto item = [&](std::string_view text) {
    if (sink.listed_text) {
      sink.listed_text(text);
      return;
    }
    const nlohmann::json object = nlohmann::json::parse(text, nullptr, false);
    if (!object.is_discarded()) sink.listed(object);
  };
  do {
    watchdog_.expect_within(kListPageBound, clock_.now());
    std::string path = with_query(false);
    if (!cont.empty()) path += "&continue=" + query_escape(cont);
    auto r = client_.get_text(path);
    if (!r) {
      log_warn("informer", "list " + options_.list_path + " failed: " + r.error().message);
      sink.list_ended(false);
      return false;
    }
    ListPage page;
    const bool read = read_list_page(*r, page, item);
    r = std::string();  // the page's text is let go before the next one comes
    if (!read) {
      log_warn("informer", "list " + options_.list_path + ": the API server's answer is not a list");
      sink.list_ended(false);
      return false;
    }
    cont = std::move(page.continue_token);
    rv = std::move(page.resource_version);
  } while (!cont.empty() && !stop.stop_requested());
  if (!cont.empty()) {  // stopped between pages
    sink.list_ended(false);
    return false;
  }
  resource_version_ = rv;
  sink.list_ended(true);
  return true;
}

void WatchStream::run(std::stop_token stop, const Sink& sink) {
  while (!stop.stop_requested()) {
    try {
      run_once(stop, sink);
    } catch (const std::exception& e) {  // no exception may end the stream: relist after a pause
      log_error("informer", options_.list_path + ": " + e.what());
      watchdog_.expect_within(std::chrono::seconds(1), clock_.now());
      clock_.sleep_for(std::chrono::seconds(1), stop);
    }
  }
  watchdog_.idle();
}

bool WatchStream::wait(Backoff& backoff, std::stop_token stop) {
  const std::chrono::milliseconds d = backoff.next();
  watchdog_.expect_within(d, clock_.now());
  return clock_.sleep_for(d, stop);
}

void WatchStream::run_once(std::stop_token stop, const Sink& sink) {
  Backoff backoff(kBackoff, clock_);
  bool need_relist = true;
  while (!stop.stop_requested()) {
    if (need_relist) {
      if (!relist(stop, sink)) {
        wait(backoff, stop);
        continue;
      }
      need_relist = false;
    }
    AfterEvent after = AfterEvent::kContinue;
    bool saw_event = false;
    const auto started = clock_.now();
    const auto watch_bound = std::chrono::seconds(options_.watch_timeout_s) + kWatchSilenceBound;
    watchdog_.expect_within(watch_bound, started);
    // After one event: log a watch error, remember how far the stream got, and say whether to read on.
    auto done = [&](const WatchEvent& event, AfterEvent next) {
      if (event.type == WatchEvent::Type::kError) {
        log_info("informer", options_.list_path + ": watch error " + std::to_string(event.error_code) + ", " +
                                 event.error_message);
      }
      after = next;
      if (event.type != WatchEvent::Type::kError && event.type != WatchEvent::Type::kIgnored) {
        resource_version_ = event.resource_version;
      }
      return after == AfterEvent::kContinue;
    };
    auto seen = [&] {
      saw_event = true;
      watchdog_.expect_within(watch_bound, clock_.now());
      return !stop.stop_requested();
    };
    Result<void> r;
    if (sink.line) {
      std::optional<Error> malformed;
      r = client_.watch_lines(with_query(true), [&](const std::string& line) {
        if (line.empty()) return true;
        if (!seen()) return false;
        auto read = sink.line(line);
        if (!read) {
          malformed = Error{Error::Kind::kRetryable, "malformed watch event", 0};
          return false;
        }
        return done(read->first, read->second);
      });
      if (malformed) r = *malformed;
    } else {
      r = client_.watch(with_query(true), [&](nlohmann::json& raw) {
        if (!seen()) return false;
        const WatchEvent event = WatchEvent::parse(std::move(raw));  // a copy would cost as much as the parse
        return done(event, sink.event(event));
      });
    }
    if (stop.stop_requested()) break;
    if (after == AfterEvent::kRelist) {
      need_relist = true;
      continue;
    }
    if (!r) {
      if (r.error().kind == Error::Kind::kGone) {
        need_relist = true;
        continue;
      }
      // Servers end watches at timeoutSeconds in ways the client may report as a broken stream; only early drops matter.
      const bool early = clock_.now() - started < std::chrono::seconds(options_.watch_timeout_s / 2);
      log(early ? LogLevel::kWarn : LogLevel::kDebug, "informer",
          "watch " + options_.list_path + " dropped: " + r.error().message);
      wait(backoff, stop);
      continue;
    }
    if (saw_event) {
      backoff.reset();
    } else if (clock_.now() - started < std::chrono::seconds(1)) {
      wait(backoff, stop);  // a server that closes watches at once must not spin us
    }
  }
}

}  // namespace kubedist::kube
