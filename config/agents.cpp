#include "config/agents.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "core/protocol/json_rpc.hpp"

namespace mcpmux {
namespace {

std::string join_path(const std::string& dir, std::string_view rel) {
  if (dir.empty() || dir.back() == '/') return dir + std::string(rel);
  return dir + "/" + std::string(rel);
}

std::string basename(std::string_view p) {
  const auto slash = p.rfind('/');
  return std::string(slash == std::string_view::npos ? p : p.substr(slash + 1));
}

std::string parent_name(std::string_view p) {
  const auto slash = p.rfind('/');
  if (slash == std::string_view::npos || slash == 0) return {};
  return basename(p.substr(0, slash));
}

std::vector<std::string_view> lines_of(std::string_view t) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < t.size()) {
    auto j = t.find('\n', i);
    if (j == std::string_view::npos) j = t.size();
    out.push_back(t.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

}  // namespace

bool runs_mcpmux(const boost::json::value& entry) {
  const auto* e = entry.if_object();
  if (!e) return false;
  const auto* args = e->if_contains("args");
  return basename(string_member(*e, "command")) == "mcpmux" && args && args->is_array() &&
         !args->get_array().empty() && args->get_array()[0] == "connect";
}

std::vector<agent_file> known_agent_files(const std::string& home, const std::string& config_home,
                                          const std::string& cwd) {
  const std::vector<std::string> mcp{"mcpServers"};
  std::vector<agent_file> out{
      {"claude-desktop", "Claude Desktop",
       join_path(config_home, "Claude/claude_desktop_config.json"), mcp},
      {"claude-code", "Claude Code (user)", join_path(home, ".claude.json"), mcp},
      {"cursor", "Cursor", join_path(home, ".cursor/mcp.json"), mcp},
      {"windsurf", "Windsurf", join_path(home, ".codeium/windsurf/mcp_config.json"), mcp},
      {"vscode",
       "VS Code (user)",
       join_path(config_home, "Code/User/mcp.json"),
       {"servers"},
       agent_shape::vscode},
      {"vscode-settings",
       "VS Code (user settings)",
       join_path(config_home, "Code/User/settings.json"),
       {"mcp", "servers"},
       agent_shape::vscode},
      {"gemini", "Gemini CLI", join_path(home, ".gemini/settings.json"), mcp},
      {"claude-code-project", "Claude Code (project)", join_path(cwd, ".mcp.json"), mcp,
       agent_shape::mcp_servers, true},
      {"cursor-project", "Cursor (project)", join_path(cwd, ".cursor/mcp.json"), mcp,
       agent_shape::mcp_servers, true},
      {"vscode-workspace",
       "VS Code (workspace)",
       join_path(cwd, ".vscode/mcp.json"),
       {"servers"},
       agent_shape::vscode,
       true},
      {"gemini-project", "Gemini CLI (project)", join_path(cwd, ".gemini/settings.json"), mcp,
       agent_shape::mcp_servers, true},
  };
  return out;
}

agent_file agent_file_for_path(const std::string& path) {
  agent_file f{"file", "a file", path, {"mcpServers"}};
  const auto name = basename(path);
  const auto dir = parent_name(path);
  if ((dir == ".vscode" && name == "mcp.json") || (dir == "User" && name == "mcp.json")) {
    f = {"vscode", "VS Code", path, {"servers"}, agent_shape::vscode};
  } else if (dir == "User" && name == "settings.json") {
    f = {"vscode-settings", "VS Code settings", path, {"mcp", "servers"}, agent_shape::vscode};
  }
  return f;
}

server_list locate_servers(std::string_view text, const agent_file& file) {
  server_list out;
  auto found = jsonc::find(text, file.keys);
  if (!found.error.empty()) {
    out.error = found.error;
    return out;
  }
  out.span = found.value;
  if (!out.span) return out;
  // Already adopted: an entry runs `mcpmux connect` (beside it, at most what could not be
  // carried over).
  boost::system::error_code ec;
  boost::json::parse_options opt;
  opt.allow_comments = true;
  opt.allow_trailing_commas = true;
  const auto v = boost::json::parse(text.substr(out.span->begin, out.span->end - out.span->begin),
                                    ec, {}, opt);
  if (const auto* o = ec ? nullptr : v.if_object())
    for (const auto& [name, entry] : *o)
      if (runs_mcpmux(entry)) out.adopted = true;
  return out;
}

std::string mcpmux_entry(const agent_file& file, const std::string& mcpmux_path,
                         const std::string& profile, const std::string& indent) {
  const std::string in1 = indent + "  ", in2 = indent + "    ";
  boost::json::array args{"connect"};
  if (!profile.empty()) {
    args.emplace_back("--profile");
    args.emplace_back(profile);
  }
  std::string out = "{\n" + in1 + "\"mcpmux\": {\n";
  if (file.shape == agent_shape::vscode) out += in2 + "\"type\": \"stdio\",\n";
  out += in2 + "\"command\": " + boost::json::serialize(boost::json::value(mcpmux_path)) + ",\n";
  out += in2 + "\"args\": " + boost::json::serialize(args) + "\n";
  out += in1 + "}\n" + indent + "}";
  return out;
}

std::string replace_span(std::string_view text, jsonc::span span, std::string_view replacement) {
  std::string out(text.substr(0, span.begin));
  out += replacement;
  out += text.substr(span.end);
  return out;
}

std::string line_diff(std::string_view before, std::string_view after) {
  if (before == after) return {};
  const auto a = lines_of(before), b = lines_of(after);
  // The changed middle: a common head and a common tail around it (one change per adopt).
  std::size_t head = 0;
  while (head < a.size() && head < b.size() && a[head] == b[head]) ++head;
  std::size_t tail = 0;
  while (tail < a.size() - head && tail < b.size() - head &&
         a[a.size() - 1 - tail] == b[b.size() - 1 - tail])
    ++tail;
  constexpr std::size_t context = 2;
  std::string out;
  const auto from = head > context ? head - context : 0;
  out += "@@ line " + std::to_string(from + 1) + " @@\n";
  for (std::size_t i = from; i < head; ++i) out += " " + std::string(a[i]) + "\n";
  for (std::size_t i = head; i < a.size() - tail; ++i) out += "-" + std::string(a[i]) + "\n";
  for (std::size_t i = head; i < b.size() - tail; ++i) out += "+" + std::string(b[i]) + "\n";
  for (std::size_t i = a.size() - tail; i < a.size() && i < a.size() - tail + context; ++i)
    out += " " + std::string(a[i]) + "\n";
  return out;
}

}  // namespace mcpmux
