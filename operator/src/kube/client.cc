#include "kube/client.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <pplx/threadpool.h>

#include "common/backoff.h"
#include "kube/line_splitter.h"
#include "kube/trusted_ca.h"

namespace kubedist::kube {
namespace {

using nlohmann::json;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;

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

std::string query_escape(const std::string& value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) != 0 || c == '-' || c == '.' || c == '_' || c == '~') {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

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

namespace {

// Where the API server is, from Config::server: https://host[:port][/prefix] or http://...; [v6] hosts in brackets.
struct ServerAddress {
  bool tls = true;
  std::string host;         // without brackets
  std::string port;         // 443 or 80 when the address names none
  std::string host_header;  // the address's host[:port] as it was written
  std::string prefix;       // a path before every request's, without a trailing "/"
};

std::optional<ServerAddress> parse_server(const std::string& server) {
  ServerAddress a;
  std::string rest;
  if (server.rfind("https://", 0) == 0) {
    rest = server.substr(8);
  } else if (server.rfind("http://", 0) == 0) {
    a.tls = false;
    rest = server.substr(7);
  } else {
    return std::nullopt;
  }
  const size_t slash = rest.find('/');
  const std::string authority = rest.substr(0, slash);
  if (slash != std::string::npos) {
    a.prefix = rest.substr(slash);
    while (!a.prefix.empty() && a.prefix.back() == '/') a.prefix.pop_back();
  }
  if (authority.empty() || authority.find_first_of("@?# ") != std::string::npos) return std::nullopt;
  std::string port;
  bool has_port = false;
  if (authority[0] == '[') {
    const size_t close = authority.find(']');
    if (close == std::string::npos) return std::nullopt;
    a.host = authority.substr(1, close - 1);
    const std::string after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return std::nullopt;
      has_port = true;
      port = after.substr(1);
    }
  } else if (const size_t colon = authority.rfind(':'); colon != std::string::npos) {
    has_port = true;
    a.host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  } else {
    a.host = authority;
  }
  if (a.host.empty()) return std::nullopt;
  if (has_port && (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
                   std::stoi(port) == 0 || std::stoi(port) > 65535)) {
    return std::nullopt;
  }
  a.port = has_port ? port : (a.tls ? "443" : "80");
  a.host_header = authority;
  return a;
}

// Errors by which a kept-alive connection shows that the server closed it while it was idle.
bool closed_while_idle(const beast::error_code& ec) {
  return ec == bhttp::error::end_of_stream || ec == asio::error::eof || ec == asio::error::connection_reset ||
         ec == asio::error::broken_pipe || ec == asio::ssl::error::stream_truncated;
}

// One connection to the API server, used by one thread at a time. It has an io_context of its own, which the calling
// thread runs for each step: a request is written and its answer read on the thread that asked, with no hand-off to
// an I/O thread and back (cpprest's task continuations cost more CPU in context switches than the requests did).
class Connection {
 public:
  Connection() : ioc_(1) {}

  // Connects within timeout and, for https, shakes hands: verifying the server against the trusted CA and its name
  // unless verify is false. ssl_setup fills the connection's TLS context (fresh for each connection, so that a rotated
  // CA is taken at once); it may throw.
  beast::error_code open(const ServerAddress& server, bool verify,
                         const std::function<void(asio::ssl::context&)>& ssl_setup,
                         std::chrono::steady_clock::duration timeout) {
    tcp::resolver resolver(ioc_);
    beast::error_code ec;
    const auto endpoints = resolver.resolve(server.host, server.port, ec);
    if (ec) return ec;
    if (server.tls) {
      ssl_ctx_ = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
      ssl_ctx_->set_default_verify_paths();  // as cpprest did: TrustedCa replaces them when a CA is configured
      ssl_setup(*ssl_ctx_);
      tls_ = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(ioc_, *ssl_ctx_);
    } else {
      plain_ = std::make_unique<beast::tcp_stream>(ioc_);
    }
    lowest().expires_after(timeout);
    ec = wait([&](auto handler) { lowest().async_connect(endpoints, std::move(handler)); });
    if (ec) return ec;
    lowest().socket().set_option(tcp::no_delay(true), ec);
    // Closing resets the connection: what the kernel still holds of a request is dropped, not sent on after the
    // close. A write cut off by its deadline (the stream closes the socket then) must never reach the API server
    // later: a leader's write would land after its lease ran out (controller/lease_fence.h; faults.partition saw
    // events of the old leader land 15 s after the new one's first write, retransmitted once the cut healed).
    // Only idle or failed connections are closed, so no answer is ever cut short by it.
    lowest().socket().set_option(asio::socket_base::linger(true, 0), ec);
    if (!tls_) return {};
    if (verify) {
      tls_->set_verify_mode(asio::ssl::verify_peer);
      tls_->set_verify_callback(asio::ssl::host_name_verification(server.host));
    } else {
      tls_->set_verify_mode(asio::ssl::verify_none);
    }
    beast::error_code not_ip;
    asio::ip::make_address(server.host, not_ip);
    if (not_ip) SSL_set_tlsext_host_name(tls_->native_handle(), server.host.c_str());  // SNI, for names only
    return wait([&](auto handler) { tls_->async_handshake(asio::ssl::stream_base::client, std::move(handler)); });
  }

  // Writes a request; reads an answer's header, or some more of its body, into parser.
  template <class Request>
  beast::error_code write(Request& req) {
    return wait([&](auto handler) { visit([&](auto& s) { bhttp::async_write(s, req, std::move(handler)); }); });
  }
  template <class Parser>
  beast::error_code read(Parser& parser) {
    return wait([&](auto handler) { visit([&](auto& s) { bhttp::async_read(s, buffer_, parser, std::move(handler)); }); });
  }
  template <class Parser>
  beast::error_code read_header(Parser& parser) {
    return wait(
        [&](auto handler) { visit([&](auto& s) { bhttp::async_read_header(s, buffer_, parser, std::move(handler)); }); });
  }
  template <class Parser>
  beast::error_code read_some(Parser& parser) {
    return wait(
        [&](auto handler) { visit([&](auto& s) { bhttp::async_read_some(s, buffer_, parser, std::move(handler)); }); });
  }

  // The deadline for every step from now on.
  void expires_after(std::chrono::steady_clock::duration d) { lowest().expires_after(d); }
  // Closes the socket from any thread: the step in progress, or the next one, fails (cancel_watches).
  void close_soon() {
    asio::post(ioc_, [this] {
      beast::error_code ec;
      lowest().socket().close(ec);
    });
  }

 private:
  beast::tcp_stream& lowest() { return tls_ ? beast::get_lowest_layer(*tls_) : *plain_; }
  template <class F>
  void visit(F&& f) {
    if (tls_) f(*tls_); else f(*plain_);
  }
  // Starts one asynchronous step and runs the io_context on this thread until it (and its timer) is done.
  template <class Start>
  beast::error_code wait(Start start) {
    beast::error_code result;
    start([&result](beast::error_code ec, auto&&...) { result = ec; });
    ioc_.restart();
    ioc_.run();
    return result;
  }

  asio::io_context ioc_;
  beast::flat_buffer buffer_;
  std::unique_ptr<asio::ssl::context> ssl_ctx_;
  std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> tls_;
  std::unique_ptr<beast::tcp_stream> plain_;
};

// The most of an answer's body that is read (a list page of 500 big objects stays far below it).
constexpr uint64_t kMaxBody = uint64_t{1} << 30;
// The most of a refused watch's or stream's body that is read for its message.
constexpr size_t kMaxErrorBody = 1 << 20;

}  // namespace

struct Client::Impl {
  Config cfg;
  ServerAddress server;
  std::shared_ptr<TrustedCa> ca;
  RetryPolicy retry;
  RequestCounts counts;
  RequestObserver observer;
  WriteGate write_gate;

