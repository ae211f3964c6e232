# The configuration files of the local cluster (sourced by cluster.sh): each lives under deploy/local/templates/ as
# the file it becomes, with ${name} where a value goes, so that it can be read, diffed and linted as what it is.
#
#   render_template TEMPLATE [NAME=VALUE...] >FILE
#
# prints templates/TEMPLATE with every ${NAME} replaced by VALUE, literally (no shell expansion of the value or of
# the rest of the file). A placeholder left without a value is an error that names it: the template and its caller
# are out of step, and a half-filled file would fail later and further away (a kubelet reads an empty address).

template_dir=${template_dir:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/templates}

render_template() {
  local src="$template_dir/$1" text out="" pair key placeholder
  local -A value=()
  shift
  [ -f "$src" ] || { printf 'render_template: no template %s\n' "$src" >&2; return 1; }
  for pair in "$@"; do
    key=${pair%%=*}
    [[ $pair == *=* && $key =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] ||
      { printf 'render_template: %s: "%s" is not NAME=VALUE\n' "${src##*/}" "$pair" >&2; return 1; }
    value[$key]=${pair#*=}
  done
  text=$(<"$src")
  # One pass from left to right, so that a value is never read as a template itself.
  while [[ $text =~ \$\{([A-Za-z_][A-Za-z0-9_]*)\} ]]; do
    placeholder=${BASH_REMATCH[0]}
    key=${BASH_REMATCH[1]}
    [ -n "${value[$key]+set}" ] ||
      { printf 'render_template: %s: no value for %s\n' "${src##*/}" "$placeholder" >&2; return 1; }
    out+=${text%%"$placeholder"*}${value[$key]}
    text=${text#*"$placeholder"}
  done
  printf '%s%s\n' "$out" "$text"
}
