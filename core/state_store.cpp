#include "core/state_store.hpp"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <initializer_list>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "base/files.hpp"
#include "config/config.hpp"

namespace mcpmux {
namespace {

// Statements are prepared once and finalized with the store.
struct statement {
  sqlite3_stmt* s = nullptr;
  ~statement() { sqlite3_finalize(s); }
};

// The audit log's columns. Its words (kind, client, profile, server, name, outcome) are kept
// once each, in audit_text, and a row holds their ids: ~40 bytes a row where the words took
// ~120 (a client's label alone is ~60), ~1,100 instructions less to write (the bindings, the
// record, the pages zeroed and checksummed for the WAL).
constexpr const char* audit_columns_sql =
    " (id INTEGER PRIMARY KEY,"
    " time_ms INTEGER NOT NULL, kind INTEGER NOT NULL, client INTEGER NOT NULL,"
    " profile INTEGER NOT NULL, server INTEGER NOT NULL, name INTEGER NOT NULL,"
    " duration_us INTEGER NOT NULL, outcome INTEGER NOT NULL, request_bytes INTEGER NOT NULL,"
    " response_bytes INTEGER NOT NULL, detail TEXT NOT NULL, redacted TEXT NOT NULL DEFAULT '',"
    " run TEXT NOT NULL DEFAULT '')";

// The words' columns, in the order audit_entry's words() gives them.
constexpr std::array<const char*, 6> audit_word_columns{"kind",   "client", "profile",
                                                        "server", "name",   "outcome"};

// Every word id a row of the audit uses.
std::string audit_words_used() {
  std::string out;
  for (const char* c : audit_word_columns)
    out += fmt::format("{}SELECT {} FROM audit", out.empty() ? "" : " UNION ", c);
  return out;
}

constexpr const char* schema =
    "CREATE TABLE IF NOT EXISTS audit_text (id INTEGER PRIMARY KEY, text TEXT NOT NULL UNIQUE);"
    // No query needs an index beside the rowid (history scans by id; the trim by age looks at
    // the oldest rows by id), and each row paid for one: stores made before 2026-12-04 lose the
    // one by server, before 2026-12-05 the one by time (~1,000 instructions a row).
    "DROP INDEX IF EXISTS audit_server;"
    "DROP INDEX IF EXISTS audit_time;"
    "CREATE TABLE IF NOT EXISTS tool_cache ("
    " server TEXT PRIMARY KEY, config_hash TEXT NOT NULL, doc TEXT NOT NULL) WITHOUT ROWID;"
    // Every change to the tool cache moves its generation on; a catalogue snapshot is good
    // only at the generation it was taken at.
    "CREATE TABLE IF NOT EXISTS tool_cache_generation ("
    " id INTEGER PRIMARY KEY CHECK (id = 1), n INTEGER NOT NULL);"
    "CREATE TRIGGER IF NOT EXISTS tool_cache_inserted AFTER INSERT ON tool_cache BEGIN"
    " INSERT INTO tool_cache_generation VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET n = n + 1;"
    " END;"
    "CREATE TRIGGER IF NOT EXISTS tool_cache_updated AFTER UPDATE ON tool_cache BEGIN"
    " INSERT INTO tool_cache_generation VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET n = n + 1;"
    " END;"
    "CREATE TRIGGER IF NOT EXISTS tool_cache_deleted AFTER DELETE ON tool_cache BEGIN"
    " INSERT INTO tool_cache_generation VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET n = n + 1;"
    " END;"
    "CREATE TABLE IF NOT EXISTS catalogue_snapshot ("
    " id INTEGER PRIMARY KEY CHECK (id = 1), generation INTEGER NOT NULL, key BLOB NOT NULL,"
    " tools BLOB NOT NULL, routes BLOB NOT NULL);"
    "CREATE TABLE IF NOT EXISTS pins ("
    " server TEXT NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL, definition TEXT NOT NULL,"
    " PRIMARY KEY (server, kind, name)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS trusted_servers ("
    " server TEXT PRIMARY KEY, config_hash TEXT NOT NULL, since_ms INTEGER NOT NULL)"
    " WITHOUT ROWID;";

// Copied by SQLite unless the caller says the text outlives the statement's use of it
// (SQLITE_STATIC).
void bind(sqlite3_stmt* s, int i, const std::string& text,
          sqlite3_destructor_type lifetime = SQLITE_TRANSIENT) {
  sqlite3_bind_text(s, i, text.data(), static_cast<int>(text.size()), lifetime);
}

std::string column(sqlite3_stmt* s, int i) {
  const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(s, i));
  return t ? std::string(t, static_cast<std::size_t>(sqlite3_column_bytes(s, i))) : std::string();
}

// The audit insert: one statement for `rows` entries. A batch goes in by groups of
// audit_group_rows (the statement's own cost, run and reset, paid once a group), the rest by one.
// OR FAIL: a statement of several rows that may abort keeps a journal to undo its own rows
// (~400 instructions a row); a failure here rolls the whole transaction back anyway.
// A plain row — no detail, nothing redacted, no code-mode run: most of them — has those three
// columns written '' in the statement instead of bound (~170 instructions a bound text).
constexpr int audit_columns = 13, plain_audit_columns = 10;
constexpr std::size_t audit_group_rows = 16;

std::string audit_insert_sql(std::size_t rows, bool plain) {
  std::string sql =
      "INSERT OR FAIL INTO audit(time_ms, kind, client, profile, server, name, duration_us, "
      "outcome,"
      " request_bytes, response_bytes, detail, redacted, run) VALUES ";
  const std::string_view row =
      plain ? "(?,?,?,?,?,?,?,?,?,?,'','','')" : "(?,?,?,?,?,?,?,?,?,?,?,?,?)";
  for (std::size_t r = 0; r < rows; ++r) {
    if (r) sql += ',';
    sql += row;
  }
  return sql;
}

bool plain(const audit_entry& a) {
  return a.detail.empty() && a.redacted.empty() && a.run.empty();
}

// An entry's words, in the order of audit_word_columns.
std::array<std::string_view, 6> words(const audit_entry& a) {
  return {a.kind, a.client, a.profile, a.server, a.name, a.outcome};
}

// Binds `a` as the row whose first parameter is `first` (a plain row: its first ten columns),
// its words as their ids in audit_text. The entries outlive each step: their text is bound in
// place, not copied, and the bindings are cleared before they go.
void bind_entry(sqlite3_stmt* s, int first, const audit_entry& a, bool plain_row,
                const std::array<sqlite3_int64, 6>& word_ids) {
  constexpr auto in_place = SQLITE_STATIC;
  sqlite3_bind_int64(s, first, a.time_ms);
  for (int i = 0; i < 5; ++i) sqlite3_bind_int64(s, first + 1 + i, word_ids[i]);
  sqlite3_bind_int64(s, first + 6, a.duration_us);
  sqlite3_bind_int64(s, first + 7, word_ids[5]);
  sqlite3_bind_int64(s, first + 8, a.request_bytes);
  sqlite3_bind_int64(s, first + 9, a.response_bytes);
  if (plain_row) return;
  bind(s, first + 10, a.detail, in_place);
  bind(s, first + 11, a.redacted, in_place);
  bind(s, first + 12, a.run, in_place);
}

}  // namespace

