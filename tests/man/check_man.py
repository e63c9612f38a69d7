#!/usr/bin/env python3
"""Fails when the man pages or the shell completions miss what the code has.

Read from the code: the config keys of the loader's tables (config/config.cpp: daemon_keys,
server_keys, oauth_keys, profile_keys), the commands of mcpmux (daemon/cli/args.cpp's commands[],
import and help) and the options of mcpmux (args.cpp, daemon/mcpmux_import.cpp) and mcpmuxd
(daemon/mcpmuxd.cpp). Each must be in its man page, in bold (`*name*`); each command and option of
mcpmux also in the completions of bash, zsh and fish. Usage: check_man.py [REPO].
"""
import pathlib
import re
import sys

repo = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")


def read(path):
    return (repo / path).read_text()


def string_array(source, name):
    """The string literals of `constexpr std::array<...> NAME = {...};`."""
    m = re.search(name + r"\s*=\s*\{(.*?)\};", source, re.S)
    if not m:
        sys.exit(f"check_man: {name} not found in config/config.cpp")
    return re.findall(r'"([^"]+)"', m.group(1))


def option_names(source):
    """Every --long and -s name given to add_option, add_flag, add_count, set_version_flag."""
    names = set()
    for m in re.finditer(r'(?:add_option|add_flag|add_count|set_version_flag)(?:<[^>]*>)?\('
                         r'(?:[\w&]+,\s*)?"([^"]+)"', source):
        names.update(n for n in m.group(1).split(",") if n.startswith("-"))
    return names


problems = []


def expect(text, word, where, what):
    if word not in text:
        problems.append(f"{where}: {what} is missing")


# The config keys, in mcpmux.toml(5).
config = read("config/config.cpp")
toml_page = read("man/mcpmux.toml.5.scd")
keys = set(string_array(config, "daemon_keys") + string_array(config, "server_keys") +
           string_array(config, "profile_keys"))
keys |= {"oauth." + k for k in string_array(config, "oauth_keys")}
for key in sorted(keys):
    expect(toml_page, f"*{key}*", "man/mcpmux.toml.5.scd", f"the key {key}")

# The commands and options of mcpmux, in mcpmux(1) and the completions.
args = read("daemon/cli/args.cpp")
table = args[args.index("const command_spec commands[]"):]
table = table[:table.index("\n};")]
commands = set(re.findall(r'^    \{"([a-z]+)",', table, re.M)) | {"import", "help"}
options = option_names(args) | option_names(read("daemon/mcpmux_import.cpp"))
options -= {"-h", "--help"}  # CLI11's own; in the page as *-h*, *--help*
page = read("man/mcpmux.1.scd")
completions = {f: read(f) for f in
               ("completions/mcpmux.bash", "completions/_mcpmux", "completions/mcpmux.fish")}
for command in sorted(commands):
    if not re.search(r"^\*" + command + r"\*", page, re.M):
        problems.append(f"man/mcpmux.1.scd: the command {command} has no entry")
    for f, text in completions.items():
        if not re.search(r"(?<![\w-])" + command + r"(?![\w-])", text):
            problems.append(f"{f}: the command {command} is missing")
for option in sorted(options):
    expect(page, f"*{option}*", "man/mcpmux.1.scd", f"the option {option}")
    for f, text in completions.items():
        # fish spells -l NAME and -s N; bash and zsh the option itself.
        spelled = (f"-l {option[2:]}" if option.startswith("--") else f"-s {option[1:]}"
                   ) if f.endswith(".fish") else option
        if not re.search(re.escape(spelled) + r"(?![\w-])", text):
            problems.append(f"{f}: the option {option} is missing")

# The options of mcpmuxd, in mcpmuxd(8).
daemon_page = read("man/mcpmuxd.8.scd")
for option in sorted(option_names(read("daemon/mcpmuxd.cpp"))):
    expect(daemon_page, f"*{option}*", "man/mcpmuxd.8.scd", f"the option {option}")

for p in problems:
    print(p)
print(f"check_man: {len(keys)} keys, {len(commands)} commands, {len(options)} options: "
      f"{len(problems)} missing")
sys.exit(1 if problems else 0)
