#include "kube/client.h"

#include <sys/stat.h>

#include <algorithm>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include <boost/asio/ssl.hpp>
#include <cpprest/containerstream.h>
#include <cpprest/http_client.h>
#include <pplx/threadpool.h>

#include "common/backoff.h"
#include "kube/line_splitter.h"
#include "kube/trusted_ca.h"

namespace kubedist::kube {
namespace {

using nlohmann::json;
namespace http = web::http;

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

// Makes a TLS context trust the cluster's CA alone and present the client certificate; throws
// boost::system::system_error on bad PEM. Called for every new connection, so a rotated CA file is taken at once.
void configure_tls(boost::asio::ssl::context& ctx, const Config& cfg, TrustedCa& ca) {
  ca.apply(ctx);
  if (!cfg.client_cert_pem.empty()) {
    ctx.use_certificate_chain(boost::asio::buffer(cfg.client_cert_pem.data(), cfg.client_cert_pem.size()));
    ctx.use_private_key(boost::asio::buffer(cfg.client_key_pem.data(), cfg.client_key_pem.size()),
                        boost::asio::ssl::context::pem);
  }
}

// How much of a streamed body is taken at a time, at most (what has arrived, up to this).
constexpr size_t kReadChunk = 64 * 1024;

// Jitter for retry_delay: uniform in [0, 1), from a generator of the calling thread's own.
double jitter() {
  thread_local std::minstd_rand gen(std::random_device{}());
  return std::uniform_real_distribution<double>(0.0, 1.0)(gen);
}

}  // namespace

std::chrono::milliseconds retry_delay(int attempt, std::optional<std::chrono::milliseconds> retry_after,
                                      const RetryPolicy& retry, double jitter) {
  const BackoffPolicy backoff{retry.initial, retry.max};
  const std::chrono::milliseconds base =
      retry_after ? std::min(*retry_after, retry.max_retry_after) : backoff.delay(attempt - 1);
  const double j = std::clamp(jitter, 0.0, 1.0);
  return base + std::chrono::milliseconds(static_cast<int64_t>(static_cast<double>(base.count()) * j / 2));
}

std::optional<std::chrono::milliseconds> parse_retry_after(const std::string& value) {
  if (value.empty() || value.size() > 9 || value.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  return std::chrono::seconds(std::stol(value));
}

Error error_from_response(int code, const json& body) {
  std::string message = body.is_object() ? body.value("message", "") : "";
  const std::string reason = body.is_object() ? body.value("reason", "") : "";
  if (message.empty()) message = "HTTP " + std::to_string(code);
  Error::Kind kind = Error::Kind::kOther;
  if (code == 404) kind = Error::Kind::kNotFound;
  else if (code == 409) kind = reason == "AlreadyExists" ? Error::Kind::kAlreadyExists : Error::Kind::kConflict;
  else if (code == 410) kind = Error::Kind::kGone;
  else if (code == 422) kind = Error::Kind::kUnprocessable;
  else if (code == 429 || code >= 500) kind = Error::Kind::kRetryable;
  else if (code == 401 || code == 403) kind = Error::Kind::kForbidden;
  return {kind, message, code};
}

std::string query_escape(const std::string& value) { return web::uri::encode_data_string(value); }

std::string request_verb(const std::string& method, const std::string& path) {
  if (method == "POST") return "create";
  if (method == "PUT") return "update";
  if (method == "PATCH") return "patch";
  if (method == "DELETE") return "delete";
  if (method != "GET") return "other";
  const auto q = path.find('?');
  if (q != std::string::npos) {
    const std::string query = "&" + path.substr(q + 1) + "&";
    if (query.find("&watch=1&") != std::string::npos || query.find("&watch=true&") != std::string::npos) {
      return "watch";
    }
  }
  // /api/v1/... or /apis/GROUP/VERSION/..., then optionally namespaces/NS/, then RESOURCE[/NAME[/SUB]].
  std::vector<std::string> segs;
  std::string seg;
  for (char c : path.substr(0, q)) {
    if (c != '/') {
      seg += c;
    } else if (!seg.empty()) {
      segs.push_back(std::move(seg));
      seg.clear();
    }
  }
  if (!seg.empty()) segs.push_back(std::move(seg));
  size_t i = !segs.empty() && segs[0] == "apis" ? 3 : 2;
  if (segs.size() > i + 2 && segs[i] == "namespaces") i += 2;
  return segs.size() == i + 1 ? "list" : "get";
}

struct Client::Impl {
  Config cfg;
  std::shared_ptr<TrustedCa> ca;  // shared with the TLS callbacks of the clients made from it
  RetryPolicy retry;
  RequestCounts counts;
  RequestObserver observer;

  void observe(const http::method& method, const std::string& path, int code) {
    if (observer) observer(request_verb(method, path), code);
  }
  std::unique_ptr<http::client::http_client> http;         // reads
  std::unique_ptr<http::client::http_client> http_writes;  // writes, with their own deadline
  WriteGate write_gate;

  std::mutex token_mu;
  std::string token;
  struct timespec token_mtime {};

  std::mutex cts_mu;
  pplx::cancellation_token_source watch_cts;

  http::client::http_client_config client_config(std::chrono::seconds timeout) const {
    http::client::http_client_config cc;
    cc.set_timeout(timeout);
    cc.set_validate_certificates(!cfg.insecure_skip_verify);
    Config tls = cfg;
    std::shared_ptr<TrustedCa> trusted = ca;
    cc.set_ssl_context_callback([tls, trusted](boost::asio::ssl::context& ctx) { configure_tls(ctx, tls, *trusted); });
    return cc;
  }

  // The bearer token; a token file is re-read when it changes, because service account tokens rotate.
  std::string bearer() {
    std::lock_guard<std::mutex> lock(token_mu);
    if (!cfg.token_file.empty()) {
      struct stat st {};
      if (::stat(cfg.token_file.c_str(), &st) == 0 &&
          (st.st_mtim.tv_sec != token_mtime.tv_sec || st.st_mtim.tv_nsec != token_mtime.tv_nsec)) {
        if (auto t = read_file(cfg.token_file)) {
          token = trim(*t);
          token_mtime = st.st_mtim;
        }
      }
    }
    return token;
  }

  std::string user_agent = "kubedist-operator/0.1";

  http::http_request make_request(const http::method& method, const std::string& path,
                                  const std::string& accept = "application/json") {
    http::http_request req(method);
    req.set_request_uri(web::uri(path));
    req.headers().add("Accept", accept);
    req.headers().add("User-Agent", user_agent);
    if (std::string t = bearer(); !t.empty()) req.headers().add("Authorization", "Bearer " + t);
    return req;
  }

  Result<json> send_once(const http::method& method, const std::string& path, const json* body,
                         const std::string& content_type, std::optional<std::chrono::milliseconds>* retry_after) {
    try {
      auto req = make_request(method, path);
      if (body != nullptr) req.set_body(body->dump(), content_type);
      http::http_response resp = (method == http::methods::GET ? *http : *http_writes).request(req).get();
      const std::string text = resp.extract_utf8string(true).get();
      const int code = resp.status_code();
      observe(method, path, code);
      json parsed = text.empty() ? json(nullptr) : json::parse(text, nullptr, false);
      if (code >= 200 && code < 300) {
        if (parsed.is_discarded()) return Error{Error::Kind::kOther, "invalid JSON from the API server", code};
        return parsed;
      }
      if (auto it = resp.headers().find("Retry-After"); it != resp.headers().end()) {
        *retry_after = parse_retry_after(it->second);
      }
      return error_from_response(code, parsed.is_discarded() ? json(nullptr) : parsed);
    } catch (const std::exception& e) {
      observe(method, path, 0);
      return Error{Error::Kind::kRetryable, std::string("API server unreachable: ") + e.what(), 0};
    }
  }

  Result<json> send(const http::method& method, const std::string& path, const json* body = nullptr,
                    const std::string& content_type = "application/json") {
    const bool write = method != http::methods::GET;
    (write ? counts.writes : counts.reads)++;
    for (int attempt = 1;; ++attempt) {
      if (write && write_gate) {
        if (auto why = write_gate(path)) return Error{Error::Kind::kOther, "not sent: " + *why, 0};
      }
      std::optional<std::chrono::milliseconds> retry_after;
      auto r = send_once(method, path, body, content_type, &retry_after);
      if (r.ok() || r.error().kind != Error::Kind::kRetryable || attempt >= retry.attempts) return r;
      std::this_thread::sleep_for(retry_delay(attempt, retry_after, retry, jitter()));
    }
  }
};

void Client::set_io_threads(size_t n) {
  try {
    crossplat::threadpool::initialize_with_threads(n);
  } catch (const std::exception&) {  // already initialized: keep it
  }
}

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;

Result<std::unique_ptr<Client>> Client::create(const Config& config, RetryPolicy retry) {
  if (config.server.rfind("https://", 0) != 0 && config.server.rfind("http://", 0) != 0) {
    return Error::invalid("API server address \"" + config.server + "\" must start with https:// or http://");
  }
  auto ca = std::make_shared<TrustedCa>(config.ca_pem, config.ca_file);
  try {  // refuse bad certificates now, with a clear message, rather than on every request
    boost::asio::ssl::context probe(boost::asio::ssl::context::tls_client);
    configure_tls(probe, config, *ca);
  } catch (const std::exception& e) {
    return Error::invalid(std::string("TLS credentials in the kube config are unusable: ") + e.what());
  }
  auto impl = std::make_unique<Impl>();
  impl->cfg = config;
  impl->ca = std::move(ca);
  impl->retry = retry;
  impl->token = trim(config.token);
  try {
    impl->http = std::make_unique<http::client::http_client>(web::uri(config.server), impl->client_config(retry.timeout));
    impl->http_writes =
        std::make_unique<http::client::http_client>(web::uri(config.server), impl->client_config(retry.write_timeout));
  } catch (const std::exception& e) {
    return Error::invalid("bad API server address \"" + config.server + "\": " + e.what());
  }
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

Result<json> Client::get(const std::string& path) { return impl_->send(http::methods::GET, path); }

Result<json> Client::create(const std::string& path, const json& body) {
  return impl_->send(http::methods::POST, path, &body);
}

Result<json> Client::merge_patch(const std::string& path, const json& patch) {
  return impl_->send(http::methods::PATCH, path, &patch, "application/merge-patch+json");
}

Result<void> Client::remove(const std::string& path, const json& options) {
  auto r = options.is_null() ? impl_->send(http::methods::DEL, path) : impl_->send(http::methods::DEL, path, &options);
  if (!r) return r.error();
  return {};
}

Result<void> Client::watch_lines(const std::string& path, const std::function<bool(const std::string&)>& on_line) {
  impl_->counts.watches++;
  return stream_lines(path, on_line);
}

Result<void> Client::watch(const std::string& path, const std::function<bool(json&)>& on_event) {
  std::optional<Error> malformed;
  auto r = watch_lines(path, [&](const std::string& line) {
    if (line.empty()) return true;
    json event = json::parse(line, nullptr, false);
    if (event.is_discarded()) {
      malformed = Error{Error::Kind::kRetryable, "malformed watch event", 0};
      return false;
    }
    return on_event(event);
  });
  if (malformed) return *malformed;
  return r;
}

Result<void> Client::stream_lines(const std::string& path, const std::function<bool(const std::string&)>& on_line,
                                  std::chrono::seconds idle) {
  pplx::cancellation_token token = pplx::cancellation_token::none();
  {
    std::lock_guard<std::mutex> lock(impl_->cts_mu);
    token = impl_->watch_cts.get_token();
  }
  if (token.is_canceled()) return Error{Error::Kind::kOther, "watch cancelled", 0};
  try {
    // The server ends each watch after timeoutSeconds; this client timeout only catches a dead connection.
    http::client::http_client client(web::uri(impl_->cfg.server), impl_->client_config(idle));
    auto req = impl_->make_request(http::methods::GET, path, "application/json, */*");
    http::http_response resp = client.request(req, token).get();
    impl_->observe(http::methods::GET, path, resp.status_code());
    if (resp.status_code() != 200) {
      const std::string text = resp.extract_utf8string(true).get();
      json parsed = json::parse(text, nullptr, false);
      return error_from_response(resp.status_code(), parsed.is_discarded() ? json(nullptr) : parsed);
    }
    // The body is read as it arrives, in whatever it holds (a watch sends one event at a time), and cut into lines
    // here: cpprest's read_line takes the body a byte at a time through its task machinery.
    auto body = resp.body().streambuf();
    using traits = concurrency::streams::streambuf<uint8_t>::traits;
    LineSplitter lines;
    std::string chunk(kReadChunk, '\0');
    while (!token.is_canceled()) {
      const auto first = body.bumpc().get();  // waits for the next byte, or the end
      if (first == traits::eof()) {
        auto last = lines.finish(on_line);
        if (!last) return last.error();
        break;
      }
      chunk[0] = static_cast<char>(first);
      size_t n = 1;
      if (const size_t more = std::min(body.in_avail(), chunk.size() - 1); more > 0) {
        n += body.getn(reinterpret_cast<uint8_t*>(chunk.data() + 1), more).get();
      }
      auto fed = lines.feed(std::string_view(chunk.data(), n), on_line);
      if (!fed) return fed.error();
      if (!*fed) break;
    }
    return {};
  } catch (const std::exception& e) {
    return Error{Error::Kind::kRetryable, std::string("stream broke: ") + e.what(), 0};
  }
}

void Client::cancel_watches() {
  std::lock_guard<std::mutex> lock(impl_->cts_mu);
  impl_->watch_cts.cancel();
}

void Client::set_user_agent(const std::string& user_agent) { impl_->user_agent = user_agent; }

void Client::set_request_observer(RequestObserver observer) { impl_->observer = std::move(observer); }
void Client::set_write_gate(WriteGate gate) { impl_->write_gate = std::move(gate); }

const RequestCounts& Client::counts() const { return impl_->counts; }
const std::string& Client::default_namespace() const { return impl_->cfg.namespace_; }

}  // namespace kubedist::kube
