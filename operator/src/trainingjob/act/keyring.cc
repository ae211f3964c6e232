#include "trainingjob/act/keyring.h"

#include "common/log.h"
#include "kube/config.h"
#include "rendezvous/rdzv_auth.h"

namespace kubedist::trainingjob {
namespace {

using nlohmann::json;

bool is_dns_label(const std::string& s) {
  if (s.empty() || s.size() > 63 || s.front() == '-' || s.back() == '-') return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  return true;
}

bool is_dns_subdomain(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  size_t from = 0;
  while (true) {
    const size_t dot = s.find('.', from);
    if (!is_dns_label(s.substr(from, dot == std::string::npos ? std::string::npos : dot - from))) return false;
    if (dot == std::string::npos) return true;
    from = dot + 1;
  }
}

std::optional<std::string> from_hex(const std::string& text) {
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  if (text.size() % 2 != 0) return std::nullopt;
  std::string out;
  for (size_t i = 0; i < text.size(); i += 2) {
    const int hi = nibble(text[i]), lo = nibble(text[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
  }
  return out;
}

}  // namespace

std::string check_keyring_secret(const std::string& secret) {
  const size_t slash = secret.find('/');
  if (slash == std::string::npos) return "\"" + secret + "\" has no '/'";
  const std::string ns = secret.substr(0, slash), name = secret.substr(slash + 1);
  if (!is_dns_label(ns)) return "\"" + ns + "\" is no namespace name (a DNS label)";
  if (!is_dns_subdomain(name)) return "\"" + name + "\" is no Secret name (a DNS subdomain)";
  return "";
}

std::string keyring_entry(const std::string& ns, const std::string& fingerprint) { return ns + "." + fingerprint; }

bool parse_keyring_entry(const std::string& entry, std::string* ns, std::string* fingerprint) {
  const size_t dot = entry.find('.');
  if (dot == std::string::npos) return false;
  *ns = entry.substr(0, dot);
  *fingerprint = entry.substr(dot + 1);
  return is_dns_label(*ns) && !fingerprint->empty() && from_hex(*fingerprint).has_value();
}

Keyring::Keyring(kube::Api& api, const std::string& secret) : api_(api) {
  const size_t slash = secret.find('/');
  ns_ = secret.substr(0, slash);
  name_ = slash == std::string::npos ? "" : secret.substr(slash + 1);
}

std::string Keyring::path() const { return "/api/v1/namespaces/" + ns_ + "/secrets/" + name_; }

Result<void> Keyring::load_into(RendezvousKeys& keys) {
  std::lock_guard<std::mutex> lock(mu_);
  if (loaded_) return {};
  auto secret = api_.get(path());
  if (!secret && secret.error().kind == Error::Kind::kNotFound) {
    log_warn("keyring", "Secret " + ns_ + "/" + name_ + " does not exist: the namespace keys are kept in memory only, "
                        "so a key deleted or replaced while no operator runs cannot be given back to its jobs");
    loaded_ = missing_ = true;
    return {};
  }
  if (!secret) return Error{secret.error().kind, "reading the keyring Secret " + ns_ + "/" + name_ + ": " +
                                                     secret.error().message, secret.error().http_status};
  int taken = 0, refused = 0;
  if (auto data = secret->find("data"); data != secret->end() && data->is_object()) {
    for (const auto& [entry, value] : data->items()) {
      std::string ns, fingerprint;
      bool ok = value.is_string() && parse_keyring_entry(entry, &ns, &fingerprint);
      const std::string hex = ok ? kube::base64_decode(value.get<std::string>(), &ok) : "";
      const auto key = ok ? from_hex(hex) : std::nullopt;
      // An entry whose key does not match its fingerprint is no key the operator stored: left out (and removed at
      // the namespace's next write, since memory does not hold it).
      if (!key || key->empty() || rendezvous::rdzv_key_fingerprint(*key) != fingerprint) {
        ++refused;
        continue;
      }
      keys.seen(ns, *key);
      kept_[ns].insert(fingerprint);
      ++taken;
    }
  }
  log_info("keyring", "loaded " + std::to_string(taken) + " namespace key(s) from Secret " + ns_ + "/" + name_ +
                          (refused ? "; left out " + std::to_string(refused) + " entry(ies) that hold no valid key" : ""));
  loaded_ = true;
  return {};
}

Result<void> Keyring::keep(const std::string& ns, const std::map<std::string, std::string>& all) {
  std::lock_guard<std::mutex> lock(mu_);
  if (missing_) return {};
  std::set<std::string>& kept = kept_[ns];
  json string_data = json::object(), data = json::object();
  for (const auto& [fingerprint, key] : all)
    if (kept.count(fingerprint) == 0) string_data[keyring_entry(ns, fingerprint)] = rendezvous::to_hex(key);
  for (const auto& fingerprint : kept)
    if (all.count(fingerprint) == 0) data[keyring_entry(ns, fingerprint)] = nullptr;
  if (string_data.empty() && data.empty()) return {};
  json patch = {{"stringData", string_data}};
  if (!data.empty()) patch["data"] = data;
  auto r = api_.merge_patch(path(), patch);
  if (!r && r.error().kind == Error::Kind::kNotFound) {
    log_warn("keyring", "Secret " + ns_ + "/" + name_ + " is gone: the namespace keys are kept in memory only from now");
    missing_ = true;
    return {};
  }
  if (!r) return Error{r.error().kind, "storing namespace " + ns + "'s key in the keyring Secret " + ns_ + "/" +
                                           name_ + ": " + r.error().message, r.error().http_status};
  kept.clear();
  for (const auto& [fingerprint, key] : all) kept.insert(fingerprint);
  return {};
}

}  // namespace kubedist::trainingjob
