#include "cli/completion.h"

#include "cli/launch_config.h"

namespace kubedist::launcher {

std::string completion_script(const std::string& shell) {
  std::string words;
  for (const auto& f : flag_names()) words += (words.empty() ? "" : " ") + f.spelling;
  if (shell == "zsh") {
    std::string specs;
    for (const auto& f : flag_names()) specs += " \\\n  '" + f.spelling + (f.takes_value ? "=[]:value:'" : "[]'");
    return "#compdef kubedist-launcher\n# kubedist-launcher --print-completion zsh > ~/.zsh/completions/_kubedist-launcher\n"
           "_arguments -s" + specs + " \\\n  '*::script and arguments:_files'\n";
  }
  if (shell == "tcsh") {
    return "# kubedist-launcher --print-completion tcsh >> ~/.tcshrc\ncomplete kubedist-launcher 'c/--/(" + words +
           ")/' 'p/*/f/'\n";
  }
  return "# kubedist-launcher --print-completion bash > /etc/bash_completion.d/kubedist-launcher\n"
         "_kubedist_launcher() {\n"
         "  local cur=\"${COMP_WORDS[COMP_CWORD]}\"\n"
         "  if [[ \"$cur\" == -* ]]; then\n"
         "    COMPREPLY=($(compgen -W \"" + words + "\" -- \"$cur\"))\n"
         "  else\n"
         "    COMPREPLY=($(compgen -f -- \"$cur\"))\n"
         "  fi\n"
         "}\n"
         "complete -F _kubedist_launcher kubedist-launcher\n";
}

}  // namespace kubedist::launcher