struct state_store::impl {
  sqlite3* db = nullptr;
  /// [plain][group]: one audit entry, or audit_group_rows of them; plain rows, or any.
  statement inserts[2][2];
  /// The audit's words and their ids in audit_text: read when the store opens, added to as rows
  /// bring new ones (looked up by a string_view, without a copy).
  struct word_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view w) const { return std::hash<std::string_view>{}(w); }
  };
  std::unordered_map<std::string, sqlite3_int64, word_hash, std::equal_to<>> word_ids;
  statement add_word;
  /// Each column's last word and its id (0: none): rows in a row mostly share their words, and
  /// a comparison costs less than a hash.
  std::array<std::pair<std::string, sqlite3_int64>, audit_word_columns.size()> last_words;
  /// How many words there were after the last sweep of the unused ones (see trim).
  std::size_t words_after_sweep = 0;
  /// The ids of `a`'s words (see words()); none when one cannot be added.
  std::optional<std::array<sqlite3_int64, 6>> word_ids_of(const audit_entry& a) {
    std::array<sqlite3_int64, 6> ids{};
    const auto w = words(a);
    for (std::size_t k = 0; k < w.size(); ++k) {
      const auto id = word_id(k, w[k]);
      if (!id) return std::nullopt;
      ids[k] = *id;
    }
    return ids;
  }
  /// The id of `w`, the word of column `k` (see audit_word_columns).
  std::optional<sqlite3_int64> word_id(std::size_t k, std::string_view w) {
    auto& [last, last_id] = last_words[k];
    if (last_id && last == w) return last_id;
    auto id = word_id(w);
    if (id) {
      last = w;
      last_id = *id;
    }
    return id;
  }
  /// The id of `w`, added to audit_text when new (in the caller's transaction); none when it
  /// cannot be added.
  std::optional<sqlite3_int64> word_id(std::string_view w) {
    if (auto it = word_ids.find(w); it != word_ids.end()) return it->second;
    sqlite3_bind_text(add_word.s, 1, w.data(), static_cast<int>(w.size()), SQLITE_STATIC);
    std::optional<sqlite3_int64> id;
    if (sqlite3_step(add_word.s) == SQLITE_ROW) id = sqlite3_column_int64(add_word.s, 0);
    sqlite3_reset(add_word.s);
    sqlite3_clear_bindings(add_word.s);
    if (id) word_ids.emplace(std::string(w), *id);
    return id;
  }
  /// The words as audit_text holds them now (after a rollback, or a sweep).
  void load_words() {
    word_ids.clear();
    for (auto& [last, last_id] : last_words) last_id = 0;
    read("SELECT id, text FROM audit_text", {},
         [&](sqlite3_stmt* s) { word_ids.emplace(column(s, 1), sqlite3_column_int64(s, 0)); });
  }
  /// Stores made before 2026-12-06 kept the audit's words as text in every row: each goes into
  /// audit_text once and the rows are rewritten with the ids, in one transaction.
  result<> audit_words_to_ids() {
    std::string type;
    read("SELECT type FROM pragma_table_info('audit') WHERE name = 'client'", {},
         [&](sqlite3_stmt* s) { type = column(s, 0); });
    if (type != "TEXT") return {};
    const auto id_of = [](const char* c) {
      return fmt::format("(SELECT id FROM audit_text WHERE text = a.{})", c);
    };
    const auto sql = fmt::format(
        "BEGIN; INSERT OR IGNORE INTO audit_text(text) {0}; CREATE TABLE audit_ids{1};"
        " INSERT INTO audit_ids SELECT a.id, a.time_ms, {2}, {3}, {4}, {5}, {6}, a.duration_us,"
        " {7}, a.request_bytes, a.response_bytes, a.detail, a.redacted, a.run FROM audit a;"
        " DROP TABLE audit; ALTER TABLE audit_ids RENAME TO audit; COMMIT;",
        audit_words_used(), audit_columns_sql, id_of("kind"), id_of("client"), id_of("profile"),
        id_of("server"), id_of("name"), id_of("outcome"));
    auto done = exec(sql.c_str());
    if (!done) (void)exec("ROLLBACK");
    return done;
  }
  /// Before the entries bound in place go.
  void clear_insert_bindings() {
    for (auto& by_size : inserts)
      for (auto& s : by_size) sqlite3_clear_bindings(s.s);
  }
  /// The connection serves one thread at a time: the event loop, and the audit writer's thread.
  mutable std::mutex m;
  ~impl() {
    for (auto& by_size : inserts)
      for (auto& s : by_size) {
        sqlite3_finalize(s.s);
        s.s = nullptr;
      }
    sqlite3_finalize(add_word.s);
    add_word.s = nullptr;
    sqlite3_close(db);
  }
  /// Runs `sql` with its parameters bound by `bind`, calling `row` for each row.
  template <class Bind, class Row>
  void read_bound(const char* sql, Bind bind, Row row) const {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) != SQLITE_OK) return;
    bind(s);
    while (sqlite3_step(s) == SQLITE_ROW) row(s);
    sqlite3_finalize(s);
  }
  /// The same with the text parameters `params` (?1, ?2, …).
  template <class Row>
  void read(const char* sql, std::initializer_list<std::string_view> params, Row row) const {
    read_bound(
        sql,
        [&](sqlite3_stmt* s) {
          int i = 0;
          for (auto p : params)
            sqlite3_bind_text(s, ++i, p.data(), static_cast<int>(p.size()), SQLITE_TRANSIENT);
        },
        row);
  }
  /// The same with one blob parameter, ?1 (the catalogue snapshot's key: a blob never equals a
  /// text).
  template <class Row>
  void read_by_key(const char* sql, std::string_view key, Row row) const {
    read_bound(
        sql,
        [&](sqlite3_stmt* s) {
          sqlite3_bind_blob(s, 1, key.data(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
        },
        row);
  }
  /// Runs `step` for each of `rows` with `sql` prepared, in one transaction.
  template <class Row, class Bind>
  result<> write(const char* sql, const std::vector<Row>& rows, Bind bind_row) {
    if (rows.empty()) return {};
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) != SQLITE_OK)
      return failure(sqlite3_errmsg(db));
    auto done = exec("BEGIN");
    for (std::size_t i = 0; done && i < rows.size(); ++i) {
      bind_row(s, rows[i]);
      if (sqlite3_step(s) != SQLITE_DONE) done = failure(sqlite3_errmsg(db));
      sqlite3_reset(s);
    }
    sqlite3_finalize(s);
    if (!done) {
      (void)exec("ROLLBACK");
      return done;
    }
    return exec("COMMIT");
  }
  /// Runs `sql`, or fails with SQLite's own words.
  result<> exec(const char* sql) {
    char* error = nullptr;
    if (sqlite3_exec(db, sql, nullptr, nullptr, &error) == SQLITE_OK) return {};
    rpc_error e = failure(error ? error : sqlite3_errmsg(db));
    sqlite3_free(error);
    return e;
  }
};

