# fish completion of mcpmux(1): commands, their options, and the names of the servers and
# profiles of the running daemon (asked with `mcpmux status --json`, at most 1 s). Installed to
# share/fish/vendor_completions.d.

# The names under the top-level key $argv[1] ("servers" or "profiles") of the daemon's
# pretty-printed status: six spaces and "name" inside that key's array (no jq needed).
function __mcpmux_daemon_names
    set -l socket
    set -l words (commandline -opc)
    if set -l i (contains -i -- --socket $words)
        set socket --socket $words[(math $i + 1)]
    else if set -l given (string match -- '--socket=*' $words)
        set socket $given[1]
    end
    $words[1] $socket --timeout 1000 status --json 2>/dev/null |
        awk -v key=$argv[1] '/^  "/ { on = index($0, "  \"" key "\":") == 1 }
            on && /^      "name": "/ { split($0, f, "\""); print f[4] }'
end

set -l commands connect status tools call logs sandbox restart reload add remove enable disable doctor \
    auth history trust dashboard secret agents adopt unadopt import help
set -l agents claude-desktop claude-code claude-code-project cursor cursor-project windsurf \
    vscode vscode-settings vscode-workspace zed gemini gemini-project codex codex-project

complete -c mcpmux -f
complete -c mcpmux -l socket -r -F -d 'the daemon socket'
complete -c mcpmux -l timeout -x -d 'milliseconds to wait for each answer'
complete -c mcpmux -s h -l help -d 'show the help'
complete -c mcpmux -s V -l version -d 'show the version'

set -l none "not __fish_seen_subcommand_from $commands"
complete -c mcpmux -n $none -a connect -d 'bridge stdin/stdout to the daemon'
complete -c mcpmux -n $none -a status -d 'the daemon and every server'
complete -c mcpmux -n $none -a tools -d 'list the combined tools'
complete -c mcpmux -n $none -a call -d 'call a tool and print its result'
complete -c mcpmux -n $none -a logs -d "a server's recent log lines"
complete -c mcpmux -n $none -a sandbox -d 'what a server\'s sandbox lets it reach'
complete -c mcpmux -n $none -a restart -d 'restart one server'
complete -c mcpmux -n $none -a reload -d 'reload the configuration'
complete -c mcpmux -n $none -a add -d 'add a server to the config file'
complete -c mcpmux -n $none -a remove -d 'remove a server from the config file'
complete -c mcpmux -n $none -a enable -d 'enable a server in the config file'
complete -c mcpmux -n $none -a disable -d 'disable a server in the config file'
complete -c mcpmux -n $none -a doctor -d 'check the setup'
complete -c mcpmux -n $none -a auth -d 'OAuth logins'
complete -c mcpmux -n $none -a history -d 'the audit log'
complete -c mcpmux -n $none -a trust -d 'what trust holds back, and approve it'
complete -c mcpmux -n $none -a dashboard -d 'open the dashboard'
complete -c mcpmux -n $none -a secret -d 'keep the secrets of the config'
complete -c mcpmux -n $none -a agents -d 'the MCP clients configured here'
complete -c mcpmux -n $none -a adopt -d "move a client's servers into mcpmux"
complete -c mcpmux -n $none -a unadopt -d 'give a client its own servers back'
complete -c mcpmux -n $none -a import -d 'mcpServers JSON to mcpmux TOML'
complete -c mcpmux -n $none -a help -d 'the help of a command'

function __mcpmux_arg_count --description 'how many words follow the command, options left out'
    set -l words (commandline -opc)
    set -l n -1
    set -l skip 0
    for w in $words[2..]
        if test $skip -eq 1
            set skip 0
        else if contains -- $w --socket --timeout --profile --server -n --lines --since --run --tool \
                -c --config --cwd --env --url --header
            set skip 1 # the option's value
        else if not string match -q -- '-*' $w
            set n (math $n + 1)
        end
    end
    echo $n
