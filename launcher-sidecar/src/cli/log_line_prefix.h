// --log-line-prefix-template: torchrun's console prefix template, with the substitution rules of Python's
// string.Template that torchrun applies ($$ is a dollar; $name and ${name} name a macro) (pure).
#pragma once

#include <optional>
#include <string>

#include "util/result.h"

namespace kubedist::launcher {

struct PrefixMacros {
  std::string role_name;
  int local_rank = 0;
  int rank = 0;
  std::string hostname;
};

// What is wrong with a template, or nothing: a macro other than role_name, local_rank, rank and hostname (torchrun
// would print it as it is, which is only ever a typo), or a line break (a prefix is part of one line).
std::optional<std::string> check_prefix_template(const std::string& tmpl);

// The prefix for one worker. A '$' that starts no macro stays as it is, as under safe_substitute.
std::string render_prefix(const std::string& tmpl, const PrefixMacros& macros);

}  // namespace kubedist::launcher
