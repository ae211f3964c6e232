// gitignore-style rules from .kubedistignore and .gitignore files: which files of the working directory stay home.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kubedist::kubectl {

class IgnoreRules {
 public:
  // Adds the patterns of one ignore file found in directory base ("" for the working directory itself, else a
  // relative path like "src/data"). Later rules win over earlier ones, as in git.
  void add(const std::string& base, const std::string& text);
  // path: relative to the working directory, '/'-separated.
  bool ignored(const std::string& path, bool is_dir) const;
  // The verdict of the last rule that matches path: true ignored, false re-included by a '!' rule, none when no
  // rule speaks of it (the credential check tells a deliberate "!.env" from silence with it).
  std::optional<bool> verdict(const std::string& path, bool is_dir) const;

 private:
  struct Rule {
    std::string base;
    std::string pattern;
    bool negate = false;
    bool dir_only = false;
    bool anchored = false;  // the pattern has a '/' before its end: matched against the path below base
  };
  std::vector<Rule> rules_;
};

// gitignore's glob: '*' and '?' do not cross '/', "**/" matches any number of directories, [a-z] classes.
bool glob_match(const std::string& pattern, const std::string& text);

}  // namespace kubedist::kubectl
