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

#include <boost/json.hpp>

#include "base/files.hpp"
#include "config/config.hpp"
#include "protocol/json_rpc.hpp"

namespace mcpmux {
namespace {

namespace json = boost::json;

// Statements are prepared once and finalized with the store.
struct statement {
  sqlite3_stmt* s = nullptr;
  ~statement() { sqlite3_finalize(s); }
};

// The audit log is kept in batches: one record of audit_batch for each group of at most
// audit_batch_rows entries written together, its entries a JSON array of rows. A row as one
// record cost SQLite ~4,500 instructions (thirteen bindings, ~45 opcodes, a B-tree cell); a batch
// of them costs ~1/10 of that a row, its text made here. The view `audit` shows one row per
// entry, with the columns the table of one row an entry had (queries by hand work as before).
// An entry's words (kind, client, profile, server, name, outcome) are kept once each, in
// audit_text, and a row holds their ids: ~40 bytes a row where the words took ~120.
//
// A row: [time_ms (after the batch's first_ms), kind, client, profile, server, name, duration_us,
// outcome, request_bytes, response_bytes] (the six words as ids), followed by [detail, redacted,
// run] when any is not empty.
constexpr std::size_t audit_batch_rows = 256;
constexpr const char* audit_batch_table =
    "CREATE TABLE IF NOT EXISTS audit_batch (id INTEGER PRIMARY KEY,"
    " first_ms INTEGER NOT NULL, last_ms INTEGER NOT NULL, rows INTEGER NOT NULL,"
    " entries TEXT NOT NULL)";
constexpr const char* audit_view =
    "CREATE VIEW IF NOT EXISTS audit AS SELECT (b.id << 8) + r.key AS id,"
    " b.first_ms + (r.value->>0) AS time_ms, r.value->>1 AS kind, r.value->>2 AS client,"
    " r.value->>3 AS profile, r.value->>4 AS server, r.value->>5 AS name,"
    " r.value->>6 AS duration_us, r.value->>7 AS outcome, r.value->>8 AS request_bytes,"
    " r.value->>9 AS response_bytes, ifnull(r.value->>10, '') AS detail,"
    " ifnull(r.value->>11, '') AS redacted, ifnull(r.value->>12, '') AS run"
    " FROM audit_batch b, json_each(b.entries) r";

// The columns of the table that held one row an entry (stores made before 2026-12-07), which
// older stores are rewritten to before their rows move into batches.
constexpr const char* legacy_audit_columns_sql =
    " (id INTEGER PRIMARY KEY,"
    " time_ms INTEGER NOT NULL, kind INTEGER NOT NULL, client INTEGER NOT NULL,"
    " profile INTEGER NOT NULL, server INTEGER NOT NULL, name INTEGER NOT NULL,"
    " duration_us INTEGER NOT NULL, outcome INTEGER NOT NULL, request_bytes INTEGER NOT NULL,"
    " response_bytes INTEGER NOT NULL, detail TEXT NOT NULL, redacted TEXT NOT NULL DEFAULT '',"
    " run TEXT NOT NULL DEFAULT '')";

// The words' columns, in the order audit_entry's words() gives them.
constexpr std::array<const char*, 6> audit_word_columns{"kind",   "client", "profile",
                                                        "server", "name",   "outcome"};

// Every word id a row of the one-row-an-entry table uses (the rewrite of older stores).
std::string audit_words_used() {
  std::string out;
  for (const char* c : audit_word_columns)
    out += fmt::format("{}SELECT {} FROM audit", out.empty() ? "" : " UNION ", c);
  return out;
}

constexpr const char* schema =
    "CREATE TABLE IF NOT EXISTS audit_text (id INTEGER PRIMARY KEY, text TEXT NOT NULL UNIQUE);"
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
void bind_text(sqlite3_stmt* s, int i, std::string_view text,
               sqlite3_destructor_type lifetime = SQLITE_TRANSIENT) {
  sqlite3_bind_text(s, i, text.data(), static_cast<int>(text.size()), lifetime);
}

std::string column(sqlite3_stmt* s, int i) {
  const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(s, i));
  return t ? std::string(t, static_cast<std::size_t>(sqlite3_column_bytes(s, i))) : std::string();
}

// An entry's words, in the order of audit_word_columns.
std::array<std::string_view, 6> words(const audit_entry& a) {
  return {a.kind, a.client, a.profile, a.server, a.name, a.outcome};
}

// A batch's text, made a row at a time.
class batch_text {
 public:
  /// Starts a batch of about `rows` rows.
  void start(std::size_t rows) {
    text_.clear();
    text_.reserve(rows * 48 + 2);
    text_ += '[';
  }
  /// Appends a row: its ten numbers (the words as their ids), then its three texts unless all
  /// are empty.
  void row(const std::array<std::int64_t, 10>& numbers, std::string_view detail,
           std::string_view redacted, std::string_view run) {
    if (text_.size() > 1) text_ += ',';
    char buf[10 * 21 + 1];
    char* p = buf;
    *p++ = '[';
    for (const auto n : numbers) {
      p = decimal(p, n);
      *p++ = ',';
    }
    text_.append(buf, p - 1);  // (its last comma)
    if (!detail.empty() || !redacted.empty() || !run.empty())
      for (const auto t : {detail, redacted, run}) {
        text_ += ',';
        append_json_string(text_, t);
      }
    text_ += ']';
  }
  /// The batch's text, once its rows are in.
  std::string_view finish() {
    text_ += ']';
    return text_;
  }

