#!/usr/bin/env zsh
# zsh_complete.zsh COMPLETIONS_DIR BIN_DIR LINE WORD: types LINE and a Tab into an interactive zsh
# (on a pseudo-terminal, compinit with COMPLETIONS_DIR first in fpath, BIN_DIR first in PATH) and
# exits 0 once WORD shows among what it offers. It waits for WORD: the caller bounds the wait.
zmodload zsh/zpty || exit 2
zpty shell 'PS1="> " TERM=xterm zsh -f -i'
zpty -w shell "fpath=(${(q)1} \$fpath); autoload -Uz compinit; compinit -u -D;" \
  "PATH=${(q)2}:\$PATH; print READY"
zpty -r shell out '*READY*' || exit 2
zpty -w -n shell "$3"$'\t'
zpty -r shell out "*$4*"