end

set -l servers '(__mcpmux_daemon_names servers)'
set -l profiles '(__mcpmux_daemon_names profiles)'
set -l first 'test (__mcpmux_arg_count) -eq 0'
complete -c mcpmux -n "__fish_seen_subcommand_from status reload agents doctor tools call trust dashboard auth history" -l json -d 'print JSON'
complete -c mcpmux -n "__fish_seen_subcommand_from connect" -l spawn -d 'start mcpmuxd when none answers'
complete -c mcpmux -n "__fish_seen_subcommand_from connect tools" -l profile -x -a $profiles -d 'a profile'
complete -c mcpmux -n "__fish_seen_subcommand_from tools history" -l server -x -a $servers -d 'only this server'
complete -c mcpmux -n "__fish_seen_subcommand_from tools" -l hidden -d 'also what is hidden or held back'
complete -c mcpmux -n "__fish_seen_subcommand_from logs" -s n -l lines -x -d 'how many lines'
complete -c mcpmux -n "__fish_seen_subcommand_from logs" -s f -l follow -d 'keep printing new lines'
complete -c mcpmux -n "__fish_seen_subcommand_from logs sandbox restart remove enable disable trust; and $first" -a $servers
complete -c mcpmux -n "__fish_seen_subcommand_from auth; and $first" -a 'login status logout'
complete -c mcpmux -n "__fish_seen_subcommand_from login status logout; and __fish_seen_subcommand_from auth" -a $servers
complete -c mcpmux -n "__fish_seen_subcommand_from auth dashboard" -l no-browser -d 'print the link only'
complete -c mcpmux -n "__fish_seen_subcommand_from history" -l tool -x -d 'only this tool'
complete -c mcpmux -n "__fish_seen_subcommand_from history" -l since -x -d 'only the last AGE (1h)'
complete -c mcpmux -n "__fish_seen_subcommand_from history" -l run -x -d 'only this code-mode run'
complete -c mcpmux -n "__fish_seen_subcommand_from history" -s n -l lines -x -d 'how many entries'
complete -c mcpmux -n "__fish_seen_subcommand_from trust" -l all -d 'approve everything held back'
complete -c mcpmux -n "__fish_seen_subcommand_from trust" -l diff -d 'show the word diff'
complete -c mcpmux -n "__fish_seen_subcommand_from secret; and $first" -a 'set list rm'
complete -c mcpmux -n "__fish_seen_subcommand_from add" -l env -x -d 'K=V'
complete -c mcpmux -n "__fish_seen_subcommand_from add" -l cwd -x -a '(__fish_complete_directories)' -d 'working directory'
complete -c mcpmux -n "__fish_seen_subcommand_from add" -l url -x -d "a remote server's URL"
complete -c mcpmux -n "__fish_seen_subcommand_from add" -l header -x -d 'K=V'
complete -c mcpmux -n "__fish_seen_subcommand_from add adopt unadopt import" -s c -l config -r -F -d 'the config file'
complete -c mcpmux -n "__fish_seen_subcommand_from adopt unadopt" -l dry-run -d 'write nothing'
complete -c mcpmux -n "__fish_seen_subcommand_from adopt unadopt" -s y -l yes -d 'apply without asking'
complete -c mcpmux -n "__fish_seen_subcommand_from adopt import" -l keep-plaintext -d 'copy tokens as they are'
complete -c mcpmux -n "__fish_seen_subcommand_from unadopt" -l remove -d 'also remove the servers'
complete -c mcpmux -n "__fish_seen_subcommand_from adopt unadopt; and $first" -F -a "$agents"
complete -c mcpmux -n "__fish_seen_subcommand_from import" -F
complete -c mcpmux -n "__fish_seen_subcommand_from import" -s w -l write -d 'append to the config file'
complete -c mcpmux -n "__fish_seen_subcommand_from help; and $first" -a "$commands"