 private:
  /// Writes `n` at `p` in decimal; returns past it. (Most of a row's numbers are word ids and
  /// small differences of a few digits: counted, then written two digits at a time from the
  /// last, without the general path of std::to_chars.)
  static char* decimal(char* p, std::int64_t n) {
    auto u = static_cast<std::uint64_t>(n);
    if (n < 0) {
      *p++ = '-';
      u = 0 - u;
    }
    if (u < 10) {
      *p = static_cast<char>('0' + u);
      return p + 1;
    }
    std::size_t len = 2;
    for (auto v = u / 100; v; v /= 10) ++len;
    char* d = p + len;
    for (; u >= 100; u /= 100) {
      d -= 2;
      std::memcpy(d, &two_digits[2 * (u % 100)], 2);
    }
    if (u >= 10)
      std::memcpy(d - 2, &two_digits[2 * u], 2);
    else
      d[-1] = static_cast<char>('0' + u);
    return p + len;
  }
  /// "00" to "99", one after another.
  static constexpr auto two_digits = [] {
    std::array<char, 200> t{};
    for (int i = 0; i < 100; ++i) {
      t[2 * i] = static_cast<char>('0' + i / 10);
      t[2 * i + 1] = static_cast<char>('0' + i % 10);
    }
    return t;
  }();
  std::string text_;
};

}  // namespace

