// JSON Schema to TypeScript, as far as a model needs it to write a correct call: types, object
// properties and which are required, arrays and tuples, enums and consts as literal unions,
// anyOf/oneOf/allOf, nullable, local $refs inlined (a recursive one is `unknown`), property
// descriptions as doc comments. Everything else (formats, patterns, bounds) stays in the
// description the model also reads.
#include "protocol/tool_declarations.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <map>
#include <vector>

#include "base/text.hpp"

namespace json = boost::json;

namespace mcpmux::mcp {
namespace {

bool is_identifier(std::string_view s) {
  auto head = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$';
  };
  if (s.empty() || !head(s[0])) return false;
  for (char c : s)
    if (!head(c) && !(c >= '0' && c <= '9')) return false;
  return true;
}

// A property or member name: bare when JavaScript allows it, else a quoted string.
std::string key(std::string_view name) {
  return is_identifier(name) ? std::string(name) : json::serialize(json::string(name));
}

// A doc comment no description can end early: "*/" inside is broken up, lines are kept.
std::string doc_comment(std::string_view text, std::size_t limit, const std::string& indent) {
  std::string clipped = valid_utf8(text.size() > limit ? clip(text, limit) : std::string(text));
  std::string out = indent + "/**";
  const auto lines = split_lines(clipped);
  const bool one_line = lines.size() == 1;
  for (auto line : lines) {
    std::string safe;
    for (std::size_t i = 0; i < line.size(); ++i) {
      safe += line[i];
      if (line[i] == '*' && i + 1 < line.size() && line[i + 1] == '/') safe += '\\';
    }
    while (!safe.empty() && (safe.back() == ' ' || safe.back() == '\r')) safe.pop_back();
    out += one_line ? " " + safe : "\n" + indent + " * " + safe;
  }
  out += one_line ? " */\n" : "\n" + indent + " */\n";
  return out;
}

class schema_writer {
 public:
  schema_writer(const json::value& root, const declaration_limits& limits)
      : root_(root), limits_(limits) {}

  std::string type(const json::value& schema, std::size_t depth, const std::string& indent) {
    if (depth > limits_.depth) return "unknown";
    if (schema.is_bool()) return schema.as_bool() ? "unknown" : "never";
    const auto* s = schema.if_object();
    if (!s) return "unknown";
    std::string t = plain_type(*s, depth, indent);
    if (const auto* n = s->if_contains("nullable");
        n && n->is_bool() && n->as_bool() && t != "unknown" && t != "null")
      t = wrap(t) + " | null";
    return t;
  }

 private:
  std::string plain_type(const json::object& s, std::size_t depth, const std::string& indent) {
    if (const auto* ref = s.if_contains("$ref")) return referenced(*ref, depth, indent);
    if (const auto* c = s.if_contains("const")) return literal(*c);
    if (const auto* e = s.if_contains("enum"); e && e->is_array()) {
      std::vector<std::string> parts;
      for (const auto& v : e->as_array()) parts.push_back(literal(v));
      return joined(parts, " | ");
    }
    for (const char* word : {"anyOf", "oneOf"})
      if (const auto* alt = s.if_contains(word); alt && alt->is_array())
        return combined(alt->as_array(), " | ", depth, indent);
    if (const auto* all = s.if_contains("allOf"); all && all->is_array())
      return combined(all->as_array(), " & ", depth, indent);
    const auto* t = s.if_contains("type");
    if (t && t->is_array()) {
      std::vector<std::string> parts;
      for (const auto& one : t->as_array())
        if (one.is_string()) parts.push_back(named_type(one.as_string(), s, depth, indent));
      return joined(parts, " | ");
    }
    if (t && t->is_string()) return named_type(t->as_string(), s, depth, indent);
    if (s.contains("properties")) return object_type(s, depth, indent);
    if (s.contains("items")) return array_type(s, depth, indent);
    return "unknown";
  }

  std::string named_type(std::string_view t, const json::object& s, std::size_t depth,
                         const std::string& indent) {
    if (t == "string") return "string";
    if (t == "number" || t == "integer") return "number";
    if (t == "boolean") return "boolean";
    if (t == "null") return "null";
    if (t == "array") return array_type(s, depth, indent);
    if (t == "object") return object_type(s, depth, indent);
    return "unknown";
  }

  std::string array_type(const json::object& s, std::size_t depth, const std::string& indent) {
    const json::value* tuple = s.if_contains("prefixItems");
    const auto* items = s.if_contains("items");
    if (!tuple && items && items->is_array()) tuple = items;  // draft 7's tuple form
    if (tuple && tuple->is_array()) {
      std::vector<std::string> parts;
      for (const auto& item : tuple->as_array()) parts.push_back(type(item, depth + 1, indent));
      return "[" + joined(parts, ", ") + "]";
    }
    if (!items) return "unknown[]";
    return wrap(type(*items, depth + 1, indent)) + "[]";
  }

  std::string object_type(const json::object& s, std::size_t depth, const std::string& indent) {
    const auto* props = s.if_contains("properties");
    const auto* extra = s.if_contains("additionalProperties");
    const bool has_props = props && props->is_object() && !props->as_object().empty();
    std::map<std::string, bool, std::less<>> required;
    if (const auto* r = s.if_contains("required"); r && r->is_array())
      for (const auto& name : r->as_array())
        if (name.is_string()) required[std::string(name.as_string())] = true;
    const std::string inner = indent + "  ";
    std::string out = "{\n";
    if (has_props) {
      for (const auto& [name, schema] : props->as_object()) {
        if (const auto* d =
                schema.is_object() ? schema.as_object().if_contains("description") : nullptr;
            d && d->is_string())
          out += doc_comment(d->as_string(), limits_.description, inner);
        out += inner + key(name) + (required.contains(name) ? ": " : "?: ") +
               type(schema, depth + 1, inner) + ";\n";
      }
    }
    // Other keys: what additionalProperties allows; with named properties beside, `unknown`,
    // since TypeScript wants every property to fit the index signature's type.
    const bool closed = extra && extra->is_bool() && !extra->as_bool();
    if (!closed && (!has_props || (extra && !extra->is_bool())))
      out += inner + "[key: string]: " +
             (has_props || !extra ? std::string("unknown") : type(*extra, depth + 1, inner)) +
             ";\n";
    if (out == "{\n") return "{}";
    return out + indent + "}";
  }