std::string state_store_path() {
  return state_dir() + "/state.db";
}

state_store::state_store(std::unique_ptr<impl> i) : impl_(std::move(i)) {}
state_store::~state_store() = default;

result<std::unique_ptr<state_store>> state_store::open(const std::string& path) {
  const bool in_memory = path == ":memory:";
  if (const auto slash = path.rfind('/'); slash != std::string::npos && slash > 0) {
    if (auto made = make_dirs(path.substr(0, slash), 0700); !made) return std::move(made.error());
  }
  // Created 0600 before SQLite opens it (its -wal and -shm files take the same mode).
  const int fd = in_memory ? -2 : ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd == -1) return failure(fmt::format("{}: {}", path, std::strerror(errno)));
  if (fd >= 0) {
    ::fchmod(fd, 0600);
    ::close(fd);
  }
  // SQLite's allocation statistics take a global mutex around each of its allocations, ~14 % of
  // the audit writer's CPU; nothing here reads them. (Once, before SQLite is first initialised;
  // after that the call is refused, harmlessly.)
  static const int no_memstatus = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  (void)no_memstatus;
  auto i = std::make_unique<impl>();
  if (sqlite3_open_v2(path.c_str(), &i->db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                      nullptr) != SQLITE_OK)
    return failure(fmt::format("{}: {}", path, i->db ? sqlite3_errmsg(i->db) : "out of memory"));
  sqlite3_busy_timeout(i->db, 100);  // the loop waits no longer for another process
  // WAL: a kill leaves the last committed batch; NORMAL: a commit is not an fsync (an audit
  // batch lost to a power cut is acceptable, a slow loop is not).
  const auto audit_table = fmt::format("CREATE TABLE IF NOT EXISTS audit{}", audit_columns_sql);
  for (const char* sql :
       {"PRAGMA journal_mode = WAL", "PRAGMA synchronous = NORMAL", audit_table.c_str(), schema})
    if (auto e = i->exec(sql); !e) return failure(fmt::format("{}: {}", path, e.error().message));
  // Stores made before 2026-12-05 lack the columns added since (`redacted`, then `run`):
  // added, empty for their rows.
  for (const char* added : {"redacted", "run"}) {
    sqlite3_stmt* probe = nullptr;
    const auto select = fmt::format("SELECT {} FROM audit", added);
    if (sqlite3_prepare_v2(i->db, select.c_str(), -1, &probe, nullptr) == SQLITE_OK) {
      sqlite3_finalize(probe);
      continue;
    }
    const auto alter =
        fmt::format("ALTER TABLE audit ADD COLUMN {} TEXT NOT NULL DEFAULT ''", added);
    if (auto e = i->exec(alter.c_str()); !e)
      return failure(fmt::format("{}: {}", path, e.error().message));
  }
  if (auto e = i->audit_words_to_ids(); !e)
    return failure(fmt::format("{}: {}", path, e.error().message));
  i->load_words();
  i->words_after_sweep = i->word_ids.size();
  // (An upsert, so that a word another process added meanwhile is found, not refused.)
  if (sqlite3_prepare_v3(i->db,
                         "INSERT INTO audit_text(text) VALUES (?1) ON CONFLICT (text) DO UPDATE"
                         " SET text = excluded.text RETURNING id",
                         -1, SQLITE_PREPARE_PERSISTENT, &i->add_word.s, nullptr) != SQLITE_OK)
    return failure(fmt::format("{}: {}", path, sqlite3_errmsg(i->db)));
  for (const bool plain_rows : {false, true})
    for (const bool group : {false, true})
      if (sqlite3_prepare_v3(
              i->db, audit_insert_sql(group ? audit_group_rows : 1, plain_rows).c_str(), -1,
              SQLITE_PREPARE_PERSISTENT, &i->inserts[plain_rows][group].s, nullptr) != SQLITE_OK)
        return failure(fmt::format("{}: {}", path, sqlite3_errmsg(i->db)));
  return std::unique_ptr<state_store>(new state_store(std::move(i)));
}

