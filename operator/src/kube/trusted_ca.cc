#include "kube/trusted_ca.h"

#include <sys/stat.h>

#include <cstdlib>
#include <memory>

#include <boost/asio/buffer.hpp>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "common/log.h"
#include "kube/config.h"

namespace kubedist::kube {

bool is_ca_bundle(const std::string& pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
  if (!bio) return false;
  int certs = 0;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    X509_free(cert);
    ++certs;
  }
  // The loop ends at the end of the text (PEM_R_NO_START_LINE) or at something that is no certificate.
  const unsigned long err = ERR_peek_last_error();
  const bool clean_end = ERR_GET_LIB(err) == ERR_LIB_PEM && ERR_GET_REASON(err) == PEM_R_NO_START_LINE;
  ERR_clear_error();
  return certs > 0 && clean_end;
}

TrustedCa::TrustedCa(std::string pem, std::string file) : pem_(std::move(pem)), file_(std::move(file)) {
  struct stat st {};
  if (!file_.empty() && ::stat(file_.c_str(), &st) == 0) mtime_ = st.st_mtim;
}

std::string TrustedCa::current() {
  std::lock_guard<std::mutex> lock(mu_);
  if (file_.empty()) return pem_;
  struct stat st {};
  if (::stat(file_.c_str(), &st) != 0 ||
      (st.st_mtim.tv_sec == mtime_.tv_sec && st.st_mtim.tv_nsec == mtime_.tv_nsec)) {
    return pem_;
  }
  mtime_ = st.st_mtim;
  auto text = read_file(file_);
  if (!text || !is_ca_bundle(*text)) {
    log_warn("client", "the cluster CA file " + file_ + " changed but holds no CA bundle; keeping the one before");
    return pem_;
  }
  if (*text != pem_) {
    pem_ = *text;
    ++reloads_;
    log_info("client", "the cluster CA file " + file_ + " changed: new connections to the API server trust it");
  }
  return pem_;
}

void leave_system_roots_unloaded() {
  ::setenv("SSL_CERT_FILE", "/dev/null", 1);
  ::setenv("SSL_CERT_DIR", "/dev/null", 1);
}

void TrustedCa::apply(boost::asio::ssl::context& ctx) {
  const std::string pem = current();
  if (pem.empty()) return;
  // SSL_CTX_set_cert_store frees the store it replaces: the one with the system's roots.
  SSL_CTX_set_cert_store(ctx.native_handle(), X509_STORE_new());
  ctx.add_certificate_authority(boost::asio::buffer(pem.data(), pem.size()));
}

int TrustedCa::reloads() {
  std::lock_guard<std::mutex> lock(mu_);
  return reloads_;
}

}  // namespace kubedist::kube
