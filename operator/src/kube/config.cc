#include "kube/config.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <openssl/evp.h>
#include <yaml-cpp/yaml.h>

namespace kubedist::kube {
namespace {

// A path of the kubeconfig relative to its directory; an absolute one stays as it is.
std::string resolve(const std::string& base_dir, const std::string& path) {
  if (path.empty() || base_dir.empty()) return path;
  return (std::filesystem::path(base_dir) / path).string();
}

YAML::Node find_named(const YAML::Node& list, const std::string& name) {
  if (!list || !list.IsSequence()) return YAML::Node();
  for (const auto& item : list) {
    if (item["name"] && item["name"].as<std::string>() == name) return item;
  }
  return YAML::Node();
}

std::string str(const YAML::Node& node, const char* key) {
  if (!node || !node.IsMap() || !node[key] || !node[key].IsScalar()) return "";
  return node[key].as<std::string>();
}

// Reads inline base64 data (key-data) or a file (key), naming what is wrong when neither works.
Result<std::string> data_or_file(const YAML::Node& node, const char* data_key, const char* file_key,
                                 const std::string& base_dir, const std::string& what) {
  const std::string data = str(node, data_key);
  if (!data.empty()) {
    bool ok = false;
    std::string decoded = base64_decode(data, &ok);
    if (!ok) return Error::invalid(what + ": " + data_key + " is not valid base64");
    return decoded;
  }
  const std::string file = str(node, file_key);
  if (file.empty()) return std::string();
  auto content = read_file(resolve(base_dir, file));
  if (!content) return Error::invalid(what + ": " + content.error().message);
  return *content;
}

}  // namespace

std::string base64_decode(const std::string& in, bool* ok) {
  std::string text;  // without the line breaks and spaces that wrap long base64 text
  for (char c : in)
    if (c != '\n' && c != '\r' && c != ' ') text += c;
  // OpenSSL decodes '=' anywhere as zero bits and wants whole groups of four: padding is checked here (only at the
  // end, at most two) and restored, so that unpadded text decodes too; one character alone carries no whole byte.
  const size_t body = std::min(text.find('='), text.size());
  *ok = text.size() - body <= 2 && text.find_first_not_of('=', body) == std::string::npos && body % 4 != 1;
  if (!*ok) return "";
  text.resize(body);
  const size_t padding = (4 - body % 4) % 4;
  text.append(padding, '=');
  std::string out(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) {  // a character outside the alphabet
    *ok = false;
    return "";
  }
  out.resize(static_cast<size_t>(n) - padding);
  return out;
}

Result<std::string> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Error::invalid("cannot read " + path);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Result<Config> parse_kubeconfig(const std::string& yaml, const std::string& base_dir, const std::string& context) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    return Error::invalid(std::string("kubeconfig is not valid YAML: ") + e.what());
  }
  if (!root.IsMap()) return Error::invalid("kubeconfig is not a YAML mapping");
  std::string ctx_name = context.empty() ? str(root, "current-context") : context;
  if (ctx_name.empty()) return Error::invalid("kubeconfig has no current-context and none was given");
  YAML::Node ctx = find_named(root["contexts"], ctx_name);
  if (!ctx.IsMap() || !ctx["context"]) return Error::invalid("kubeconfig has no context \"" + ctx_name + "\"");
  const YAML::Node c = ctx["context"];
  Config cfg;
  cfg.namespace_ = str(c, "namespace");
  if (cfg.namespace_.empty()) cfg.namespace_ = "default";

  const std::string cluster_name = str(c, "cluster");
  YAML::Node cluster = find_named(root["clusters"], cluster_name);
  if (!cluster.IsMap() || !cluster["cluster"]) {
    return Error::invalid("kubeconfig context \"" + ctx_name + "\" names unknown cluster \"" + cluster_name + "\"");
  }
  const YAML::Node cl = cluster["cluster"];
  cfg.server = str(cl, "server");
  if (cfg.server.empty()) return Error::invalid("kubeconfig cluster \"" + cluster_name + "\" has no server");
  while (!cfg.server.empty() && cfg.server.back() == '/') cfg.server.pop_back();
  cfg.insecure_skip_verify = str(cl, "insecure-skip-tls-verify") == "true";
  auto ca = data_or_file(cl, "certificate-authority-data", "certificate-authority", base_dir,
                         "kubeconfig cluster \"" + cluster_name + "\"");
  if (!ca) return ca.error();
  cfg.ca_pem = *ca;
  if (str(cl, "certificate-authority-data").empty() && !str(cl, "certificate-authority").empty()) {
    cfg.ca_file = resolve(base_dir, str(cl, "certificate-authority"));
  }

  const std::string user_name = str(c, "user");
  if (!user_name.empty()) {
    YAML::Node user = find_named(root["users"], user_name);
    if (!user.IsMap()) return Error::invalid("kubeconfig context \"" + ctx_name + "\" names unknown user \"" + user_name + "\"");
    const YAML::Node u = user["user"];
    const std::string what = "kubeconfig user \"" + user_name + "\"";
    auto cert = data_or_file(u, "client-certificate-data", "client-certificate", base_dir, what);
    if (!cert) return cert.error();
    auto key = data_or_file(u, "client-key-data", "client-key", base_dir, what);
    if (!key) return key.error();
    if (cert->empty() != key->empty()) return Error::invalid(what + ": a client certificate needs its key and vice versa");
    cfg.client_cert_pem = *cert;
    cfg.client_key_pem = *key;
    cfg.token = str(u, "token");
    cfg.token_file = resolve(base_dir, str(u, "tokenFile"));
    if (u && u.IsMap() && (u["exec"] || u["auth-provider"])) {
      if (cfg.token.empty() && cfg.token_file.empty() && cfg.client_cert_pem.empty()) {
        return Error::invalid(what + ": exec and auth-provider credentials are not supported; use a token or a client certificate");
      }
    }
  }
  return cfg;
}