result<> state_store::append(std::span<const audit_entry> entries) {
  if (entries.empty()) return {};
  auto& d = *impl_;
  std::lock_guard lock(d.m);
  if (auto begun = d.exec("BEGIN"); !begun) return begun;
  for (std::size_t at = 0; at < entries.size();) {
    const std::size_t rows = entries.size() - at >= audit_group_rows ? audit_group_rows : 1;
    const auto group = entries.subspan(at, rows);
    const bool plain_rows = std::all_of(group.begin(), group.end(), plain);
    sqlite3_stmt* s = d.inserts[plain_rows][rows > 1].s;
    const int columns = plain_rows ? plain_audit_columns : audit_columns;
    bool ok = true;
    for (std::size_t r = 0; ok && r < rows; ++r) {
      const auto ids = d.word_ids_of(group[r]);
      ok = ids.has_value();
      if (ok) bind_entry(s, static_cast<int>(r) * columns + 1, group[r], plain_rows, *ids);
    }
    const int rc = ok ? sqlite3_step(s) : SQLITE_ERROR;
    sqlite3_reset(s);
    if (rc != SQLITE_DONE) {
      std::string why = sqlite3_errmsg(d.db);
      d.clear_insert_bindings();
      (void)d.exec("ROLLBACK");
      d.load_words();  // the words this transaction added are gone again
      return failure(std::move(why));
    }
    at += rows;
  }
  d.clear_insert_bindings();
  return d.exec("COMMIT");
}

