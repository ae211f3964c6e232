// The files the plugin leaves home by default because they look like credentials (keys, tokens, cloud, cluster and
// registry logins): shipped, they would sit in ConfigMaps that everyone with the `view` role reads.
#pragma once

#include <string>
#include <vector>

namespace kubedist::kubectl {

// The deny-list, in .gitignore syntax (each pattern matches at any depth; a trailing '/' names a directory).
const std::vector<std::string>& credential_patterns();

// path: relative to the working directory, '/'-separated. Only a '!' rule of a .kubedistignore ships such a file.
bool looks_like_credential(const std::string& path, bool is_dir);

}  // namespace kubedist::kubectl