Result<Config> load_kubeconfig(const std::string& path, const std::string& context) {
  auto text = read_file(path);
  if (!text) return Error::invalid("kubeconfig: " + text.error().message);
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  return parse_kubeconfig(*text, dir.empty() ? "." : dir.string(), context);
}

Result<Config> in_cluster_config(const std::map<std::string, std::string>& env, const std::string& sa_dir) {
  auto get = [&](const char* k) {
    auto it = env.find(k);
    return it == env.end() ? std::string() : it->second;
  };
  const std::string host = get("KUBERNETES_SERVICE_HOST");
  const std::string port = get("KUBERNETES_SERVICE_PORT");
  if (host.empty() || port.empty()) {
    return Error::invalid("not running in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set");
  }
  Config cfg;
  // An IPv6 service host needs brackets in a URL.
  cfg.server = "https://" + (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + port;
  cfg.token_file = sa_dir + "/token";
  auto token = read_file(cfg.token_file);
  if (!token) return Error::invalid("in-cluster config: " + token.error().message);
  cfg.ca_file = sa_dir + "/ca.crt";  // the kubelet rewrites it when the cluster's CA rotates
  auto ca = read_file(cfg.ca_file);
  if (!ca) return Error::invalid("in-cluster config: " + ca.error().message);
  cfg.ca_pem = *ca;
  auto ns = read_file(sa_dir + "/namespace");
  cfg.namespace_ = ns ? *ns : "default";
  while (!cfg.namespace_.empty() && (cfg.namespace_.back() == '\n' || cfg.namespace_.back() == ' ')) {
    cfg.namespace_.pop_back();
  }
  return cfg;
}

Result<Config> load_default_config(const std::string& explicit_path, const std::string& context) {
  if (!explicit_path.empty()) return load_kubeconfig(explicit_path, context);
  if (const char* kc = std::getenv("KUBECONFIG"); kc != nullptr && *kc != '\0') {
    std::string first(kc);
    first = first.substr(0, first.find(':'));
    return load_kubeconfig(first, context);
  }
  if (const char* host = std::getenv("KUBERNETES_SERVICE_HOST"); host != nullptr && *host != '\0') {
    const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
    return in_cluster_config({{"KUBERNETES_SERVICE_HOST", host}, {"KUBERNETES_SERVICE_PORT", port ? port : ""}});
  }
  if (const char* home = std::getenv("HOME"); home != nullptr) return load_kubeconfig(std::string(home) + "/.kube/config", context);
  return Error::invalid("no kubeconfig: pass --kubeconfig, set KUBECONFIG, or run in a cluster");
}

}  // namespace kubedist::kube
