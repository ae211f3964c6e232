// A small Kubernetes REST client: JSON requests with typed errors and retries, and watch streams.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "kube/api.h"
#include "kube/config.h"

namespace kubedist::kube {

// Maps an HTTP status (and the Status object's reason) to an Error kind: 404 NotFound, 409 Conflict or
// AlreadyExists, 410 Gone, 422 Unprocessable, 429/5xx Retryable, 401/403 Forbidden.
Error error_from_response(int http_status, const nlohmann::json& body);

struct RetryPolicy {
  int attempts = 5;                                  // total tries for Retryable errors
  std::chrono::milliseconds initial{100};            // doubles each try
  std::chrono::milliseconds max{3000};
  std::chrono::milliseconds max_retry_after{60000};  // the most of a server's Retry-After that is waited
  std::chrono::seconds timeout{30};                  // per try of a read (GET, LIST): the HTTP client's deadline
  std::chrono::seconds write_timeout{30};            // per try of a write (POST, PATCH, DELETE)
};

// How long to wait before retry `attempt` (1: the first retry) of a retryable request: the server's Retry-After when
// it sent one (at most retry.max_retry_after), else the policy's backoff (initial doubling up to max); then up to
// half of that again, by jitter in [0, 1), so that clients the server turned away together do not return together.
std::chrono::milliseconds retry_delay(int attempt, std::optional<std::chrono::milliseconds> retry_after,
                                      const RetryPolicy& retry, double jitter);

// The delay a Retry-After header asks for: whole seconds (what the API server sends); nullopt for anything else
// (an HTTP date, garbage, a negative number).
std::optional<std::chrono::milliseconds> parse_retry_after(const std::string& value);

// The Kubernetes verb of a request (get, list, watch, create, update, patch, delete) from its HTTP method and
// API path, for the kubedist_api_requests_total metric.
std::string request_verb(const std::string& method, const std::string& path);

// A query parameter's value, percent-encoded (everything but letters, digits and -._~), as a URL needs it.
std::string query_escape(const std::string& value);

// Asked before each try of a write (not reads, not watches), with the request's path: a reason refuses the write
// unsent (an error of kind kOther, "not sent: <reason>"); nullopt lets it go.
using WriteGate = std::function<std::optional<std::string>(const std::string& path)>;

// Told of every request's verb and HTTP status once it has an answer (status 0: no answer, e.g. unreachable).
using RequestObserver = std::function<void(const std::string& verb, int http_status)>;

// Counts of requests issued, for tests and benchmarks.
struct RequestCounts {
  std::atomic<uint64_t> reads{0};
  std::atomic<uint64_t> writes{0};
  std::atomic<uint64_t> watches{0};
};

class Client final : public Api {
 public:
  static Result<std::unique_ptr<Client>> create(const Config& config, RetryPolicy retry = {});
  // Sizes the shared I/O thread pool; call once, before the first client is created.
  static void set_io_threads(size_t n);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // path: an API path with query, e.g. "/api/v1/namespaces/ns/pods?labelSelector=a".
  Result<nlohmann::json> get(const std::string& path) override;
  // The same, the answer's body as text (for a reader of its own: kube/list_page.h); errors as get's.
  Result<std::string> get_text(const std::string& path);
  Result<nlohmann::json> create(const std::string& path, const nlohmann::json& body) override;
  // The server's copy of the object is not parsed (only a refusal's Status is).
  Result<void> create_unparsed(const std::string& path, const nlohmann::json& body) override;
  // JSON merge patch. With metadata.resourceVersion in the patch the server refuses stale writes (Conflict).
  Result<nlohmann::json> merge_patch(const std::string& path, const nlohmann::json& patch) override;
  // DELETE with optional DeleteOptions (preconditions, propagationPolicy). NotFound is an error for the caller.
  Result<void> remove(const std::string& path, const nlohmann::json& options = nullptr) override;

  // Opens a watch (path must contain watch=1) and calls on_event for each event object until the server
  // ends the stream, an error occurs, on_event returns false, or cancel() is called. on_event may move the event.
  Result<void> watch(const std::string& path, const std::function<bool(nlohmann::json&)>& on_event);
  // The same, handing on each event's line as it came (for a reader of its own); empty lines too.
  Result<void> watch_lines(const std::string& path, const std::function<bool(const std::string&)>& on_line);
  // Streams a text resource line by line (a pod's log, with follow=true while the container runs) until the server
  // ends it, on_line returns false, or cancel_watches() is called. Lines come without their newline (and a "\r"
  // before it); empty lines too. A line longer than LineSplitter::kDefaultMaxLine (16 MiB) ends the stream with an
  // error. idle: how long the stream may be silent before it counts as broken (a training may print nothing for a
  // long while).
  Result<void> stream_lines(const std::string& path, const std::function<bool(const std::string&)>& on_line,
                            std::chrono::seconds idle = std::chrono::seconds(120));
  // Ends every watch and stream in progress (used on shutdown).
  void cancel_watches();

  // Set once, before the first request (it is not synchronised with requests in flight).
  void set_user_agent(const std::string& user_agent);
  void set_request_observer(RequestObserver observer);
  // Set while no request is in flight (before the first, or after the last); null removes it.
  void set_write_gate(WriteGate gate);
  const RequestCounts& counts() const;
  const std::string& default_namespace() const;

 private:
  struct Impl;
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kubedist::kube