std::vector<audit_entry> state_store::history(const audit_query& q) const {
  std::lock_guard lock(impl_->m);
  std::vector<audit_entry> out;
  sqlite3_stmt* s = nullptr;
  const char* sql =
      "SELECT a.time_ms, ifnull(k.text, ''), ifnull(c.text, ''), ifnull(p.text, ''),"
      " ifnull(s.text, ''), ifnull(n.text, ''), a.duration_us, ifnull(o.text, ''),"
      " a.request_bytes, a.response_bytes, a.detail, a.redacted, a.run FROM audit a"
      " LEFT JOIN audit_text k ON k.id = a.kind LEFT JOIN audit_text c ON c.id = a.client"
      " LEFT JOIN audit_text p ON p.id = a.profile LEFT JOIN audit_text s ON s.id = a.server"
      " LEFT JOIN audit_text n ON n.id = a.name LEFT JOIN audit_text o ON o.id = a.outcome"
      " WHERE (?1 = '' OR a.server = (SELECT id FROM audit_text WHERE text = ?1))"
      " AND (?2 = '' OR a.name = (SELECT id FROM audit_text WHERE text = ?2))"
      " AND a.time_ms >= ?3 AND (?5 = '' OR a.run = ?5) ORDER BY a.id DESC LIMIT ?4";
  if (sqlite3_prepare_v2(impl_->db, sql, -1, &s, nullptr) != SQLITE_OK) return out;
  bind(s, 1, q.server);
  bind(s, 2, q.name);
  sqlite3_bind_int64(s, 3, q.since_ms);
  sqlite3_bind_int64(s, 4, static_cast<sqlite3_int64>(q.limit));
  bind(s, 5, q.run);
  while (sqlite3_step(s) == SQLITE_ROW) {
    audit_entry a;
    a.time_ms = sqlite3_column_int64(s, 0);
    a.kind = column(s, 1);
    a.client = column(s, 2);
    a.profile = column(s, 3);
    a.server = column(s, 4);
    a.name = column(s, 5);
    a.duration_us = sqlite3_column_int64(s, 6);
    a.outcome = column(s, 7);
    a.request_bytes = sqlite3_column_int64(s, 8);
    a.response_bytes = sqlite3_column_int64(s, 9);
    a.detail = column(s, 10);
    a.redacted = column(s, 11);
    a.run = column(s, 12);
    out.push_back(std::move(a));
  }
  sqlite3_finalize(s);
  std::reverse(out.begin(), out.end());
  return out;
}

