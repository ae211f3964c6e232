// Where the API server is and how to authenticate to it: from a kubeconfig file or from inside a pod.
#pragma once

#include <map>
#include <string>

#include "common/result.h"

namespace kubedist::kube {

struct Config {
  std::string server;           // https://host:port
  std::string ca_pem;           // CA bundle to verify the server (it alone is trusted); empty = system roots
  std::string ca_file;          // the file ca_pem was read from, "" for inline data: re-read when it changes
  bool insecure_skip_verify = false;
  std::string client_cert_pem;  // client certificate authentication
  std::string client_key_pem;
  std::string token;            // bearer token (static)
  std::string token_file;       // bearer token re-read when the file changes (service account tokens rotate)
  std::string namespace_;       // the context's namespace, "default" if none
};

// Reads a kubeconfig file (YAML). context: the context to use, "" = current-context. Relative file paths
// in the file are resolved against its directory, as kubectl does.
Result<Config> load_kubeconfig(const std::string& path, const std::string& context = "");

// Parses kubeconfig text; base_dir resolves relative paths.
Result<Config> parse_kubeconfig(const std::string& yaml, const std::string& base_dir, const std::string& context = "");

// In-cluster configuration: KUBERNETES_SERVICE_HOST/PORT from env, the token and CA from sa_dir
// (normally /var/run/secrets/kubernetes.io/serviceaccount).
Result<Config> in_cluster_config(const std::map<std::string, std::string>& env,
                                 const std::string& sa_dir = "/var/run/secrets/kubernetes.io/serviceaccount");

// Explicit path, else $KUBECONFIG (first entry), else in-cluster when KUBERNETES_SERVICE_HOST is set,
// else ~/.kube/config.
Result<Config> load_default_config(const std::string& explicit_path, const std::string& context = "");

std::string base64_decode(const std::string& in, bool* ok);
Result<std::string> read_file(const std::string& path);

}  // namespace kubedist::kube