  void observe(bhttp::verb method, const std::string& path, int code) {
    if (observer) observer(request_verb(std::string(bhttp::to_string(method)), path), code);
  }

  std::mutex token_mu;
  std::string token;
  struct timespec token_mtime {};

  // Kept-alive connections no request holds now; a request takes one (or opens one) and gives it back when the
  // server keeps it open.
  static constexpr size_t kMaxIdle = 64;
  std::mutex pool_mu;
  std::vector<std::unique_ptr<Connection>> idle;

  // The connections of the watches and streams in progress, which cancel_watches() closes.
  std::mutex streams_mu;
  bool streams_cancelled = false;
  std::set<Connection*> streams;

  std::string user_agent = "kubedist-operator/0.1";

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

  bhttp::request<bhttp::string_body> make_request(bhttp::verb method, const std::string& path,
                                                  const char* accept = "application/json") {
    bhttp::request<bhttp::string_body> req(method, server.prefix + path, 11);
    req.set(bhttp::field::host, server.host_header);
    req.set(bhttp::field::accept, accept);
    req.set(bhttp::field::user_agent, user_agent);
    if (std::string t = bearer(); !t.empty()) req.set(bhttp::field::authorization, "Bearer " + t);
    req.keep_alive(true);
    return req;
  }

  // A new connection, open (throws on TLS credentials OpenSSL refuses).
  beast::error_code open(Connection& conn, std::chrono::steady_clock::duration timeout) {
    return conn.open(server, !cfg.insecure_skip_verify,
                     [this](asio::ssl::context& ctx) { configure_tls(ctx, cfg, *ca); }, timeout);
  }

