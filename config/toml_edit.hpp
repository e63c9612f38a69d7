// Edits of one `[servers.NAME]` table in a config's text that keep every other byte (comments,
// blank lines, key order) as it is: removing the table, and setting its `enabled`. Adding one is
// merge_into_config (config/import.hpp). Pure: text in, text out; `mcpmux remove|enable|disable`
// validate the result and write it (daemon/cli/edit.cpp).
#pragma once

#include <string>
#include <string_view>

namespace mcpmux {

/// The text after an edit, or why the edit cannot be made (then `text` is empty).
struct toml_edit {
  std::string text;
  std::string error;
  bool unchanged = false;  ///< the text already said so: nothing to write (`text` is the input)
};

/// `text` without the `[servers.NAME]` table: its header line through its last value's line,
/// and its sub-tables (`[servers.NAME.env]`) alike, wherever they stand; the blank line that set
/// each apart (the one above it, else the one below) goes with it, so that removing a table that
/// was appended gives back the text before. Comment lines above the header or after
/// the last value are kept: they are outside the table. An error when the file has no such table
/// or writes it inline (`[servers] NAME = {…}`), or is not TOML.
toml_edit remove_server_table(std::string_view text, std::string_view name);

/// `text` with `[servers.NAME]`'s `enabled` set: an `enabled` key has its value replaced (a
/// line that is only `enabled = false` is removed to enable); without one, disabling inserts
/// the line `enabled = false` right below the header. `unchanged` when it already was so.
toml_edit set_server_enabled(std::string_view text, std::string_view name, bool enabled);

}  // namespace mcpmux