struct state_store::impl {
  sqlite3* db = nullptr;
  statement insert_batch;
  /// Each batch's text is made here (its storage kept from one batch to the next).
  batch_text batch;
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
        audit_words_used(), legacy_audit_columns_sql, id_of("kind"), id_of("client"),
        id_of("profile"), id_of("server"), id_of("name"), id_of("outcome"));
    auto done = exec(sql.c_str());
    if (!done) (void)exec("ROLLBACK");
    return done;
  }
  /// A store made before 2026-12-07 has the table `audit`, one row an entry: brought up to its
  /// last form, then its rows moved into batches.
  result<> legacy_audit_table() {
    bool table = false;
    read("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'audit'", {},
         [&](sqlite3_stmt*) { table = true; });
    if (!table) return {};
    // Stores made before 2026-12-05 lack the columns added since (`redacted`, then `run`):
    // added, empty for their rows.
    for (const char* added : {"redacted", "run"}) {
      sqlite3_stmt* probe = nullptr;
      const auto select = fmt::format("SELECT {} FROM audit", added);
      if (sqlite3_prepare_v2(db, select.c_str(), -1, &probe, nullptr) == SQLITE_OK) {
        sqlite3_finalize(probe);
        continue;
      }
      const auto alter =
          fmt::format("ALTER TABLE audit ADD COLUMN {} TEXT NOT NULL DEFAULT ''", added);
      if (auto e = exec(alter.c_str()); !e) return e;
    }
    if (auto e = audit_words_to_ids(); !e) return e;
    return audit_rows_to_batches();
  }
  /// Stores made before 2026-12-07 kept one row an entry, in the table `audit`: its rows move
  /// into batches, in their order, and the table gives way to the view, in one transaction.
  result<> audit_rows_to_batches() {
    auto begun = exec("BEGIN");
    if (!begun) return begun;
    result<> done = [&]() -> result<> {
      std::vector<audit_entry> rows;
      std::vector<std::array<sqlite3_int64, 6>> ids;
      sqlite3_stmt* s = nullptr;
      if (sqlite3_prepare_v2(db,
                             "SELECT time_ms, kind, client, profile, server, name, duration_us,"
                             " outcome, request_bytes, response_bytes, detail, redacted, run"
                             " FROM audit ORDER BY id",
                             -1, &s, nullptr) != SQLITE_OK)
        return failure(sqlite3_errmsg(db));
      result<> moved;
      for (bool more = true; more && moved;) {
        const int rc = sqlite3_step(s);
        more = rc == SQLITE_ROW;
        if (!more && rc != SQLITE_DONE) {  // (not the end: nothing moves, nothing is dropped)
          moved = failure(sqlite3_errmsg(db));
          break;
        }
        if (more) {
          audit_entry& a = rows.emplace_back();
          a.time_ms = sqlite3_column_int64(s, 0);
          a.duration_us = sqlite3_column_int64(s, 6);
          a.request_bytes = sqlite3_column_int64(s, 8);
          a.response_bytes = sqlite3_column_int64(s, 9);
          a.detail = column(s, 10);
          a.redacted = column(s, 11);
          a.run = column(s, 12);
          auto& w = ids.emplace_back();
          for (int k = 0; k < 6; ++k) w[k] = sqlite3_column_int64(s, k == 5 ? 7 : k + 1);
        }
        if (rows.size() == audit_batch_rows || (!more && !rows.empty())) {
          moved = insert(rows, [&](std::size_t r) { return std::optional(ids[r]); });
          rows.clear();
          ids.clear();
        }
      }
      sqlite3_finalize(s);
      if (!moved) return moved;
      return exec("DROP TABLE audit");
    }();
    if (!done) {
      (void)exec("ROLLBACK");
      return done;
    }
    return exec("COMMIT");
  }
  /// Writes `rows` (at most audit_batch_rows) as one batch, their words' ids given by
  /// `ids_of(k)` for the k-th (none: the batch cannot be kept), in the caller's transaction.
  template <class Ids>
  result<> insert(std::span<const audit_entry> rows, Ids ids_of) {
    std::int64_t first = rows.front().time_ms, last = first;
    for (const auto& a : rows) {
      first = std::min(first, a.time_ms);
      last = std::max(last, a.time_ms);
    }
    batch.start(rows.size());
    for (std::size_t r = 0; r < rows.size(); ++r) {
      const auto& a = rows[r];
      const auto ids = ids_of(r);
      if (!ids) return failure(sqlite3_errmsg(db));
      const auto& w = *ids;
      batch.row({a.time_ms - first, w[0], w[1], w[2], w[3], w[4], a.duration_us, w[5],
                 a.request_bytes, a.response_bytes},
                a.detail, a.redacted, a.run);
    }
    sqlite3_stmt* s = insert_batch.s;
    sqlite3_bind_int64(s, 1, first);
    sqlite3_bind_int64(s, 2, last);
    sqlite3_bind_int64(s, 3, static_cast<sqlite3_int64>(rows.size()));
    bind_text(s, 4, batch.finish(), SQLITE_STATIC);
    const int rc = sqlite3_step(s);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    if (rc != SQLITE_DONE) return failure(sqlite3_errmsg(db));
    return {};
  }
  /// The connection serves one thread at a time: the event loop, and the audit writer's thread.
  mutable std::mutex m;
  ~impl() {
    sqlite3_finalize(insert_batch.s);
    insert_batch.s = nullptr;
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
  for (const char* sql :
       {"PRAGMA journal_mode = WAL", "PRAGMA synchronous = NORMAL", schema, audit_batch_table})
    if (auto e = i->exec(sql); !e) return failure(fmt::format("{}: {}", path, e.error().message));
  if (sqlite3_prepare_v3(i->db,
                         "INSERT INTO audit_batch(first_ms, last_ms, rows, entries)"
                         " VALUES (?1, ?2, ?3, ?4)",
                         -1, SQLITE_PREPARE_PERSISTENT, &i->insert_batch.s, nullptr) != SQLITE_OK)
    return failure(fmt::format("{}: {}", path, sqlite3_errmsg(i->db)));
  if (auto e = i->legacy_audit_table(); !e)
    return failure(fmt::format("{}: {}", path, e.error().message));
  if (auto e = i->exec(audit_view); !e)
    return failure(fmt::format("{}: {}", path, e.error().message));
  i->load_words();
  i->words_after_sweep = i->word_ids.size();
  // (An upsert, so that a word another process added meanwhile is found, not refused.)
  if (sqlite3_prepare_v3(i->db,
                         "INSERT INTO audit_text(text) VALUES (?1) ON CONFLICT (text) DO UPDATE"
                         " SET text = excluded.text RETURNING id",
                         -1, SQLITE_PREPARE_PERSISTENT, &i->add_word.s, nullptr) != SQLITE_OK)
    return failure(fmt::format("{}: {}", path, sqlite3_errmsg(i->db)));
  return std::unique_ptr<state_store>(new state_store(std::move(i)));
}