  std::unique_ptr<Connection> take_idle() {
    std::lock_guard<std::mutex> lock(pool_mu);
    if (idle.empty()) return nullptr;
    auto conn = std::move(idle.back());
    idle.pop_back();
    return conn;
  }
  void keep(std::unique_ptr<Connection> conn) {
    std::lock_guard<std::mutex> lock(pool_mu);
    if (idle.size() < kMaxIdle) idle.push_back(std::move(conn));
  }

  struct Answer {
    int code = 0;
    std::string body;
    std::string retry_after;
  };

  // One try of a request: written on an idle kept-alive connection, or on a new one when there is none or when the
  // idle one turns out closed by the server (then before any answer came, so the server never saw the request);
  // the whole answer read within timeout.
  beast::error_code exchange(bhttp::request<bhttp::string_body>& req, std::chrono::seconds timeout, Answer& out) {
    // One deadline for the whole exchange, a new connection's connect and handshake included: a write is never sent
    // later than `timeout` after it was asked for (a leader's lease allows for that much: controller/lease_fence.h),
    // where the connect used to take a full timeout and the request then a second one.
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    using Duration = std::chrono::steady_clock::duration;
    const auto left = [&] { return std::max(deadline - std::chrono::steady_clock::now(), Duration(0)); };
    std::unique_ptr<Connection> conn = take_idle();
    for (;;) {
      const bool reused = conn != nullptr;
      if (!reused) {
        conn = std::make_unique<Connection>();
        if (auto ec = open(*conn, left())) return ec;
      }
      if (left() == Duration(0)) return beast::error::timeout;
      conn->expires_after(left());
      bhttp::response_parser<bhttp::string_body> parser;
      parser.body_limit(kMaxBody);
      beast::error_code ec = conn->write(req);
      if (!ec) ec = conn->read(parser);
      if (ec) {
        if (reused && !parser.got_some() && closed_while_idle(ec)) {
          conn.reset();
          continue;
        }
        return ec;
      }
      auto msg = parser.release();
      out.code = static_cast<int>(msg.result_int());
      if (auto it = msg.find("Retry-After"); it != msg.end()) out.retry_after = std::string(it->value());
      out.body = std::move(msg.body());
      if (msg.keep_alive()) keep(std::move(conn));
      return {};
    }
  }

