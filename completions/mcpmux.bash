# bash completion of mcpmux(1): commands, their options, and the names of the servers and
# profiles of the running daemon (asked with `mcpmux status --json`, at most 1 s; no daemon, no
# names). Installed to share/bash-completion/completions/mcpmux, which bash-completion loads on
# first use; without bash-completion, `source` this file.

# The names under the top-level key $1 ("servers" or "profiles") of `mcpmux status --json`. Its
# output is pretty-printed, two spaces an indent, and names are [A-Za-z0-9_-]: so a line of six
# spaces and "name" inside that key's array is one name, and no JSON parser (jq) is needed.
_mcpmux_daemon_names() {
  local cmd=${COMP_WORDS[0]} i socket=()
  for ((i = 1; i < COMP_CWORD; i++)); do  # the daemon the command line names, if it names one
    case ${COMP_WORDS[i]} in
      --socket) socket=(--socket "${COMP_WORDS[i + 1]}") ;;
      --socket=*) socket=("${COMP_WORDS[i]}") ;;
    esac
  done
  "$cmd" "${socket[@]}" --timeout 1000 status --json 2>/dev/null |
    awk -v key="$1" '/^  "/ { on = index($0, "  \"" key "\":") == 1 }
      on && /^      "name": "/ { split($0, f, "\""); print f[4] }'
}

# COMPREPLY from `compgen ARGS... -- $cur`, one candidate a line (file names may hold spaces).
_mcpmux_reply() {
  mapfile -t COMPREPLY < <(compgen "$@" -- "$cur")
}

# File names: bash quotes them and marks directories.
_mcpmux_files() {
  compopt -o filenames 2>/dev/null
  _mcpmux_reply -f
}

_mcpmux() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
  local commands="connect status tools call logs sandbox restart reload add remove enable disable
    doctor auth history trust dashboard secret agents adopt unadopt import help"
  local agents="claude-desktop claude-code claude-code-project cursor cursor-project windsurf
    vscode vscode-settings vscode-workspace zed gemini gemini-project codex codex-project"
  local global="--socket --timeout -h --help -V --version"
  COMPREPLY=()

  # The values of options.
  case $prev in
    --socket | -c | --config | --cwd) _mcpmux_files; return ;;
    --server) _mcpmux_reply -W "$(_mcpmux_daemon_names servers)"; return ;;
    --profile) _mcpmux_reply -W "$(_mcpmux_daemon_names profiles)"; return ;;
    --timeout | -n | --lines | --since | --run | --tool | --env | --url | --header) return ;;
  esac

  # The command: the first word that is neither an option nor an option's value.
  local i command="" at=0
  for ((i = 1; i < COMP_CWORD; i++)); do
    case ${COMP_WORDS[i]} in
      --socket | --timeout) ((i++)) ;;
      -*) ;;
      *) command=${COMP_WORDS[i]} at=$i; break ;;
    esac
  done
  if [[ -z $command ]]; then
    if [[ $cur == -* ]]; then
      _mcpmux_reply -W "$global"
    else
      _mcpmux_reply -W "$commands"
    fi
    return
  fi

  # The words after the command that are not options: which argument $cur is.
  local n=0
  for ((i = at + 1; i < COMP_CWORD; i++)); do
    case ${COMP_WORDS[i]} in
      --) # add NAME ... -- COMMAND ARGS...: the server's own command line
        if ((i == COMP_CWORD - 1)); then _mcpmux_reply -c; else _mcpmux_files; fi
        return ;;
      --socket | --timeout | --profile | --server | -n | --lines | --since | --run | --tool | -c | \
        --config | --cwd | --env | --url | --header) ((i++)) ;;
      -*) ;;
      *) ((n++)) ;;
    esac
  done

  local options="" words=""
  case $command in
    connect) options="--spawn --profile" ;;
    status | reload | agents | doctor) options="--json" ;;
    tools) options="--json --server --hidden --profile" ;;
    call) options="--json" ;;
    logs) options="-n --lines -f --follow"; ((n == 0)) && words=$(_mcpmux_daemon_names servers) ;;
    sandbox | restart | remove | enable | disable)
      ((n == 0)) && words=$(_mcpmux_daemon_names servers) ;;
    trust)
      options="--all --diff --json"; ((n == 0)) && words=$(_mcpmux_daemon_names servers) ;;
    auth)
      options="--json --no-browser"
      if ((n == 0)); then words="login status logout"; elif ((n == 1)); then
        words=$(_mcpmux_daemon_names servers)
      fi ;;
    history) options="--tool --server --since --run -n --lines --json" ;;
    dashboard) options="--no-browser --json" ;;
    secret) ((n == 0)) && words="set list rm" ;;
    add) options="--env --cwd -c --config --url --header" ;;
    adopt | unadopt)
      options="--dry-run -y --yes -c --config --keep-plaintext"
      [[ $command == unadopt ]] && options="--dry-run -y --yes -c --config --remove"
      if ((n == 0)); then
        compopt -o filenames 2>/dev/null
        mapfile -t COMPREPLY < <(compgen -W "$agents" -- "$cur"; compgen -f -- "$cur")
        [[ $cur == -* ]] || return
      fi ;;
    import) options="-w --write -c --config --keep-plaintext"
      [[ $cur == -* ]] || { _mcpmux_files; return; } ;;
    help) ((n == 0)) && words=$commands ;;
  esac
  if [[ $cur == -* ]]; then
    _mcpmux_reply -W "$options $global"
  else
    _mcpmux_reply -W "$words"
  fi
}

complete -F _mcpmux mcpmux