result<> state_store::append(std::span<const audit_entry> entries) {
  if (entries.empty()) return {};
  auto& d = *impl_;
  std::lock_guard lock(d.m);
  if (auto begun = d.exec("BEGIN"); !begun) return begun;
  for (std::size_t at = 0; at < entries.size(); at += audit_batch_rows) {
    const auto rows = entries.subspan(at, std::min(audit_batch_rows, entries.size() - at));
    if (auto written = d.insert(rows, [&](std::size_t r) { return d.word_ids_of(rows[r]); });
        !written) {
      (void)d.exec("ROLLBACK");
      d.load_words();  // the words this transaction added are gone again
      return written;
    }
  }
  return d.exec("COMMIT");
}

std::vector<audit_entry> state_store::history(const audit_query& q) const {
  std::lock_guard lock(impl_->m);
  auto& d = *impl_;
  std::vector<audit_entry> out;
  // A word no row has: no row matches.
  const auto id_of = [&](const std::string& w) -> std::optional<sqlite3_int64> {
    if (w.empty()) return 0;
    const auto it = d.word_ids.find(std::string_view(w));
    if (it == d.word_ids.end()) return std::nullopt;
    return it->second;
  };
  const auto server = id_of(q.server), name = id_of(q.name);
  if (!server || !name || q.limit == 0) return out;
  // Each word by its id (a word another process added since the store opened is read again).
  std::unordered_map<sqlite3_int64, std::string_view> text_of;
  const auto index_words = [&] {
    text_of.clear();
    for (const auto& [w, id] : d.word_ids) text_of.emplace(id, w);
  };
  index_words();
  bool reloaded = false;
  const auto word = [&](const json::value& id) -> std::string {
    const auto n = id.is_int64() ? id.get_int64() : -1;
    auto it = text_of.find(n);
    if (it == text_of.end() && !reloaded) {
      reloaded = true;
      d.load_words();
      index_words();
      it = text_of.find(n);
    }
    return it == text_of.end() ? std::string() : std::string(it->second);
  };
  const auto number = [](const json::value& v) { return v.is_int64() ? v.get_int64() : 0; };
  const auto text = [](const json::array& row, std::size_t k) {
    return k < row.size() && row[k].is_string() ? std::string(row[k].get_string()) : std::string();
  };
  // The batches that may hold a match, the newest first; in each, its rows the last first, until
  // there are `limit`. (Read here, not by SQLite's JSON functions: those read a row's text again
  // for each column, ~40,000 instructions a row.)
  sqlite3_stmt* batches = nullptr;
  if (sqlite3_prepare_v2(d.db,
                         "SELECT entries, first_ms FROM audit_batch WHERE last_ms >= ?1"
                         " ORDER BY id DESC",
                         -1, &batches, nullptr) != SQLITE_OK)
    return out;
  sqlite3_bind_int64(batches, 1, q.since_ms);
  while (out.size() < q.limit && sqlite3_step(batches) == SQLITE_ROW) {
    const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(batches, 0));
    boost::system::error_code ec;
    json::monotonic_resource parsed;  // (a batch's values go together)
    const auto rows = json::parse(
        std::string_view(t ? t : "", static_cast<std::size_t>(sqlite3_column_bytes(batches, 0))),
        ec, &parsed);
    if (ec || !rows.is_array()) continue;  // (not a batch this store wrote)
    const std::int64_t first_ms = sqlite3_column_int64(batches, 1);
    const auto& all = rows.get_array();
    for (auto r = all.rbegin(); r != all.rend() && out.size() < q.limit; ++r) {
      if (!r->is_array() || r->get_array().size() < 10) continue;
      const auto& row = r->get_array();
      if ((*server && number(row[4]) != *server) || (*name && number(row[5]) != *name) ||
          first_ms + number(row[0]) < q.since_ms || (!q.run.empty() && text(row, 12) != q.run))
        continue;
      audit_entry& a = out.emplace_back();
      a.time_ms = first_ms + number(row[0]);
      a.kind = word(row[1]);
      a.client = word(row[2]);
      a.profile = word(row[3]);
      a.server = word(row[4]);
      a.name = word(row[5]);
      a.duration_us = number(row[6]);
      a.outcome = word(row[7]);
      a.request_bytes = number(row[8]);
      a.response_bytes = number(row[9]);
      a.detail = text(row, 10);
      a.redacted = text(row, 11);
      a.run = text(row, 12);
    }
  }
  sqlite3_finalize(batches);
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
  std::int64_t n = 0;
  impl_->read("SELECT ifnull(sum(rows), 0) FROM audit_batch", {},
              [&](sqlite3_stmt* s) { n = sqlite3_column_int64(s, 0); });
  return n;
}

