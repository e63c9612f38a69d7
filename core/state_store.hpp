// The state store: one SQLite database under $XDG_STATE_HOME/mcpmux/ (WAL, mode 0600) for what
// mcpmux keeps between runs and people look back at:
// - the tool cache: each server's last trusted tools, served at the next start before it lists;
// - pins: the definitions of tools, prompts and resource templates as trusted (core/trust.hpp),
//   and which servers were trusted;
// - the audit log: every tools/call, prompts/get and resources/read, and every spawn.
// Audit writes come in batches (the daemon hands its buffer to core/audit_writer.hpp a few times
// a second), never one per call. A kill at any point leaves the last committed transaction (WAL);
// retention bounds the audit log.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.hpp"
#include "protocol/result.hpp"  // unix_now_ms, the times the store keeps

namespace mcpmux {

/// One audited event.
struct audit_entry {
  std::int64_t time_ms = 0;  ///< when it started, Unix milliseconds
  std::string kind;          ///< "tools/call", "prompts/get", "resources/read", "spawn"
  std::string client;        ///< who: "socket pid 123 /usr/bin/node", "http", "daemon"
  std::string profile;       ///< "" = everything
  std::string server;
  std::string name;                 ///< the exposed tool or prompt, the URI, or the pid (spawn)
  std::int64_t duration_us = 0;     ///< until the answer (0 for a spawn)
  std::string outcome;              ///< ok, tool_error, error, timeout, cancelled; spawn: started
  std::int64_t request_bytes = 0;   ///< the client's message
  std::int64_t response_bytes = 0;  ///< the answer relayed
  std::string detail;    ///< spawn: the command line; a call: its arguments (audit_arguments);
                         ///< secrets redacted
  std::string redacted;  ///< what was replaced in its answer ("github-token 1"), never the values
  /// Code mode: the program's run id ("r3f9c2a1"). Its mcpmux__run_code row and every tool call
  /// it made carry it, so that its inner calls read as the run's children.
  std::string run;
};

/// An audit row's fields as views of where they are kept (the call, its caller, the server),
/// written into an entry in place: a call's row is made where the audit buffer keeps it, its words
/// copied once, into a slot whose strings may keep their storage from an older row.
struct audit_fields {
  std::int64_t time_ms = 0;
  std::string_view kind, client, profile, server, name;
  std::int64_t duration_us = 0;
  std::string_view outcome;
  std::int64_t request_bytes = 0, response_bytes = 0;
  std::string_view detail, redacted, run;
  /// Sets every field of `e`.
  void write_to(audit_entry& e) const;
};

/// What `mcpmux history` asks for.
struct audit_query {
  std::string server, name;   ///< "" = any
  std::int64_t since_ms = 0;  ///< Unix milliseconds; 0 = all
  std::size_t limit = 100;    ///< the newest this many, returned oldest first
  std::string run;            ///< "" = any; else one code-mode run's rows
};

/// How much the audit log keeps: rows younger than `days`, at most `max_rows`.
struct audit_retention {
  std::int64_t days = 30;
  std::int64_t max_rows = 1000000;
};

/// One server's tool cache entry: the hash of the configuration it was listed under
/// (core/tool_cache.hpp) and the entry, a JSON document.
struct cached_tools_row {
  std::string server, config_hash, doc;
};

/// What the catalogue showed of the tool cache at start (core/catalogue_snapshot.hpp): taken
/// at one generation of the tool cache, under one configuration (`key`), and good only while
/// the cache is still at that generation.
struct catalogue_snapshot_row {
  std::int64_t generation = 0;
  std::string key;
  std::string tools;   ///< the tools list, a JSON array
  std::string routes;  ///< where each item starts and goes (catalogue::snapshot)
};

/// One pinned definition (core/trust.hpp).
struct pin_row {
  std::string server;
  std::string kind;  ///< the collection: "tools", "prompts", "resourceTemplates"
  std::string name;  ///< the server's own name (the URI template of a template)
  std::string definition;
};

class state_store {
 public:
  /// Opens (creating) the database at `path`: its directory 0700, the file 0600, or fails
  /// saying why it cannot. ":memory:" opens one that lasts as long as the object.
  static result<std::unique_ptr<state_store>> open(const std::string& path);
  ~state_store();
  state_store(const state_store&) = delete;
  state_store& operator=(const state_store&) = delete;

  /// Appends entries in one transaction, as batches of at most 256 rows (one record each).
  /// Every method may be called from any thread (core/audit_writer.hpp writes from its own);
  /// they take turns.
  result<> append(std::span<const audit_entry> entries);
  /// The matching entries: the newest `limit`, oldest first.
  std::vector<audit_entry> history(const audit_query& q) const;
  /// Drops what `r` no longer keeps, by whole batches (those appended together, at most 256
  /// rows), among the oldest batches that hold `at_most` rows (one at least): a batch whose
  /// newest row is too old, and the oldest ones while the newer batches alone hold `max_rows`
  /// (call again while it returns more than 0); returns how many rows went.
  std::int64_t trim(const audit_retention& r, std::int64_t now_ms,
                    std::int64_t at_most = INT64_MAX);
  std::int64_t audit_rows() const;

  /// Every server's tool cache entry.
  std::vector<cached_tools_row> cached_tools() const;
  /// One server's.
  std::optional<cached_tools_row> cached_tools(const std::string& server) const;
  /// Replaces a server's entry.
  result<> put_cached_tools(const cached_tools_row& row);
  /// Moves entries in (the JSON cache files of old versions) in one transaction.
  result<> put_cached_tools(const std::vector<cached_tools_row>& rows);
  /// The tool cache's generation: every insert, update or delete of an entry, by this process
  /// or another, moves it on (SQLite triggers). 0 before the first.
  std::int64_t tool_cache_generation() const;
  /// The catalogue snapshot taken under `key` at the tool cache's current generation, if any.
  std::optional<catalogue_snapshot_row> catalogue_snapshot(std::string_view key) const;
  /// The generation of the tool cache the snapshot under `key` was taken at, if there is one.
  std::optional<std::int64_t> catalogue_snapshot_generation(std::string_view key) const;
  /// Keeps `row` (replacing the one before) when the tool cache is still at `row.generation`;
  /// false when it moved on, or could not be written.
  bool put_catalogue_snapshot(const catalogue_snapshot_row& row);

  /// A server's pins.
  std::vector<pin_row> pins(const std::string& server) const;
  /// Pins (replacing a name's earlier pin) in one transaction.
  result<> put_pins(const std::vector<pin_row>& pins);
  /// Whether the server was trusted under the configuration of `config_hash` (first seen under
  /// trust = "auto", or approved).
  bool trusted(const std::string& server, const std::string& config_hash) const;
  result<> set_trusted(const std::string& server, const std::string& config_hash,
                       std::int64_t now_ms);

 private:
  struct impl;
  explicit state_store(std::unique_ptr<impl> i);
  std::unique_ptr<impl> impl_;
};

/// $XDG_STATE_HOME/mcpmux/state.db.
std::string state_store_path();

}  // namespace mcpmux