  // Only "#/$defs/NAME" and "#/definitions/NAME" in the same schema; a ref already being
  // expanded (recursion) or any other is `unknown`.
  std::string referenced(const json::value& ref, std::size_t depth, const std::string& indent) {
    if (!ref.is_string() || !root_.is_object()) return "unknown";
    const std::string_view r = ref.as_string();
    for (std::string_view section : {"$defs", "definitions"}) {
      const std::string prefix = "#/" + std::string(section) + "/";
      if (!r.starts_with(prefix)) continue;
      const auto* defs = root_.as_object().if_contains(section);
      const auto* target = defs && defs->is_object()
                               ? defs->as_object().if_contains(r.substr(prefix.size()))
                               : nullptr;
      if (!target || open_refs_.contains(std::string(r))) return "unknown";
      open_refs_[std::string(r)] = true;
      auto t = type(*target, depth + 1, indent);
      open_refs_.erase(std::string(r));
      return t;
    }
    return "unknown";
  }

  std::string combined(const json::array& schemas, const char* sep, std::size_t depth,
                       const std::string& indent) {
    std::vector<std::string> parts;
    for (const auto& one : schemas) parts.push_back(wrap(type(one, depth + 1, indent)));
    return joined(parts, sep);
  }

  static std::string literal(const json::value& v) {
    if (v.is_string() || v.is_number() || v.is_bool() || v.is_null()) return json::serialize(v);
    return "unknown";
  }

  // A union or intersection inside an array type or another union: in parentheses.
  static std::string wrap(const std::string& t) {
    int nesting = 0;
    for (char c : t) {
      if (c == '{' || c == '[' || c == '(') ++nesting;
      if (c == '}' || c == ']' || c == ')') --nesting;
      if (nesting == 0 && (c == '|' || c == '&')) return "(" + t + ")";
    }
    return t;
  }

  static std::string joined(const std::vector<std::string>& parts, const char* sep) {
    if (parts.empty()) return "never";
    std::string out;
    for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
    return out;
  }

  const json::value& root_;
  const declaration_limits& limits_;
  std::map<std::string, bool, std::less<>> open_refs_;
};

// Arguments may be left out when the schema requires none.
bool arguments_optional(const json::value* schema) {
  const auto* s = schema ? schema->if_object() : nullptr;
  const auto* required = s ? s->if_contains("required") : nullptr;
  return !required || !required->is_array() || required->as_array().empty();
}

std::string signature(const declared_tool& t, const declaration_limits& limits) {
  const std::string indent = "    ";
  std::string doc = t.description;
  doc += (doc.empty() ? "" : "\n") + std::string("tools[\"") + t.exposed + "\"]";
  std::string args = "{}";
  if (t.input_schema)
    args = schema_writer(*t.input_schema, limits).type(*t.input_schema, 0, indent);
  std::string result = "string";
  if (t.output_schema)
    result = schema_writer(*t.output_schema, limits).type(*t.output_schema, 0, indent);
  return doc_comment(doc, limits.description, indent) + indent + key(t.tool) + "(args" +
         (arguments_optional(t.input_schema) ? "?" : "") + ": " + args + "): Promise<" + result +
         ">;\n";
}

}  // namespace

std::string typescript_declarations(std::span<const declared_tool> tools,
                                    const declaration_limits& limits) {
  struct entry {
    const declared_tool* tool;
    std::string text;
  };
  // Grouped by server, in the order given.
  std::vector<std::pair<std::string, std::vector<entry>>> servers;
  std::vector<std::string> left_out;
  std::size_t size = 0;
  for (const auto& t : tools) {
    auto text = signature(t, limits);
    if (size + text.size() > limits.total) {
      left_out.push_back(t.exposed);
      continue;
    }
    size += text.size();
    auto it = std::find_if(servers.begin(), servers.end(),
                           [&](const auto& s) { return s.first == t.server; });
    if (it == servers.end()) it = servers.insert(servers.end(), {t.server, {}});
    it->second.push_back({&t, std::move(text)});
  }
  std::string out = "interface Tools {\n";
  std::string flat;
  for (const auto& [server, list] : servers) {
    out += "  " + key(server) + ": {\n";
    for (const auto& [t, text] : list) {
      out += text;
      flat += "  " + json::serialize(json::string(t->exposed)) + ": Tools[" +
              json::serialize(json::string(server)) + "][" +
              json::serialize(json::string(t->tool)) + "];\n";
    }
    out += "  };\n";
  }
  out += "}\n\ndeclare const tools: Tools & {\n" + flat + "};\n";
  // The names left out, themselves bounded: a name is at most a line, and 1/16 of the room.
  if (!left_out.empty()) {
    out += "// " + std::to_string(left_out.size()) +
           " more not declared here (size limit), called as tools[\"NAME\"](args):";
    std::size_t named = 0, room = limits.total / 16;
    for (const auto& name : left_out) {
      if (name.size() + 1 > room) break;
      room -= name.size() + 1;
      out += " " + name;
      ++named;
    }
    if (named < left_out.size()) out += " …";
    out += "\n";
  }
  return out;
}

}  // namespace mcpmux::mcp
