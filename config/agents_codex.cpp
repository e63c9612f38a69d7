// Codex CLI's config.toml: its servers are `[mcp_servers.NAME]` tables (with sub-tables such
// as `[mcp_servers.NAME.env]`). They are found as a run of lines, read with toml++ into the
// `mcpServers` JSON shape the importer knows, and written back as tables; every other line of
// the file is kept as it is.
#include <toml++/toml.h>

#include <boost/json.hpp>

#include "base/text.hpp"
#include "config/agents_codex.hpp"
#include "config/import.hpp"
#include "config/names.hpp"

namespace mcpmux::codex {
namespace {

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// The dotted key of a table header line (`[a.b]`, `[[a]]`), "" for other lines.
std::string header_key(std::string_view l) {
  l = trimmed(l);
  if (l.size() < 2 || l.front() != '[') return {};
  const auto close = l.rfind(']');
  if (close == std::string_view::npos) return {};
  auto inner = l.substr(l.starts_with("[[") ? 2 : 1);
  inner = inner.substr(0, inner.find(']'));
  // Whitespace around the dots goes; inside a quoted key it is part of the name.
  std::string key;
  char quote = 0;
  for (char c : trimmed(inner)) {
    if (quote && c == quote)
      quote = 0;
    else if (!quote && (c == '"' || c == '\''))
      quote = c;
    else if (!quote && (c == ' ' || c == '\t'))
      continue;
    key += c;
  }
  return key;
}

// The server a header belongs to: NAME of `mcp_servers.NAME[...]` (quotes removed); nullopt
// for another table.
std::optional<std::string> server_of(const std::string& key) {
  constexpr std::string_view prefix = "mcp_servers.";
  if (!key.starts_with(prefix)) return std::nullopt;
  std::string_view rest(key);
  rest.remove_prefix(prefix.size());
  if (!rest.empty() && (rest.front() == '"' || rest.front() == '\'')) {
    const auto q = rest.find(rest.front(), 1);
    if (q == std::string_view::npos) return std::nullopt;
    return std::string(rest.substr(1, q - 1));
  }
  return std::string(rest.substr(0, rest.find('.')));
}

bool blank_or_comment(std::string_view l) {
  l = trimmed(l);
  return l.empty() || l.front() == '#';
}

// The bytes of `text` from line `first` to the line before `after` (the end when none), less
// the blank and comment lines that lead into the next table. `lines` are views into `text`.
jsonc::span table_run(std::string_view text, const std::vector<std::string_view>& lines,
                      std::size_t first, std::optional<std::size_t> after) {
  std::size_t last = after ? *after : lines.size();
  while (last > first + 1 && blank_or_comment(lines[last - 1])) --last;
  const auto offset = [&](std::string_view l) {
    return static_cast<std::size_t>(l.data() - text.data());
  };
  return {offset(lines[first]), offset(lines[last - 1]) + lines[last - 1].size()};
}

boost::json::value to_json(const toml::node& n) {
  if (auto s = n.as_string()) return boost::json::value(s->get());
  if (auto i = n.as_integer()) return boost::json::value(i->get());
  if (auto b = n.as_boolean()) return boost::json::value(b->get());
  if (auto f = n.as_floating_point()) return boost::json::value(f->get());
  if (auto a = n.as_array()) {
    boost::json::array out;
    for (const auto& e : *a) out.push_back(to_json(e));
    return out;
  }
  if (auto t = n.as_table()) {
    boost::json::object out;
    for (const auto& [k, v] : *t) out[std::string(k.str())] = to_json(v);
    return out;
  }
  return nullptr;
}

}  // namespace

region find_servers(std::string_view text) {
  region out;
  try {
    (void)toml::parse(text);
  } catch (const toml::parse_error& e) {
    out.error = "line " + std::to_string(e.source().begin.line) + ", column " +
                std::to_string(e.source().begin.column) + ": " + std::string(e.description());
    return out;
  }
  const auto ls = split_lines(text);
  std::optional<std::size_t> first, after;  // line indexes
  for (std::size_t i = 0; i < ls.size(); ++i) {
    const auto key = header_key(ls[i]);
    if (key.empty()) {
      // `mcp_servers.x.command = …` or `mcp_servers = {…}` outside the tables: not a form this
      // rewrites.
      if (!first && trimmed(ls[i]).starts_with("mcp_servers")) {
        out.error = "its mcp_servers are not written as [mcp_servers.NAME] tables";
        return out;
      }
      continue;
    }
    const bool ours = server_of(key).has_value();
    if (ours && after) {
      out.error = "its [mcp_servers.*] tables are not together (another table is between them)";
      return out;
    }
    if (ours && !first) first = i;
    if (!ours && first && !after) after = i;
  }
  if (first) out.span = table_run(text, ls, *first, after);
  return out;
}

std::optional<jsonc::span> find_server(std::string_view text, jsonc::span run,
                                       std::string_view name) {
  const auto ls = split_lines(text.substr(run.begin, run.end - run.begin));
  std::optional<std::size_t> first, after;
  for (std::size_t i = 0; i < ls.size(); ++i) {
    const auto key = header_key(ls[i]);
    if (key.empty()) continue;
    const bool mine = server_of(key) == std::string(name);
    if (mine && !first) first = i;
    if (!mine && first && !after) after = i;
  }
  if (!first) return std::nullopt;
  return table_run(text, ls, *first, after);
}

boost::json::object entries(std::string_view run_text, std::vector<std::string>& notes) {
  boost::json::object out;
  toml::table root;
  try {
    root = toml::parse(run_text);
  } catch (const toml::parse_error&) {
    return out;
  }
  const auto* servers = root["mcp_servers"].as_table();
  if (!servers) return out;
  for (const auto& [k, v] : *servers) {
    const std::string name(k.str());
    const auto* t = v.as_table();
    if (!t) continue;
    boost::json::object e;
    for (const auto& [key, val] : *t) {
      const std::string_view kk = key.str();
      if (kk == "command" || kk == "args" || kk == "env" || kk == "cwd" || kk == "url" ||
          kk == "enabled") {
        e[std::string(kk)] = to_json(val);
      } else if (kk == "http_headers") {
        e["headers"] = to_json(val);
      } else if (kk == "bearer_token_env_var" && val.as_string()) {
        auto& h = e["headers"];
        if (!h.is_object()) h = boost::json::object{};
        h.as_object()["Authorization"] = "Bearer ${" + val.as_string()->get() + "}";
      } else if (kk == "tool_timeout_sec" && (val.as_integer() || val.as_floating_point())) {
        e["timeout"] = to_json(val);  // seconds, as the importer reads `timeout`
      } else {
        notes.push_back("server \"" + name + "\": " + std::string(kk) +
                        ": not carried over (a Codex setting)");
      }
    }
    if (e.contains("url") && !e.contains("type")) e["type"] = "http";
    out[name] = std::move(e);
  }
  return out;
}

std::string table(std::string_view name, const boost::json::object& entry) {
  const auto key = !name.empty() && names::is_name(name) ? std::string(name) : toml_quote(name);
  std::string out = "[mcp_servers." + key + "]\n";
  std::string sub;
  for (const auto& [k, v] : entry) {
    if (k == "type" || k == "source") continue;
    if (const auto* o = v.if_object()) {
      const std::string tk = k == "headers" ? "http_headers" : std::string(k);
      sub += "\n[mcp_servers." + key + "." + tk + "]\n";
      for (const auto& [hk, hv] : *o)
        sub += (names::is_name(hk) ? std::string(hk) : toml_quote(hk)) + " = " +
               toml_quote(hv.is_string() ? std::string_view(hv.get_string()) : "") + "\n";
      continue;
    }
    out += std::string(k) + " = ";
    if (const auto* s = v.if_string()) {
      out += toml_quote(*s);
    } else if (const auto* a = v.if_array()) {
      out += "[";
      for (std::size_t i = 0; i < a->size(); ++i) {
        if (i) out += ", ";
        out += (*a)[i].is_string() ? toml_quote((*a)[i].get_string())
                                   : boost::json::serialize((*a)[i]);
      }
      out += "]";
    } else {
      out += boost::json::serialize(v);
    }
    out += "\n";
  }
  out += sub;
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace mcpmux::codex
