#include "core/catalogue.hpp"

#include "base/random.hpp"
#include "config/filters.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <boost/json/serializer.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>

namespace mcpmux {
namespace {

// Writes exposed items into one JSON array: each item as json::serialize would write a copy of it
// with one member's value replaced (the exposed name or URI), without making that copy (at
// 10,000 tools the copies were most of a catalogue rebuild). One Boost.JSON serializer writes
// every key and value.
class list_writer {
 public:
  explicit list_writer(std::size_t expected_bytes) {
    out_.reserve(expected_bytes);
    out_ += '[';
  }

  /// Adds `item` with `key` set to `value`, and its description set to `description` when
  /// that is given.
  void add(const json::object& item, std::string_view key, std::string_view value,
           const std::string* description = nullptr) {
    if (!begins_.empty()) out_ += ',';
    begins_.push_back(out_.size());
    out_ += '{';
    bool first = true, replaced = false, described = false;
    const auto member = [&](std::string_view k, std::string_view v) {
      if (!first) out_ += ',';
      first = false;
      write(k);
      out_ += ':';
      write(v);
    };
    for (const auto& kv : item) {
      if (kv.key() == key) {
        member(key, value);
        replaced = true;
      } else if (description && kv.key() == "description") {
        member("description", *description);
        described = true;
      } else {
        if (!first) out_ += ',';
        first = false;
        write(kv.key());
        out_ += ':';
        sr_.reset(&kv.value());
        drain();
      }
    }
    // (json::object's operator[] appends a missing key)
    if (!replaced) member(key, value);
    if (description && !described) member("description", *description);
    out_ += '}';
  }

  /// The array and where each item starts in it.
  std::pair<std::string, std::vector<std::size_t>> finish() && {
    out_ += ']';
    return {std::move(out_), std::move(begins_)};
  }

 private:
  void write(std::string_view s) {
    sr_.reset(s);
    drain();
  }
  void drain() {
    while (!sr_.done()) out_.append(sr_.read(buf_, sizeof buf_));
  }

