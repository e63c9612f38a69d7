#include "core/trust.hpp"

#include <algorithm>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <cctype>
#include <cstdint>
#include <map>
#include <unordered_map>

#include "base/text.hpp"

namespace mcpmux {
namespace {

void write_canonical(const json::value& v, std::string& out) {
  if (const auto* o = v.if_object()) {
    std::vector<const json::key_value_pair*> fields;
    fields.reserve(o->size());
    for (const auto& kv : *o) fields.push_back(&kv);
    std::sort(fields.begin(), fields.end(),
              [](const auto* a, const auto* b) { return a->key() < b->key(); });
    out += '{';
    for (const auto* kv : fields) {
      if (out.back() != '{') out += ',';
      out += json::serialize(json::string_view(kv->key()));
      out += ':';
      write_canonical(kv->value(), out);
    }
    out += '}';
  } else if (const auto* a = v.if_array()) {
    out += '[';
    for (const auto& e : *a) {
      if (out.back() != '[') out += ',';
      write_canonical(e, out);
    }
    out += ']';
  } else {
    out += json::serialize(v);
  }
}

// The leaves of a definition as (field path, text): strings as they read, other values as JSON.
void flatten(const json::value& v, const std::string& path,
             std::map<std::string, std::string>& out) {
  if (const auto* o = v.if_object()) {
    if (o->empty() && !path.empty()) out[path] = "{}";
    for (const auto& kv : *o)
      flatten(kv.value(), path.empty() ? std::string(kv.key()) : path + "." + std::string(kv.key()),
              out);
  } else if (const auto* a = v.if_array()) {
    if (a->empty() && !path.empty()) out[path] = "[]";
    for (std::size_t i = 0; i < a->size(); ++i)
      flatten((*a)[i], path + "[" + std::to_string(i) + "]", out);
  } else if (const auto* s = v.if_string()) {
    out[path] = std::string(*s);
  } else {
    out[path] = json::serialize(v);
  }
}

// Words, runs of spaces and single punctuation marks, each a token of its own: the diff keeps the
// spacing, and "notes." against "notes," differs in the mark only.
std::vector<std::string_view> tokens(std::string_view text) {
  enum class kind { space, word, mark };
  auto kind_of = [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isspace(c)) return kind::space;
    if (std::isalnum(c) || c == '_' || c >= 0x80) return kind::word;
    return kind::mark;
  };
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < text.size()) {
    const auto k = kind_of(text[i]);
    std::size_t j = i + 1;
    if (k != kind::mark)
      while (j < text.size() && kind_of(text[j]) == k) ++j;
    out.push_back(text.substr(i, j - i));
    i = j;
  }
  return out;
}

void add_run(std::vector<diff_run>& runs, char op, std::string_view text) {
  if (text.empty()) return;
  if (!runs.empty() && runs.back().op == op)
    runs.back().text += text;
  else
    runs.push_back({op, std::string(text)});
}

// A word diff by longest common subsequence, after the common head and tail are set aside (an
// edit in a long description costs the size of the edit). Beyond a million cells the middle is
// shown as replaced whole.
std::vector<diff_run> word_diff(std::string_view was, std::string_view now) {
  const auto a = tokens(was), b = tokens(now);
  const auto [head, tail] = common_ends(a, b);
  std::vector<diff_run> runs;
  for (std::size_t i = 0; i < head; ++i) add_run(runs, '=', a[i]);
  const std::size_t n = a.size() - head - tail, m = b.size() - head - tail;
  if (n * m > 1000000) {
    for (std::size_t i = 0; i < n; ++i) add_run(runs, '-', a[head + i]);
    for (std::size_t j = 0; j < m; ++j) add_run(runs, '+', b[head + j]);
  } else {
    // lcs[i][j]: the longest common subsequence of a's middle from i and b's middle from j.
    std::vector<std::uint32_t> lcs((n + 1) * (m + 1), 0);
    auto at = [&](std::size_t i, std::size_t j) -> std::uint32_t& { return lcs[i * (m + 1) + j]; };
    for (std::size_t i = n; i-- > 0;)
      for (std::size_t j = m; j-- > 0;)
        at(i, j) = a[head + i] == b[head + j] ? at(i + 1, j + 1) + 1
                                              : std::max(at(i + 1, j), at(i, j + 1));
    std::size_t i = 0, j = 0;
    while (i < n || j < m) {
      // (What went comes before what came, as in a word diff of git.)
      if (i < n && j < m && a[head + i] == b[head + j]) {
        add_run(runs, '=', a[head + i++]);
        ++j;
      } else if (i < n && (j == m || at(i + 1, j) >= at(i, j + 1))) {
        add_run(runs, '-', a[head + i++]);
      } else {
        add_run(runs, '+', b[head + j++]);
      }
    }
  }
  for (std::size_t i = a.size() - tail; i < a.size(); ++i) add_run(runs, '=', a[i]);
  return runs;
}

}  // namespace

