// --print-completion SHELL: a completion script for kubedist-launcher's flags, as torchrun prints one for its own
// (pure; written from the flag table, so it never falls behind it).
#pragma once

#include <string>

namespace kubedist::launcher {

// shell: bash, zsh or tcsh (the caller has checked). The script completes the flags; after them, file names.
std::string completion_script(const std::string& shell);

}  // namespace kubedist::launcher