std::int64_t state_store::trim(const audit_retention& r, std::int64_t now_ms,
                               std::int64_t at_most) {
  std::lock_guard lock(impl_->m);
  auto& d = *impl_;
  // Whole batches go: among the oldest batches that hold `at_most` rows (one batch at least),
  // those whose newest row is too old, and from the oldest on, while the newer batches alone
  // hold `max_rows`, those beyond the count. Batches go in as they are handed over and a row's
  // time is when its call began, so the ids follow the times but for calls that overlapped: a
  // too old batch behind a younger one goes all the same, once within the window.
  std::int64_t total = 0;
  d.read("SELECT ifnull(sum(rows), 0) FROM audit_batch", {},
         [&](sqlite3_stmt* s) { total = sqlite3_column_int64(s, 0); });
  const std::int64_t too_old = now_ms - r.days * 86400000;
  std::int64_t removed = 0, seen = 0;
  std::string ids;
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(d.db, "SELECT id, rows, last_ms FROM audit_batch ORDER BY id", -1, &s,
                         nullptr) == SQLITE_OK) {
    bool counting = true;  // until the first batch kept
    while ((seen == 0 || seen < at_most) && sqlite3_step(s) == SQLITE_ROW) {
      const std::int64_t rows = sqlite3_column_int64(s, 1);
      seen += rows;
      counting = counting && total - removed - rows >= r.max_rows;
      if (!counting && sqlite3_column_int64(s, 2) >= too_old) continue;
      removed += rows;
      ids += fmt::format("{}{}", ids.empty() ? "" : ",", sqlite3_column_int64(s, 0));
    }
  }
  sqlite3_finalize(s);
  if (removed == 0) return 0;
  const auto drop = fmt::format("DELETE FROM audit_batch WHERE id IN ({})", ids);
  if (!d.exec(drop.c_str())) return 0;
  // The words no row uses any more go once there are twice as many as after the last sweep
  // (a client's label holds its pid: one word a connection), not at every trim (the sweep reads
  // the whole log).
  if (d.word_ids.size() > 2 * d.words_after_sweep + 64) {
    // (Each batch's text and each row's read once: the view would read a row again for each
    // of its six words.)
    (void)d.exec(
        "DELETE FROM audit_text WHERE id NOT IN (SELECT w.value FROM audit_batch b,"
        " json_each(b.entries) r, json_each(r.value) w WHERE w.key IN (1, 2, 3, 4, 5, 7))");
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
        bind_text(s, 1, r.server);
        bind_text(s, 2, r.config_hash);
        bind_text(s, 3, r.doc);
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
        bind_text(s, 1, p.server);
        bind_text(s, 2, p.kind);
        bind_text(s, 3, p.name);
        bind_text(s, 4, p.definition);
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
        bind_text(s, 1, r.server);
        bind_text(s, 2, r.hash);
        sqlite3_bind_int64(s, 3, r.since);
      });
}

}  // namespace mcpmux
