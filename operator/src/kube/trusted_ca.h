// TrustedCa: the CA bundle the API client trusts for the API server, and nothing else (not the system's roots), re-read
// from its file when the file changes (a rotated cluster CA: the kubelet rewrites a pod's ca.crt in place).
#pragma once

#include <time.h>

#include <mutex>
#include <string>

#include <boost/asio/ssl/context.hpp>

namespace kubedist::kube {

// Whether pem holds at least one certificate and nothing but certificates (what a CA bundle may hold).
bool is_ca_bundle(const std::string& pem);

// The client makes a fresh TLS context for every new connection and fills it with the system's roots
// (SSL_CTX_set_default_verify_paths: /etc/ssl/certs/ca-certificates.crt parsed, 144 certificates, tens of ms) before
// TrustedCa::apply() throws them away. Pointing OpenSSL's default CA file and directory at nothing (SSL_CERT_FILE,
// SSL_CERT_DIR) makes that load empty. Process-wide: call before the client's threads start, and only when every TLS
// peer of the process is verified against a configured bundle.
void leave_system_roots_unloaded();

class TrustedCa {
 public:
  // pem: the bundle as configured (kubeconfig data or file, the pod's ca.crt); file: where it was read from, "" for
  // inline data (then it never changes). An empty pem with no file: no CA configured, the system's roots verify.
  TrustedCa(std::string pem, std::string file);

  // The bundle to trust now: the file's content once it changed and holds a CA bundle, else the last good one.
  std::string current();
  // Makes ctx trust current() alone: the store set_default_verify_paths() filled is replaced by one holding only
  // the bundle. Without a bundle ctx keeps the system's roots, as kubectl does. Throws on a bundle OpenSSL refuses.
  void apply(boost::asio::ssl::context& ctx);
  // How many times a changed file was taken (for logs and tests).
  int reloads();

 private:
  std::mutex mu_;
  std::string pem_;
  const std::string file_;
  struct timespec mtime_ {};
  int reloads_ = 0;
};

}  // namespace kubedist::kube
