#include "config/expand.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "base/redact.hpp"
#include "config/names.hpp"
#include "config/secrets.hpp"

namespace mcpmux {

using names::is_var_name;

// Errors are reported through `error` (first one only) and the offending text is kept literally
// so the public expand_vars, which cannot fail, still returns something sensible.
void expand_into(std::string_view in, env_lookup lookup, std::string& out,
                 std::vector<std::string>& undefined, std::string* error, int depth_left,
                 const secret_resolver* secrets) {
  auto set_error = [&](std::string msg) {
    if (error && error->empty()) *error = std::move(msg);
  };
  std::size_t i = 0;
  while (i < in.size()) {
    const char c = in[i];
    if (c != '$' || i + 1 == in.size()) {
      out += c;
      ++i;
      continue;
    }
    if (in[i + 1] == '$') {
      out += '$';
      i += 2;
      continue;
    }
    if (in[i + 1] != '{') {  // a lone `$` (e.g. in a regex or a price) is kept as written
      out += '$';
      ++i;
      continue;
    }
    const std::size_t j = names::closing_brace(in, i, true);
    if (j == std::string_view::npos) {
      set_error(fmt::format("unterminated \"${{\" at offset {}", i));
      out.append(in.substr(i));
      return;
    }
    const std::string_view body = in.substr(i + 2, j - i - 2);
    if (body.substr(0, 7) == "secret:") {
      const auto name = body.substr(7);
      std::string why;
      std::optional<std::string> value;
      if (!is_secret_name(name))
        why = fmt::format(
            "invalid secret reference \"${{{}}}\" (expected ${{secret:NAME}}, NAME of "
            "[A-Za-z0-9_.-])",
            body);
      else if (!secrets)
        why = "${secret:NAME} cannot be used here";
      else
        value = (*secrets)(name, why);
      if (value) {
        add_secret(*value);
        out += *value;
      } else {
        set_error(std::move(why));
        out.append(in.substr(i, j + 1 - i));
      }
      i = j + 1;
      continue;
    }
    const std::size_t sep = body.find(":-");
    const std::string_view name = body.substr(0, sep);
    if (!is_var_name(name)) {
      set_error(
          fmt::format("invalid variable reference \"${{{}}}\" (expected ${{NAME}} or "
                      "${{NAME:-default}})",
                      body));
      out.append(in.substr(i, j + 1 - i));
      i = j + 1;
      continue;
    }
    const std::optional<std::string> value = lookup(name);
    if (sep != std::string_view::npos) {
      // Like the shell's `:-`: an empty variable is as good as an unset one.
      if (value && !value->empty()) {
        out += *value;
      } else if (depth_left == 0) {
        // Defaults recurse; a bound keeps a pathological value from exhausting the stack.
        set_error("${...:-default} nested too deeply");
        out.append(in.substr(i, j + 1 - i));
      } else {
        expand_into(body.substr(sep + 2), lookup, out, undefined, error, depth_left - 1, secrets);
      }
    } else if (value) {
      out += *value;
    } else if (std::find(undefined.begin(), undefined.end(), name) == undefined.end()) {
      undefined.emplace_back(name);
    }
    i = j + 1;
  }
}

std::optional<std::string> process_env(std::string_view name) {
  const char* v = std::getenv(std::string(name).c_str());
  if (!v) return std::nullopt;
  return std::string(v);
}

std::string expand_vars(std::string_view in, env_lookup lookup,
                        std::vector<std::string>* undefined) {
  std::string out;
  std::vector<std::string> missing;
  expand_into(in, lookup ? lookup : process_env, out, missing, nullptr);
  if (undefined) undefined->insert(undefined->end(), missing.begin(), missing.end());
  return out;
}

std::string escape_dollars(std::string_view s) {
  std::string out;
  for (char c : s) {
    out += c;
    if (c == '$') out += '$';
  }
  return out;
}

}  // namespace mcpmux
