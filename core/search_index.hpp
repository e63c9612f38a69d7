// The tool search index of `search` profiles: SQLite FTS5 (in memory) over every exposed tool's
// name split into words, its server, its description and its parameters' names and
// descriptions, ranked by BM25F. Kept in step with the catalogue: a sync re-indexes only the
// tools that are new or changed.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/json_rpc.hpp"

namespace mcpmux {

class catalogue;

/// What the index knows of one tool.
struct tool_document {
  std::string name;        ///< exposed name (the key)
  std::string server;      ///< the server's name
  std::string words;       ///< the tool's own name split into words, and its title
  std::string name_words;  ///< the tool's own name split into words alone
  std::string description;
  std::string parameters;  ///< parameter names (split into words) and their descriptions
};

/// "readFile_v2" → "read file v2": an identifier in lower-case words (snake, kebab, dotted and
/// camel case are split).
std::string identifier_words(std::string_view id);

/// The document of a listed tool (its `tool` object as listed, under its exposed name).
tool_document document_of(std::string_view exposed, std::string_view server,
                          const json::object& tool);

/// A person's words as the index searches them: lower case, split at spaces and punctuation,
/// without repeats, stop words, numbers and single letters (unless there is nothing else); a web
/// address is the word "url" and a quoted text ('Payment complete') is left out, being a value
/// for the tool rather than words about it.
std::vector<std::string> query_words(std::string_view query);
/// Words that say the same as `words` in other terms ("folder" → directory, dir), for a second
/// search at half weight; none of `words` themselves. With `stem`, a word and a table's word are
/// compared by their stems ("folders" is a folder).
std::vector<std::string> related_words(
    const std::vector<std::string>& words,
    const std::function<std::string(const std::string&)>& stem = nullptr);
/// The FTS5 query matching any of `words` ("read" OR "file"); empty when there are none.
std::string any_of_words(const std::vector<std::string>& words);

class search_index {
 public:
  search_index();
  ~search_index();
  search_index(const search_index&) = delete;
  search_index& operator=(const search_index&) = delete;

  /// A tool indexed once more under `key` with another description (a profile's override).
  struct variant {
    std::string key;  ///< never an exposed name (those have no '/')
    std::string exposed;
    std::string description;
  };
  /// Makes the index hold exactly the tools of `cat` (the whole catalogue) and `variants`;
  /// returns how many were (re)indexed or dropped.
  std::size_t sync(const catalogue& cat, const std::vector<variant>& variants = {});
  /// Makes the index hold exactly `docs` (each with a fingerprint of what it was made from, so
  /// that an unchanged tool is left alone).
  std::size_t sync(std::vector<std::pair<tool_document, std::uint64_t>> docs);

  struct hit {
    std::string name;  ///< exposed name
    double score;      ///< BM25, higher is better
  };
  /// The best `limit` matches for `query` that `accept` takes (by exposed name), best first.
  std::vector<hit> search(std::string_view query, std::size_t limit,
                          const std::function<bool(std::string_view)>& accept) const;
  std::size_t size() const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace mcpmux