  std::string out_;
  std::vector<std::size_t> begins_;
  json::serializer sr_;
  char buf_[4096];
};

}  // namespace

std::array<bool, collection_count> catalogue::rebuild(const std::vector<catalogue_source>& sources,
                                                      const naming_rules& rules,
                                                      std::vector<std::string>& warnings,
                                                      const catalogue_view* view) {
  std::array<bool, collection_count> changed{};
  changed[static_cast<std::size_t>(collection::tools)] =
      rebuild_named(collection::tools, sources, rules, warnings, view);
  changed[static_cast<std::size_t>(collection::prompts)] =
      rebuild_named(collection::prompts, sources, rules, warnings, view);
  changed[static_cast<std::size_t>(collection::resources)] =
      rebuild_uris(collection::resources, sources, warnings, view);
  changed[static_cast<std::size_t>(collection::resource_templates)] =
      rebuild_uris(collection::resource_templates, sources, warnings, view);
  return changed;
}

namespace {

// What a tool's annotations say, for the `@read-only`… filters (the spec's defaults for a hint
// left out, or not a boolean).
tool_hints hints_of(const json::object& tool) {
  const auto* a = tool.if_contains("annotations");
  const auto* ann = a ? a->if_object() : nullptr;
  const auto hint = [&](std::string_view key) -> std::optional<bool> {
    const auto* v = ann ? ann->if_contains(key) : nullptr;
    return v && v->is_bool() ? std::optional<bool>(v->get_bool()) : std::nullopt;
  };
  tool_hints h;
  h.read_only = hint("readOnlyHint") == true;
  h.destructive = !h.read_only && hint("destructiveHint") != false;
  h.idempotent = hint("idempotentHint") == true;
  h.open_world = hint("openWorldHint") != false;
  return h;
}

// Whether a profile's view shows an item of `server` exposed as `exposed` (`hints`: a tool's).
bool view_shows(const catalogue_view* view, collection c, std::string_view server,
                std::string_view exposed, const tool_hints* hints = nullptr) {
  if (!view) return true;
  if (view->servers && !shown_by(*view->servers, server)) return false;
  const auto* rules = view->shown[static_cast<std::size_t>(c)];
  return !rules || shown_by(*rules, exposed, hints);
}

// Whether a source shows one of its items: not hidden by its filters, not held back by trust.
bool source_shows(const catalogue_source& s, std::size_t ci, std::string_view original,
                  const tool_hints* hints = nullptr) {
  if (s.shown[ci] && !shown_by(*s.shown[ci], original, hints)) return false;
  return !s.held[ci] || s.held[ci]->empty() || !s.held[ci]->count(std::string(original));
}

const std::string* description_for(const catalogue_view* view, collection c,
                                   std::string_view exposed) {
  if (!view || !view->descriptions || c != collection::tools) return nullptr;
  auto it = view->descriptions->find(std::string(exposed));
  return it == view->descriptions->end() ? nullptr : &it->second;
}

}  // namespace

// Tools and prompts: names under the naming contract (prefix, separator, sanitised, capped).
bool catalogue::rebuild_named(collection c, const std::vector<catalogue_source>& sources,
                              const naming_rules& rules, std::vector<std::string>& warnings,
                              const catalogue_view* view) {
  const auto ci = static_cast<std::size_t>(c);
  std::vector<naming_input> inputs;
  std::vector<const json::object*> defs;
  std::size_t count = 0;
  for (const auto& s : sources) count += s.lists[ci]->size();
  inputs.reserve(count);
  defs.reserve(count);
  // Tools are also filtered by their annotations (`@read-only`), on the server and the profile.
  std::vector<tool_hints> hints;
  const bool tools = c == collection::tools;
  if (tools) hints.reserve(count);
  for (const auto& s : sources) {
    for (const auto& t : *s.lists[ci]) {
      const auto h = tools ? hints_of(t) : tool_hints{};
      if (!source_shows(s, ci, t.at("name").get_string(), tools ? &h : nullptr)) continue;
      inputs.push_back({s.server, s.prefix, std::string(t.at("name").get_string())});
      defs.push_back(&t);
      if (tools) hints.push_back(h);
    }
  }
  std::vector<naming_collision> collisions;
  auto named = assign_tool_names(inputs, rules, &collisions);
  // Each collision is reported once, not at every rebuild.
  for (const auto& col : collisions)
    if (reported_.insert(std::string(to_string(c)) + "\n" + col.loser + "\n" + col.renamed).second)
      warnings.push_back(
          fmt::format("{} name collision: {} and {} both map to \"{}\"; {} is exposed as \"{}\"",
                      to_string(c), col.winner, col.loser, col.exposed, col.loser, col.renamed));

  // (Room for ~128 bytes an item: growing a megabyte string by doubling costs more than that.)
  list_writer items(std::max(lists_[ci].joined->size(), 128 * count));
  routes_t routes;  // in name order, as named
  routes.reserve(named.size());
  for (auto& n : named) {
    auto& in = inputs[n.index];
    if (!view_shows(view, c, in.server, n.exposed, tools ? &hints[n.index] : nullptr)) continue;
    items.add(*defs[n.index], "name", n.exposed, description_for(view, c, n.exposed));
    routes.emplace_back(std::move(n.exposed), route{std::move(in.server), std::move(in.original)});
  }
  return install(c, std::move(items).finish(), std::move(routes));
}

// Resources and templates: URIs unchanged; a URI two servers share is exposed for the later
// server (in name order) as mcpmux://<server>/<uri>.
bool catalogue::rebuild_uris(collection c, const std::vector<catalogue_source>& sources,
                             std::vector<std::string>& warnings, const catalogue_view* view) {
  const auto ci = static_cast<std::size_t>(c);
  const std::string_view key = info(c).identity;
  list_writer items(lists_[ci].joined->size());
  routes_t routes;
  std::unordered_set<std::string> seen;
  for (const auto& s : sources) {
    for (const auto& r : *s.lists[ci]) {
      if (!source_shows(s, ci, r.at(key).get_string())) continue;
      std::string original(r.at(key).get_string());
      std::string exposed = original;
      if (!seen.insert(exposed).second) {
        exposed = "mcpmux://" + s.server + "/" + original;
        if (reported_.insert(std::string(to_string(c)) + "\n" + exposed).second)
          warnings.push_back(fmt::format(
              "{} \"{}\" is offered by {} and another server; {}'s is exposed as \"{}\"", key,
              original, s.server, s.server, exposed));
      }
      seen.insert(exposed);
      if (!view_shows(view, c, s.server, exposed)) continue;
      items.add(r, key, exposed);
      routes.emplace_back(std::move(exposed), route{s.server, std::move(original)});
    }
  }
  // By URI for lookups; of one URI listed twice (an alias taken already), the first.
  std::stable_sort(routes.begin(), routes.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  routes.erase(std::unique(routes.begin(), routes.end(),
                           [](const auto& a, const auto& b) { return a.first == b.first; }),
               routes.end());
  return install(c, std::move(items).finish(), std::move(routes));
}

namespace {
// The hash's start, this process's own: a server that names its tools cannot choose names that
// collide (each collision makes a lookup compare one more text).
std::uint64_t name_hash_seed() {
  static const std::uint64_t seed = [] {
    auto s =
        static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    if (const auto hex = random_hex(8)) s ^= std::stoull(*hex, nullptr, 16);
    return s;
  }();
  return seed;
}

// A name's hash for catalogue::list::by_hash: eight bytes a step (names are short; a general
// hash costs ~70 instructions on one of seven bytes).
std::uint64_t name_hash(std::string_view s) {
  constexpr std::uint64_t k = 0x9E3779B97F4A7C15u;
  std::uint64_t h = name_hash_seed() ^ (s.size() * k);
  std::size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = (h ^ w) * k;
    h ^= h >> 29;
  }
  std::uint64_t tail = 0;
  if (i < s.size()) std::memcpy(&tail, s.data() + i, s.size() - i);
  h = (h ^ tail) * k;
  return h ^ (h >> 32);
}
}  // namespace

bool catalogue::install(collection c, std::pair<std::string, std::vector<std::size_t>> items,
                        routes_t routes) {
  auto& l = lists_[static_cast<std::size_t>(c)];
  l.routes = std::move(routes);  // even for the same list: routes may have moved between servers
  l.by_hash.clear();
  l.by_hash.reserve(l.routes.size());
  for (std::size_t i = 0; i < l.routes.size(); ++i)
    l.by_hash.emplace_back(name_hash(l.routes[i].first), static_cast<std::uint32_t>(i));
  std::sort(l.by_hash.begin(), l.by_hash.end());
  if (items.first == *l.joined) return false;
  l.joined = std::make_shared<const std::string>(std::move(items.first));
  l.begins = std::move(items.second);
  ++l.generation;
  return true;
}

bool catalogue::restore(collection c, std::string joined, std::vector<std::size_t> begins,
                        routes_t routes) {
  if (c != collection::tools && c != collection::prompts) return false;
  if (joined.size() < 2 || joined.front() != '[' || joined.back() != ']') return false;
  if (begins.size() != routes.size() || (begins.empty() && joined.size() != 2)) return false;
  if (!begins.empty() && begins[0] != 1) return false;
  for (std::size_t i = 0; i < begins.size(); ++i) {
    // Each item is `{…}`, followed by a comma, or by the closing bracket for the last (so the
    // begins rise).
    const auto end = i + 1 < begins.size() ? begins[i + 1] - 1 : joined.size() - 1;
    if (end <= begins[i] || end >= joined.size() || joined[begins[i]] != '{' ||
        joined[end - 1] != '}' || (i + 1 < begins.size() && joined[end] != ','))
      return false;
    if (i && !(routes[i - 1].first < routes[i].first)) return false;
  }
  install(c, {std::move(joined), std::move(begins)}, std::move(routes));
  return true;
}

std::size_t catalogue::list::index_of(std::string_view exposed) const {
  const auto h = name_hash(exposed);
  auto it = std::partition_point(by_hash.begin(), by_hash.end(),
                                 [h](const auto& e) { return e.first < h; });
  for (; it != by_hash.end() && it->first == h; ++it)
    if (routes[it->second].first == exposed) return it->second;
  return routes.size();
}

const route* catalogue::find(collection c, std::string_view exposed) const {
  const auto& l = at(c);
  const auto i = l.index_of(exposed);
  return i < l.routes.size() ? &l.routes[i].second : nullptr;
}

std::string_view catalogue::item(collection c, std::string_view exposed) const {
  const auto& l = at(c);
  const auto i = l.index_of(exposed);
  if (i == l.routes.size()) return {};
  // Tools and prompts are listed in name order: the i-th route is the i-th item.
  const auto from = l.begins[i];
  const auto to = i + 1 < l.begins.size() ? l.begins[i + 1] - 1 : l.joined->size() - 1;
  return std::string_view(*l.joined).substr(from, to - from);
}

// A URI made from a template: the template whose literal head matches most of it.
std::optional<route> catalogue::route_by_template(std::string_view uri) const {
  const route* best = nullptr;
  std::size_t best_len = 0;
  for (const auto& [tmpl, r] : at(collection::resource_templates).routes) {
    const auto head = std::string_view(r.original).substr(0, r.original.find('{'));
    if (head.size() >= best_len && uri.substr(0, head.size()) == head) {
      best = &r;
      best_len = head.size();
    }
  }
  if (best) return route{best->server, std::string(uri)};
  return std::nullopt;
}

result<list_page> catalogue::page(collection c, std::string_view cursor,
                                  std::size_t page_size) const {
  const auto& cat = at(c);
  const auto size = page_size;
  const auto count = cat.begins.size();
  std::size_t offset = 0;
  if (!cursor.empty()) {
    // "<generation>.<offset>": opaque to clients, bound to the list it paged.
    unsigned long long gen = 0, off = 0;
    if (std::sscanf(std::string(cursor).c_str(), "%llu.%llu", &gen, &off) != 2)
      return rpc_error{rpc_code::invalid_params, "Invalid params: unknown cursor", nullptr};
    if (gen != cat.generation)
      return rpc_error{
          rpc_code::invalid_params,
          "Invalid params: stale cursor; the list changed since, list again from the start",
          nullptr};
    offset = static_cast<std::size_t>(off);
    if (offset > count)
      return rpc_error{rpc_code::invalid_params, "Invalid params: unknown cursor", nullptr};
  }
  if (offset == 0 && count <= size) return list_page{{cat.joined}, std::nullopt};
  const auto end = std::min(count, offset + size);
  std::string out = "[";
  if (offset < end) {
    // Items [offset, end) are one run of `joined`: from the first's start to the comma (or the
    // closing bracket) after the last.
    const auto from = cat.begins[offset];
    const auto to = end < count ? cat.begins[end] - 1 : cat.joined->size() - 1;
    out.append(*cat.joined, from, to - from);
  }
  out += ']';
  std::optional<std::string> next;
  if (end < count) next = std::to_string(cat.generation) + "." + std::to_string(end);
  return list_page{{std::make_shared<const std::string>(std::move(out))}, std::move(next)};
}

}  // namespace mcpmux
