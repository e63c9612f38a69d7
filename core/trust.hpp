// Pins and quarantine: the definitions of a server's tools, prompts and resource templates as
// they were first trusted, and the verdict on what the server offers now. A definition that
// changed after it was trusted (tool poisoning, a "rug pull"), the same definition under a new
// name, or a new item of a trusted server is held back from clients, warned of, or accepted,
// as the server's `on_change` says; a server under `trust = "ask"` is held back whole until it
// is approved. Pure: the manager reads the pins from the state store, asks for a verdict, and
// writes back what the verdict pins. Items the verdict does not hold are never affected.
#pragma once

#include <array>
#include <map>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "config/config.hpp"
#include "core/lists.hpp"
#include "protocol/json_rpc.hpp"

namespace mcpmux {

/// The collections whose items are pinned: tools, prompts, resource templates. (Resources are
/// data, listed and changed as the server works; they carry no instructions to the model.)
bool pinned_collection(collection c);

/// An item's definition as pinned: everything but its identity (the name, or a template's URI
/// template) and `_meta`, as JSON with every object's keys sorted. Two servers' serializations of
/// the same definition are the same text.
std::string canonical_definition(const json::object& item, collection c);

/// A server's pins by (collection, the server's own name).
using pin_book = std::map<std::pair<collection, std::string>, std::string>;

/// Why an item is not simply trusted.
enum class change_kind {
  changed,    ///< pinned, and the definition offered now differs
  renamed,    ///< a new name whose definition is pinned under another name
  added,      ///< a new item of a trusted server
  untrusted,  ///< the server is not trusted yet (trust = "ask")
};
std::string_view to_string(change_kind k);

/// One item that differs from what was trusted.
struct trust_item {
  collection c = collection::tools;
  std::string name;
  change_kind why = change_kind::added;
  std::string was;      ///< renamed: the pinned name it matches
  std::string pinned;   ///< changed: the pinned definition; renamed: the other name's
  std::string offered;  ///< the definition offered now
};

struct trust_verdict {
  /// Held back from clients (quarantined), by collection: the server's own names.
  std::array<std::unordered_set<std::string>, collection_count> held;
  std::vector<trust_item> quarantined;  ///< the held items, with what changed
  std::vector<trust_item> accepted;     ///< changed but exposed (on_change warn or accept)
  std::vector<std::pair<std::pair<collection, std::string>, std::string>> pin;  ///< to write
  bool trust_server = false;  ///< first seen under trust = "auto": the server is trusted now
};

/// The verdict on a server's `lists` (by collection) given its `pins` and whether it is
/// `trusted` under its current configuration, by its settings (`on_change`, `trust_ask`):
/// - trusted: a pinned item offered unchanged passes; a changed one, one whose definition is
///   pinned under another name (renamed) and a new one (added) meet `on_change`;
/// - not trusted, trust = "auto" (first sight of the server, or of a new configuration of it:
///   its command, arguments, environment, URL or headers changed, which is the user's act):
///   everything offered is pinned as it is, and the server is trusted;
/// - not trusted, trust = "ask": pinned items offered unchanged pass (approved one by one); a
///   changed one meets `on_change`; the rest are held until approved.
trust_verdict judge(const pin_book& pins, bool trusted, const server_settings& settings,
                    const std::array<const std::vector<json::object>*, collection_count>& lists);

/// One run of a field's text in a word diff.
struct diff_run {
  char op = '=';  ///< '=' in both, '-' pinned only, '+' offered only
  std::string text;
};
/// How one field of a definition changed ("description",
/// "inputSchema.properties.path.description", "annotations.readOnlyHint").
struct field_diff {
  std::string field;
  std::vector<diff_run> runs;
};
/// A readable word diff of two canonical definitions, field by field (only fields that differ).
std::vector<field_diff> diff_definitions(std::string_view pinned, std::string_view offered);

}  // namespace mcpmux