namespace {
// A reused slot's word is most often the new row's already (the same client, server, tool):
// compared, not copied again (an assignment through _M_replace costs ~50 instructions).
void set_word(std::string& to, std::string_view word) {
  if (to.size() != word.size() ||
      (!word.empty() && std::memcmp(to.data(), word.data(), word.size()) != 0))
    to.assign(word);
}
}  // namespace

void audit_fields::write_to(audit_entry& e) const {
  e.time_ms = time_ms;
  set_word(e.kind, kind);
  set_word(e.client, client);
  set_word(e.profile, profile);
  set_word(e.server, server);
  set_word(e.name, name);
  e.duration_us = duration_us;
  set_word(e.outcome, outcome);
  e.request_bytes = request_bytes;
  e.response_bytes = response_bytes;
  set_word(e.detail, detail);
  set_word(e.redacted, redacted);
  set_word(e.run, run);
}

std::int64_t state_store::audit_rows() const {
  std::lock_guard lock(impl_->m);
  sqlite3_stmt* s = nullptr;
  std::int64_t n = 0;
  if (sqlite3_prepare_v2(impl_->db, "SELECT count(*) FROM audit", -1, &s, nullptr) == SQLITE_OK &&
      sqlite3_step(s) == SQLITE_ROW)
    n = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  return n;
}

std::int64_t state_store::trim(const audit_retention& r, std::int64_t now_ms,
                               std::int64_t at_most) {
  std::lock_guard lock(impl_->m);
  const auto before = sqlite3_total_changes64(impl_->db);
  // By age among the oldest `at_most` rows by id, then beyond the count (the rowid range).
  // Rows go in as calls end and time_ms is when a call began, so the ids follow the times but
  // for calls that overlapped: a row behind a younger one waits for it, at most the longest
  // call's duration past its age.
  const std::string sql = fmt::format(
      "DELETE FROM audit WHERE id IN (SELECT id FROM"
      " (SELECT id, time_ms FROM audit ORDER BY id LIMIT {2}) WHERE time_ms < {0});"
      "DELETE FROM audit WHERE id IN (SELECT id FROM audit"
      " WHERE id <= (SELECT max(id) FROM audit) - {1} ORDER BY id LIMIT {2});",
      now_ms - r.days * 86400000, r.max_rows, at_most);
  (void)impl_->exec(sql.c_str());  // what it removed is counted below; a failure removes none
  const auto removed = sqlite3_total_changes64(impl_->db) - before;
  // The words no row uses any more go once there are twice as many as after the last sweep
  // (a client's label holds its pid: one word a connection), not at every trim (the sweep reads
  // the whole table).
  auto& d = *impl_;
  if (removed > 0 && d.word_ids.size() > 2 * d.words_after_sweep + 64) {
    const auto sweep =
        fmt::format("DELETE FROM audit_text WHERE id NOT IN ({})", audit_words_used());
    (void)d.exec(sweep.c_str());
    d.load_words();
    d.words_after_sweep = d.word_ids.size();
  }
  return removed;
}

