// `mcpmux trust`: what trust holds back (tools, prompts and resource templates whose definition
// changed, was renamed or added since the server was trusted, or of a server not trusted yet),
// with a word diff, and their approval.
#include <unistd.h>

#include <set>

#include "daemon/cli/commands.hpp"
#include "daemon/cli/table.hpp"

namespace mcpmux::cli {
namespace {

// A word diff in the terminal's colours, else in the plain [-removed-]{+added+} notation. The
// server's words go through visible_text before the colours are put around them: a description
// that hides its own additions (SGR 8, a carriage return) would otherwise hide them from the
// person who reviews it.
std::string render_runs(const json::value& runs, bool colour) {
  std::string out;
  if (!runs.is_array()) return out;
  for (const auto& r : runs.get_array()) {
    const auto op = member_string(r, "op").value_or("=");
    const auto text = visible_text(member_string(r, "text").value_or(""));
    if (op == "=")
      out += text;
    else if (op == "-")
      out += colour ? fmt::format("\x1b[9;31m{}\x1b[0m", text) : fmt::format("[-{}-]", text);
    else
      out += colour ? fmt::format("\x1b[32m{}\x1b[0m", text) : fmt::format("{{+{}+}}", text);
  }
  return out;
}

// "tools" → "tool", and so on.
std::string_view kind_word(std::string_view kind) {
  if (kind == "tools") return "tool";
  if (kind == "prompts") return "prompt";
  if (kind == "resourceTemplates") return "template";
  return kind;
}

void print_item(const json::value& item, bool with_diff, bool colour) {
  const auto why = member_string(item, "why").value_or("");
  std::string line = fmt::format("  {} {}: {}", kind_word(member_string(item, "kind").value_or("")),
                                 member_string(item, "name").value_or(""), why);
  if (auto was = member_string(item, "was")) line += fmt::format(" (the definition of {})", *was);
  print_visible(stdout, "{}\n", line);
  if (!with_diff) return;
  const auto* diff = member(item, "diff");
  if (!diff || !diff->is_array()) return;
  for (const auto& f : diff->get_array()) {
    const auto* runs = member(f, "runs");
    fmt::print("      {}: {}\n", visible_text(member_string(f, "field").value_or("")),
               runs ? render_runs(*runs, colour) : std::string());
  }
}

}  // namespace

outcome<exit_status> run_trust(const context& ctx, const command_args& args) {
  if (args.all && !args.names.empty())
    return failure{exit_status::usage, "give either --all or NAMEs, not both"};
  if ((args.all || !args.names.empty()) && args.target.empty())
    return failure{exit_status::usage, "approving needs a SERVER"};
  auto client = open_client(ctx);
  if (!client) return client.error();
  json::object params{{"diff", true}};
  if (!args.target.empty()) params["server"] = args.target;
  auto answer = client->request("mcpmux/quarantine", std::move(params));
  if (!answer) return answer.error();
  const json::value* servers = member(*answer, "servers");
  if (servers == nullptr || !servers->is_array()) return unexpected_answer("mcpmux/quarantine");
  const bool approving = args.all || !args.names.empty();
  if (args.json && !approving) {
    print_pretty(*servers);
    return exit_status::ok;
  }
  const bool colour = ::isatty(STDOUT_FILENO) && !env("NO_COLOR");
  std::size_t held = 0;
  json::object expected;  // what the approver is shown is what is approved
  for (const auto& s : servers->get_array()) {
    const auto* items = member(s, "items");
    if (!items || !items->is_array() || items->get_array().empty()) continue;
    const auto name = member_string(s, "server").value_or("");
    const bool trusted =
        member(s, "trusted") && member(s, "trusted")->is_bool() && member(s, "trusted")->get_bool();
    print_visible(stdout, "{} ({}, on_change = {}): {} held back\n", name,
                  trusted ? "trusted" : "not trusted yet",
                  member_string(s, "on_change").value_or("quarantine"), items->get_array().size());
    for (const auto& item : items->get_array()) {
      held += 1;
      const auto item_name = member_string(item, "name").value_or("");
      const bool chosen = args.all || std::find(args.names.begin(), args.names.end(), item_name) !=
                                          args.names.end();
      if (!approving || chosen) print_item(item, args.diff || approving, colour);
      if (chosen)
        if (auto offered = member_string(item, "offered")) expected[item_name] = *offered;
    }
  }
  if (!approving) {
    if (held == 0)
      print_visible(stdout, "nothing is held back{}\n",
                    args.target.empty() ? "" : " of " + args.target);
    else
      fmt::print("approve with `mcpmux trust SERVER NAME...` or `mcpmux trust SERVER --all`\n");
    return exit_status::ok;
  }
  json::object approve{{"server", args.target}, {"expected", std::move(expected)}};
  if (args.all) {
    approve["all"] = true;
  } else {
    json::array names;
    for (const auto& n : args.names) names.push_back(json::string(n));
    approve["names"] = std::move(names);
  }
  auto done = client->request("mcpmux/trust", std::move(approve));
  if (!done) return done.error();
  if (args.json) {
    print_pretty(*done);
    return exit_status::ok;
  }
  auto names_of = [&](std::string_view key) {
    std::string out;
    if (const auto* a = member(*done, key); a && a->is_array())
      for (const auto& n : a->get_array())
        if (n.is_string()) out += (out.empty() ? "" : ", ") + std::string(n.get_string());
    return out;
  };
  const auto approved = names_of("approved"), skipped = names_of("skipped"),
             not_held = names_of("not_held");
  print_visible(stdout, "approved: {}\n", approved.empty() ? "nothing" : approved);
  if (args.all) print_visible(stdout, "{} is trusted\n", args.target);
  if (!skipped.empty())
    print_visible(stderr, "not approved, changed again since it was shown: {} (run again)\n",
                  skipped);
  if (!not_held.empty()) return fail("not held back: " + not_held);
  return skipped.empty() ? exit_status::ok : exit_status::failure;
}

}  // namespace mcpmux::cli