  // parse_success: whether a 2xx answer's body is parsed and returned (else null is). raw: where a 2xx answer's body
  // goes as text instead (null is returned).
  Result<json> send_once(bhttp::verb method, const std::string& path, const json* body,
                         const std::string& content_type, bool parse_success,
                         std::optional<std::chrono::milliseconds>* retry_after, std::string* raw) {
    std::string payload;
    if (body != nullptr) {
      // Not a transport error: the same body fails the same way on every try, so it is never sent nor retried, and
      // the message says what is wrong with it (an operator bug: text from outside is made valid where it enters).
      try {
        payload = body->dump();
      } catch (const json::exception& e) {
        return Error{Error::Kind::kUnserializable,
                     std::string("request body cannot be written as JSON, not sent: ") + e.what(), 0};
      }
    }
    try {
      auto req = make_request(method, path);
      if (body != nullptr) {
        req.set(bhttp::field::content_type, content_type);
        req.body() = std::move(payload);
      }
      req.prepare_payload();
      Answer answer;
      if (auto ec = exchange(req, method == bhttp::verb::get ? retry.timeout : retry.write_timeout, answer)) {
        observe(method, path, 0);
        return Error{Error::Kind::kRetryable, "API server unreachable: " + ec.message(), 0};
      }
      const int code = answer.code;
      observe(method, path, code);
      if (code >= 200 && code < 300 && raw != nullptr) {
        *raw = std::move(answer.body);
        return json(nullptr);
      }
      if (code >= 200 && code < 300 && !parse_success) return json(nullptr);
      json parsed = answer.body.empty() ? json(nullptr) : json::parse(answer.body, nullptr, false);
      if (code >= 200 && code < 300) {
        if (parsed.is_discarded()) return Error{Error::Kind::kOther, "invalid JSON from the API server", code};
        return parsed;
      }
      if (!answer.retry_after.empty()) *retry_after = parse_retry_after(answer.retry_after);
      return error_from_response(code, parsed.is_discarded() ? json(nullptr) : parsed);
    } catch (const std::exception& e) {
      observe(method, path, 0);
      return Error{Error::Kind::kRetryable, std::string("API server unreachable: ") + e.what(), 0};
    }
  }