std::vector<cached_tools_row> state_store::cached_tools() const {
  std::lock_guard lock(impl_->m);
  std::vector<cached_tools_row> out;
  // Through a mapping of the file, for this read only: a start with 10,000 cached tools reads a
  // megabyte, and read page by page each page would be copied into a buffer of its own (new
  // memory the process faults in). Unmapped after, so that a file cut short by someone else
  // later is an error, not a SIGBUS.
  (void)impl_->exec("PRAGMA mmap_size = 268435456");  // (without it: read page by page)
  impl_->read("SELECT server, config_hash, doc FROM tool_cache", {}, [&](sqlite3_stmt* s) {
    out.push_back({column(s, 0), column(s, 1), column(s, 2)});
  });
  (void)impl_->exec("PRAGMA mmap_size = 0");
  return out;
}

std::int64_t state_store::tool_cache_generation() const {
  std::lock_guard lock(impl_->m);
  std::int64_t n = 0;
  impl_->read("SELECT n FROM tool_cache_generation", {},
              [&](sqlite3_stmt* s) { n = sqlite3_column_int64(s, 0); });
  return n;
}

std::optional<catalogue_snapshot_row> state_store::catalogue_snapshot(std::string_view key) const {
  std::lock_guard lock(impl_->m);
  auto& d = *impl_;
  std::optional<catalogue_snapshot_row> out;
  d.read_by_key(
      "SELECT generation, length(tools), length(routes) FROM catalogue_snapshot WHERE id = 1 AND"
      " key = ?1 AND generation = coalesce((SELECT n FROM tool_cache_generation), 0)",
      key, [&](sqlite3_stmt* s) {
        out = catalogue_snapshot_row{sqlite3_column_int64(s, 0), std::string(key), {}, {}};
        out->tools.resize(static_cast<std::size_t>(sqlite3_column_int64(s, 1)));
        out->routes.resize(static_cast<std::size_t>(sqlite3_column_int64(s, 2)));
      });
  if (!out) return out;
  // Read straight into the strings, through a mapping of the file (see cached_tools()): a
  // megabyte or more, which a query would first copy into a buffer of SQLite's own.
  (void)d.exec("PRAGMA mmap_size = 268435456");
  bool ok = d.exec("BEGIN").ok();  // both columns from the same row
  for (auto [column, into] : {std::pair{"tools", &out->tools}, {"routes", &out->routes}}) {
    sqlite3_blob* b = nullptr;
    ok = ok &&
         sqlite3_blob_open(d.db, "main", "catalogue_snapshot", column, 1, 0, &b) == SQLITE_OK &&
         static_cast<std::size_t>(sqlite3_blob_bytes(b)) == into->size() &&
         sqlite3_blob_read(b, into->data(), static_cast<int>(into->size()), 0) == SQLITE_OK;
    sqlite3_blob_close(b);
  }
  (void)d.exec("COMMIT");  // a read: nothing to lose
  (void)d.exec("PRAGMA mmap_size = 0");
  if (!ok) out.reset();
  return out;
}

std::optional<std::int64_t> state_store::catalogue_snapshot_generation(std::string_view key) const {
  std::lock_guard lock(impl_->m);
  std::optional<std::int64_t> out;
  impl_->read_by_key("SELECT generation FROM catalogue_snapshot WHERE key = ?1", key,
                     [&](sqlite3_stmt* s) { out = sqlite3_column_int64(s, 0); });
  return out;
}

