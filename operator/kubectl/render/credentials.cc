#include "kubectl/render/credentials.h"

#include "kubectl/render/ignore.h"

namespace kubedist::kubectl {
namespace {

IgnoreRules credential_rules() {
  std::string text;
  for (const auto& p : credential_patterns()) text += p + "\n";
  IgnoreRules rules;
  rules.add("", text);
  return rules;
}

}  // namespace

const std::vector<std::string>& credential_patterns() {
  // ssh keys by their key types rather than "id_*", which would also leave home a module like id_utils.py;
  // "credentials*" does catch a credentials.py, but a module of that name deserves a second look before it ships.
  static const std::vector<std::string> patterns = {
      ".env*",        ".netrc",      "_netrc",        ".pypirc",        ".npmrc",         ".git-credentials",
      ".aws/",        ".ssh/",       ".gnupg/",       ".kube/",         "**/.docker/config.json",
      "kubeconfig*",  "*.kubeconfig", "credentials*", "*.pem",          "*.key",          "*.p12",
      "*.pfx",        "id_rsa*",     "id_dsa*",       "id_ecdsa*",      "id_ed25519*",
  };
  return patterns;
}

bool looks_like_credential(const std::string& path, bool is_dir) {
  static const IgnoreRules rules = credential_rules();
  return rules.ignored(path, is_dir);
}

}  // namespace kubedist::kubectl