  Result<json> send(bhttp::verb method, const std::string& path, const json* body = nullptr,
                    const std::string& content_type = "application/json", bool parse_success = true,
                    std::string* raw = nullptr) {
    const bool write = method != bhttp::verb::get;
    (write ? counts.writes : counts.reads)++;
    for (int attempt = 1;; ++attempt) {
      if (write && write_gate) {
        if (auto why = write_gate(path)) return Error{Error::Kind::kOther, "not sent: " + *why, 0};
      }
      std::optional<std::chrono::milliseconds> retry_after;
      auto r = send_once(method, path, body, content_type, parse_success, &retry_after, raw);
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
  auto server = parse_server(config.server);
  if (!server) return Error::invalid("bad API server address \"" + config.server + "\"");
  auto ca = std::make_shared<TrustedCa>(config.ca_pem, config.ca_file);
  try {  // refuse bad certificates now, with a clear message, rather than on every request
    boost::asio::ssl::context probe(boost::asio::ssl::context::tls_client);
    configure_tls(probe, config, *ca);
  } catch (const std::exception& e) {
    return Error::invalid(std::string("TLS credentials in the kube config are unusable: ") + e.what());
  }
  auto impl = std::make_unique<Impl>();
  impl->cfg = config;
  impl->server = std::move(*server);
  impl->ca = std::move(ca);
  impl->retry = retry;
  impl->token = trim(config.token);
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

Result<json> Client::get(const std::string& path) { return impl_->send(bhttp::verb::get, path); }

Result<std::string> Client::get_text(const std::string& path) {
  std::string text;
  auto r = impl_->send(bhttp::verb::get, path, nullptr, "application/json", true, &text);
  if (!r) return r.error();
  return text;
}

Result<json> Client::create(const std::string& path, const json& body) {
  return impl_->send(bhttp::verb::post, path, &body);
}

Result<void> Client::create_unparsed(const std::string& path, const json& body) {
  auto r = impl_->send(bhttp::verb::post, path, &body, "application/json", false);
  if (!r) return r.error();
  return {};
}

Result<json> Client::merge_patch(const std::string& path, const json& patch) {
  return impl_->send(bhttp::verb::patch, path, &patch, "application/merge-patch+json");
}

Result<void> Client::remove(const std::string& path, const json& options) {
  auto r = options.is_null() ? impl_->send(bhttp::verb::delete_, path)
                             : impl_->send(bhttp::verb::delete_, path, &options);
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
  Impl& im = *impl_;
  // A connection of its own, known to cancel_watches() while the stream lasts (the server ends a watch after its
  // timeoutSeconds; the idle deadline, renewed for every read, only catches a dead connection).
  auto conn = std::make_unique<Connection>();
  {
    std::lock_guard<std::mutex> lock(im.streams_mu);
    if (im.streams_cancelled) return Error{Error::Kind::kOther, "watch cancelled", 0};
    im.streams.insert(conn.get());
  }
  struct Registration {
    Impl& im;
    Connection* conn;
    ~Registration() {
      std::lock_guard<std::mutex> lock(im.streams_mu);
      im.streams.erase(conn);
    }
  } registration{im, conn.get()};
  auto cancelled = [&im] {
    std::lock_guard<std::mutex> lock(im.streams_mu);
    return im.streams_cancelled;
  };
  auto broke = [](const std::string& why) { return Error{Error::Kind::kRetryable, "stream broke: " + why, 0}; };
  try {
    if (auto ec = im.open(*conn, idle)) return broke(ec.message());
    auto req = im.make_request(bhttp::verb::get, path, "application/json, */*");
    req.prepare_payload();
    conn->expires_after(idle);
    if (auto ec = conn->write(req)) return broke(ec.message());
    bhttp::response_parser<bhttp::buffer_body> parser;
    parser.body_limit(boost::none);
    if (auto ec = conn->read_header(parser)) return broke(ec.message());
    const int code = static_cast<int>(parser.get().result_int());
    im.observe(bhttp::verb::get, path, code);
    // The body is read as it arrives, in whatever it holds (a watch sends one event at a time), up to a chunk.
    std::string chunk(kReadChunk, '\0');
    auto read_some = [&](beast::error_code& ec) -> size_t {
      parser.get().body().data = chunk.data();
      parser.get().body().size = chunk.size();
      conn->expires_after(idle);
      ec = conn->read_some(parser);
      if (ec == bhttp::error::need_buffer) ec = {};
      return chunk.size() - parser.get().body().size;
    };
    beast::error_code ec;
    if (code != 200) {
      std::string text;
      while (!parser.is_done() && text.size() < kMaxErrorBody) {
        const size_t n = read_some(ec);
        if (ec) break;
        text.append(chunk.data(), n);
      }
      json parsed = json::parse(text, nullptr, false);
      return error_from_response(code, parsed.is_discarded() ? json(nullptr) : parsed);
    }
    LineSplitter lines;
    while (!cancelled()) {
      if (parser.is_done()) {
        auto last = lines.finish(on_line);
        if (!last) return last.error();
        break;
      }
      const size_t n = read_some(ec);
      if (ec) return cancelled() ? Result<void>{} : broke(ec.message());
      if (n == 0) continue;
      auto fed = lines.feed(std::string_view(chunk.data(), n), on_line);
      if (!fed) return fed.error();
      if (!*fed) break;
    }
    return {};
  } catch (const std::exception& e) {
    return broke(e.what());
  }
}

void Client::cancel_watches() {
  std::lock_guard<std::mutex> lock(impl_->streams_mu);
  impl_->streams_cancelled = true;
  for (Connection* conn : impl_->streams) conn->close_soon();
}

void Client::set_user_agent(const std::string& user_agent) { impl_->user_agent = user_agent; }

void Client::set_request_observer(RequestObserver observer) { impl_->observer = std::move(observer); }
void Client::set_write_gate(WriteGate gate) { impl_->write_gate = std::move(gate); }

const RequestCounts& Client::counts() const { return impl_->counts; }
const std::string& Client::default_namespace() const { return impl_->cfg.namespace_; }

}  // namespace kubedist::kube