bool state_store::put_catalogue_snapshot(const catalogue_snapshot_row& row) {
  std::lock_guard lock(impl_->m);
  auto& d = *impl_;
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(d.db,
                         "INSERT OR REPLACE INTO catalogue_snapshot(id, generation, key, tools, "
                         "routes) SELECT 1, ?1, ?2, ?3, ?4 WHERE ?1 = coalesce((SELECT n FROM "
                         "tool_cache_generation), 0)",
                         -1, &s, nullptr) != SQLITE_OK)
    return false;
  sqlite3_bind_int64(s, 1, row.generation);
  // Blobs all three: their lengths are then known without reading them.
  int i = 1;
  for (const auto* b : {&row.key, &row.tools, &row.routes})
    sqlite3_bind_blob(s, ++i, b->data(), static_cast<int>(b->size()), SQLITE_TRANSIENT);
  const bool ok = sqlite3_step(s) == SQLITE_DONE && sqlite3_changes(d.db) == 1;
  sqlite3_finalize(s);
  return ok;
}

std::optional<cached_tools_row> state_store::cached_tools(const std::string& server) const {
  std::lock_guard lock(impl_->m);
  std::optional<cached_tools_row> out;
  impl_->read("SELECT server, config_hash, doc FROM tool_cache WHERE server = ?1", {server},
              [&](sqlite3_stmt* s) {
                out = {column(s, 0), column(s, 1), column(s, 2)};
              });
  return out;
}

result<> state_store::put_cached_tools(const std::vector<cached_tools_row>& rows) {
  std::lock_guard lock(impl_->m);
  return impl_->write(
      "INSERT OR REPLACE INTO tool_cache(server, config_hash, doc) VALUES (?1, ?2, ?3)", rows,
      [](sqlite3_stmt* s, const cached_tools_row& r) {
        bind(s, 1, r.server);
        bind(s, 2, r.config_hash);
        bind(s, 3, r.doc);
      });
}

result<> state_store::put_cached_tools(const cached_tools_row& row) {
  return put_cached_tools(std::vector<cached_tools_row>{row});
}

std::vector<pin_row> state_store::pins(const std::string& server) const {
  std::lock_guard lock(impl_->m);
  std::vector<pin_row> out;
  impl_->read("SELECT kind, name, definition FROM pins WHERE server = ?1", {server},
              [&](sqlite3_stmt* s) {
                out.push_back({server, column(s, 0), column(s, 1), column(s, 2)});
              });
  return out;
}

result<> state_store::put_pins(const std::vector<pin_row>& pins) {
  std::lock_guard lock(impl_->m);
  return impl_->write(
      "INSERT OR REPLACE INTO pins(server, kind, name, definition) VALUES (?1, ?2, ?3, ?4)", pins,
      [](sqlite3_stmt* s, const pin_row& p) {
        bind(s, 1, p.server);
        bind(s, 2, p.kind);
        bind(s, 3, p.name);
        bind(s, 4, p.definition);
      });
}

bool state_store::trusted(const std::string& server, const std::string& config_hash) const {
  std::lock_guard lock(impl_->m);
  bool found = false;
  impl_->read("SELECT 1 FROM trusted_servers WHERE server = ?1 AND config_hash = ?2",
              {server, config_hash}, [&](sqlite3_stmt*) { found = true; });
  return found;
}

result<> state_store::set_trusted(const std::string& server, const std::string& config_hash,
                                  std::int64_t now_ms) {
  std::lock_guard lock(impl_->m);
  struct row {
    std::string server, hash;
    std::int64_t since;
  };
  return impl_->write(
      "INSERT OR REPLACE INTO trusted_servers(server, config_hash, since_ms) VALUES (?1, ?2, ?3)",
      std::vector<row>{{server, config_hash, now_ms}}, [](sqlite3_stmt* s, const row& r) {
        bind(s, 1, r.server);
        bind(s, 2, r.hash);
        sqlite3_bind_int64(s, 3, r.since);
      });
}

}  // namespace mcpmux