bool pinned_collection(collection c) {
  return c != collection::resources;
}

std::string canonical_definition(const json::object& item, collection c) {
  const auto identity = info(c).identity;
  json::object rest;
  for (const auto& kv : item)
    if (kv.key() != identity && kv.key() != "_meta") rest.emplace(kv.key(), kv.value());
  std::string out;
  write_canonical(rest, out);
  return out;
}

std::string_view to_string(change_kind k) {
  switch (k) {
    case change_kind::changed:
      return "changed";
    case change_kind::renamed:
      return "renamed";
    case change_kind::added:
      return "added";
    case change_kind::untrusted:
      return "untrusted";
  }
  return "unknown";
}

trust_verdict judge(const pin_book& pins, bool trusted, const server_settings& settings,
                    const std::array<const std::vector<json::object>*, collection_count>& lists) {
  trust_verdict v;
  v.trust_server = !trusted && !settings.trust_ask;
  auto decide = [&](trust_item item) {
    if (settings.on_change == change_policy::quarantine) {
      v.held[static_cast<std::size_t>(item.c)].insert(item.name);
      v.quarantined.push_back(std::move(item));
    } else {
      v.pin.push_back({{item.c, item.name}, item.offered});
      v.accepted.push_back(std::move(item));
    }
  };
  for (std::size_t ci = 0; ci < collection_count; ++ci) {
    const auto c = static_cast<collection>(ci);
    if (!pinned_collection(c) || !lists[ci]) continue;
    const auto identity = info(c).identity;
    // Pinned definitions of this collection by text, for renames (built when first needed).
    std::unordered_map<std::string_view, std::string_view> by_definition;
    bool indexed = false;
    for (const auto& item : *lists[ci]) {
      const auto* id = item.if_contains(identity);
      if (!id || !id->is_string()) continue;  // the pager keeps none such; nothing to pin
      std::string name(id->get_string());
      std::string offered = canonical_definition(item, c);
      auto it = pins.find({c, name});
      if (it != pins.end() && it->second == offered) continue;
      if (!trusted && !settings.trust_ask) {
        v.pin.push_back({{c, std::move(name)}, std::move(offered)});  // trust on first use
      } else if (it != pins.end()) {
        decide({c, std::move(name), change_kind::changed, "", it->second, std::move(offered)});
      } else if (!trusted) {
        v.held[ci].insert(name);
        v.quarantined.push_back(
            {c, std::move(name), change_kind::untrusted, "", "", std::move(offered)});
      } else {
        if (!indexed) {
          for (auto p = pins.lower_bound({c, ""}); p != pins.end() && p->first.first == c; ++p)
            by_definition.emplace(p->second, p->first.second);
          indexed = true;
        }
        auto same = by_definition.find(offered);
        if (same != by_definition.end())
          decide({c, std::move(name), change_kind::renamed, std::string(same->second),
                  std::string(same->first), std::move(offered)});
        else
          decide({c, std::move(name), change_kind::added, "", "", std::move(offered)});
      }
    }
  }
  return v;
}

std::vector<field_diff> diff_definitions(std::string_view pinned, std::string_view offered) {
  std::map<std::string, std::string> was, now;
  boost::system::error_code ec;
  if (auto v = json::parse(pinned, ec); !ec) flatten(v, "", was);
  if (auto v = json::parse(offered, ec); !ec) flatten(v, "", now);
  std::vector<field_diff> out;
  auto a = was.begin();
  auto b = now.begin();
  while (a != was.end() || b != now.end()) {
    if (b == now.end() || (a != was.end() && a->first < b->first)) {
      out.push_back({a->first, {{'-', a->second}}});
      ++a;
    } else if (a == was.end() || b->first < a->first) {
      out.push_back({b->first, {{'+', b->second}}});
      ++b;
    } else {
      if (a->second != b->second) out.push_back({a->first, word_diff(a->second, b->second)});
      ++a, ++b;
    }
  }
  return out;
}

}  // namespace mcpmux
