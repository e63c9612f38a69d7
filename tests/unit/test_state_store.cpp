// Unit tests of core/state_store: the audit log's table — private file, batches, queries,
// retention, and a database that survives being reopened — pins and trust, a store in memory,
// and the audit writer's thread (core/audit_writer).
#include "core/state_store.hpp"

#include <sqlite3.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <fmt/format.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <limits>
#include <memory>
#include <mutex>
#include <thread>

#include "core/audit_writer.hpp"

namespace mcpmux {
namespace {

using ::testing::ElementsAre;

struct temp_db {
  std::string dir;
  temp_db() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "mcpmux-store-XXXXXX").string();
    dir = ::mkdtemp(tmpl.data());
  }
  ~temp_db() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  std::string path() const { return dir + "/state/state.db"; }
  /// The store at path() (null, with the reason reported as a failure, when it cannot open).
  std::unique_ptr<state_store> open() const {
    auto store = state_store::open(path());
    EXPECT_TRUE(store) << store.error().message;
    return store ? std::move(*store) : nullptr;
  }
};

audit_entry entry(std::int64_t t, std::string server, std::string name, std::string outcome) {
  audit_entry e;
  e.time_ms = t;
  e.kind = "tools/call";
  e.client = "socket pid 1 /usr/bin/node";
  e.server = std::move(server);
  e.name = std::move(name);
  e.duration_us = 120;
  e.outcome = std::move(outcome);
  e.request_bytes = 80;
  e.response_bytes = 200;
  return e;
}

std::vector<std::string> names(const std::vector<audit_entry>& v) {
  std::vector<std::string> out;
  for (const auto& e : v) out.push_back(e.name);
  return out;
}

TEST(StateStore, KeepsTheAuditLogPrivatelyAndAcrossReopens) {
  temp_db t;
  auto store = t.open();
  ASSERT_TRUE(store);
  struct stat st {};
  ASSERT_EQ(::stat(t.path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat((t.dir + "/state").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);

  EXPECT_TRUE(store
                  ->append(std::vector{entry(1000, "gh", "gh__a", "ok"),
                                       entry(2000, "fs", "fs__b", "error"),
                                       entry(3000, "gh", "gh__c", "tool_error")})
                  .ok());
  EXPECT_TRUE(store->append({}).ok());
  EXPECT_EQ(store->audit_rows(), 3);
  EXPECT_THAT(names(store->history({})), ElementsAre("gh__a", "fs__b", "gh__c"));  // oldest first
  EXPECT_THAT(names(store->history({"gh", "", 0, 100})), ElementsAre("gh__a", "gh__c"));
  EXPECT_THAT(names(store->history({"", "fs__b", 0, 100})), ElementsAre("fs__b"));
  EXPECT_THAT(names(store->history({"", "", 2000, 100})), ElementsAre("fs__b", "gh__c"));
  EXPECT_THAT(names(store->history({"", "", 0, 2})), ElementsAre("fs__b", "gh__c"));  // the newest
  const auto all = store->history({});
  EXPECT_EQ(all[2].outcome, "tool_error");
  EXPECT_EQ(all[2].client, "socket pid 1 /usr/bin/node");
  EXPECT_EQ(all[2].duration_us, 120);
  EXPECT_EQ(all[2].response_bytes, 200);

  store.reset();
  store = t.open();
  ASSERT_TRUE(store);
  EXPECT_EQ(store->audit_rows(), 3);
}

// A batch goes in by groups of rows in one statement and the rest one by one, plain rows (no
// detail, nothing redacted, no run) by statements of their own: 37 entries, every field
// different from row to row, the first group plain, the second mixed, come back in order and
// whole.
TEST(StateStore, ABatchOfAnySizeKeepsEveryFieldOfEveryRowInOrder) {
  temp_db t;
  auto store = t.open();
  ASSERT_TRUE(store);
  std::vector<audit_entry> batch;
  // Numbers of every length the batch's text writes (and a time before the batch's first).
  const std::int64_t magnitudes[] = {
      0,     7,      10,        42,        99,
      100,   505,    999,       1000,      65536,
      99999, 123456, 987654321, 1LL << 40, std::numeric_limits<std::int64_t>::max()};
  for (int i = 0; i < 37; ++i) {
    audit_entry e;
    e.time_ms = i == 5 ? 900 : 1000 + i;
    e.kind = i % 2 ? "tools/call" : "prompts/get";
    e.client = "socket pid " + std::to_string(i);
    e.profile = "p" + std::to_string(i);
    e.server = "s" + std::to_string(i % 5);
    e.name = "tool" + std::to_string(i);
    e.duration_us = magnitudes[i % std::size(magnitudes)];
    e.outcome = i % 3 ? "ok" : "error";
    e.request_bytes = 100 + i;
    e.response_bytes = magnitudes[(i + 4) % std::size(magnitudes)];
    if (i >= 16 && i % 3 == 0) e.detail = std::string(static_cast<std::size_t>(i), 'd');
    if (i == 20 || i == 34) e.redacted = "github-token " + std::to_string(i);
    if (i == 21 || i == 35) e.run = "run-" + std::to_string(i);
    batch.push_back(std::move(e));
  }
  ASSERT_TRUE(store->append(batch).ok());
  ASSERT_TRUE(store->append(std::span(batch).first(20)).ok());  // a group and four alone, again
  EXPECT_EQ(store->audit_rows(), 57);
  const auto got = store->history({"", "", 0, 100});
  ASSERT_EQ(got.size(), 57u);
  for (std::size_t k = 0; k < got.size(); ++k) {
    const auto& want = batch[k < 37 ? k : k - 37];
    const auto& row = got[k];
    SCOPED_TRACE(k);
    EXPECT_EQ(row.time_ms, want.time_ms);
    EXPECT_EQ(row.kind, want.kind);
    EXPECT_EQ(row.client, want.client);
    EXPECT_EQ(row.profile, want.profile);
    EXPECT_EQ(row.server, want.server);
    EXPECT_EQ(row.name, want.name);
    EXPECT_EQ(row.duration_us, want.duration_us);
    EXPECT_EQ(row.outcome, want.outcome);
    EXPECT_EQ(row.request_bytes, want.request_bytes);
    EXPECT_EQ(row.response_bytes, want.response_bytes);
    EXPECT_EQ(row.detail, want.detail);
    EXPECT_EQ(row.redacted, want.redacted);
    EXPECT_EQ(row.run, want.run);
  }
}

// What one query of a store's own database answers, as text ("" when nothing).
std::string ask(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  std::string out;
  if (sqlite3_open(path.c_str(), &db) == SQLITE_OK) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
      if (const auto* t = sqlite3_column_text(s, 0)) out = reinterpret_cast<const char*>(t);
    sqlite3_finalize(s);
  }
  sqlite3_close(db);
  return out;
}

bool run_sql(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  bool ok = sqlite3_open(path.c_str(), &db) == SQLITE_OK &&
            sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK;
  sqlite3_close(db);
  return ok;
}

// Retention drops whole batches (the rows appended together): here three batches of four old
// rows, then eight of 250 new ones.
TEST(StateStore, RetentionDropsTheOldestBatchesByAgeAndCount) {
  temp_db t;
  auto store = t.open();
  ASSERT_TRUE(store);
  const std::int64_t day = 86400000, now = 100 * day;
  for (int b = 0; b < 3; ++b) {
    std::vector<audit_entry> batch;
    for (int i = 0; i < 4; ++i) batch.push_back(entry(now - (40 - b) * day, "s", "old", "ok"));
    ASSERT_TRUE(store->append(batch).ok());
  }
  for (int b = 0; b < 8; ++b) {
    std::vector<audit_entry> batch;
    for (int i = 0; i < 250; ++i)
      batch.push_back(entry(now - 1000 + 250 * b + i, "s", "new", "ok"));
    ASSERT_TRUE(store->append(batch).ok());
  }
  EXPECT_EQ(store->audit_rows(), 2012);
  // In steps among the oldest batches that hold so many rows: one batch at least, whole.
  EXPECT_EQ(store->trim({.days = 30, .max_rows = 1500}, now, 1), 4);
  EXPECT_EQ(store->audit_rows(), 2008);
  // Two too old, and one beyond the count: the batches after it hold 1,750 rows.
  EXPECT_EQ(store->trim({.days = 30, .max_rows = 1500}, now, 10), 4 + 4 + 250);
  EXPECT_EQ(store->history({"", "", 0, 2000, ""}).front().time_ms, now - 1000 + 250);
  EXPECT_EQ(store->trim({.days = 30, .max_rows = 1500}, now), 250);
  EXPECT_EQ(store->trim({.days = 30, .max_rows = 1500}, now), 0);
  EXPECT_EQ(store->audit_rows(), 1500);
  EXPECT_EQ(store->history({"", "", 0, 1, ""}).front().time_ms, now + 999);  // the newest stay
  // A batch that holds rows within the count stays whole.
  EXPECT_EQ(store->trim({.days = 30, .max_rows = 1499}, now), 0);
  EXPECT_EQ(store->trim({.days = 30, .max_rows = 1250}, now), 250);
}

// A call that began long ago ends after younger ones (its row comes later): the trim by age
// still finds its batch among the oldest; batches beyond the window wait for the next trim.
TEST(StateStore, RetentionByAgeTakesOldBatchesBehindYoungerOnes) {
  temp_db t;
  auto store = t.open();
  ASSERT_TRUE(store);
  const std::int64_t day = 86400000, now = 100 * day;
  for (const auto& e :
       {entry(now - 40 * day, "s", "old1", "ok"), entry(now - 1, "s", "young1", "ok"),
        entry(now - 31 * day, "s", "old2", "ok"), entry(now - 2, "s", "young2", "ok")})
    ASSERT_TRUE(store->append(std::vector{e}).ok());
  EXPECT_EQ(store->trim({.days = 30, .max_rows = 1000}, now), 2);
  EXPECT_THAT(names(store->history({})), ElementsAre("young1", "young2"));
  ASSERT_TRUE(store->append(std::vector{entry(now - 35 * day, "s", "old3", "ok")}).ok());
  EXPECT_EQ(store->trim({.days = 30, .max_rows = 1000}, now, 2), 0);  // behind young1, young2
  EXPECT_EQ(store->trim({.days = 30, .max_rows = 1000}, now + 31 * day), 3);
  EXPECT_EQ(store->audit_rows(), 0);
  // A batch goes by age once its newest row is too old.
  ASSERT_TRUE(store
                  ->append(std::vector{entry(now - 40 * day, "s", "old", "ok"),
                                       entry(now - 1, "s", "young", "ok")})
                  .ok());
  EXPECT_EQ(store->trim({.days = 30, .max_rows = 1000}, now), 0);
  EXPECT_EQ(store->trim({.days = 30, .max_rows = 1000}, now + 30 * day), 2);
}

// A store made before 2026-12-07 kept one row an entry (with the indexes some had): its rows
// move into batches of 256, in order and whole; the table gives way to the view `audit`.
TEST(StateStore, AStoreOfOneRowAnEntryMovesIntoBatches) {
  temp_db t;
  std::filesystem::create_directories(std::filesystem::path(t.path()).parent_path());
  std::string sql =
      "CREATE TABLE audit_text (id INTEGER PRIMARY KEY, text TEXT NOT NULL UNIQUE);"
      "INSERT INTO audit_text VALUES (1, 'tools/call'), (2, 'socket pid 7 node'), (3, ''),"
      " (4, 'gh'), (5, 'ok'), (6, 'error');"
      "CREATE TABLE audit (id INTEGER PRIMARY KEY, time_ms INTEGER NOT NULL,"
      " kind INTEGER NOT NULL, client INTEGER NOT NULL, profile INTEGER NOT NULL,"
      " server INTEGER NOT NULL, name INTEGER NOT NULL, duration_us INTEGER NOT NULL,"
      " outcome INTEGER NOT NULL, request_bytes INTEGER NOT NULL,"
      " response_bytes INTEGER NOT NULL, detail TEXT NOT NULL, redacted TEXT NOT NULL DEFAULT '',"
      " run TEXT NOT NULL DEFAULT '');"
      "CREATE INDEX audit_server ON audit(server, time_ms); CREATE INDEX audit_time ON "
      "audit(time_ms);";
  for (int i = 1; i <= 300; ++i)
    sql += fmt::format(
        "INSERT INTO audit VALUES ({0}, {0}, 1, 2, 3, 4, 4, {0}, {1}, 10, 20, '{2}', '', '');", i,
        i % 7 ? 5 : 6, i % 50 ? "" : "say \"\\\"hi\n");
  ASSERT_TRUE(run_sql(t.path(), sql.c_str()));
  auto store = t.open();
  ASSERT_TRUE(store);
  EXPECT_EQ(ask(t.path(), "SELECT type FROM sqlite_schema WHERE name = 'audit'"), "view");
  EXPECT_EQ(ask(t.path(),
                "SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND"
                " name LIKE 'audit%'"),
            "0");
  EXPECT_EQ(ask(t.path(), "SELECT group_concat(rows) FROM audit_batch"), "256,44");
  EXPECT_EQ(store->audit_rows(), 300);
  const auto got = store->history({"", "", 0, 1000, ""});
  ASSERT_EQ(got.size(), 300u);
  for (int i = 1; i <= 300; ++i) {
    const auto& row = got[static_cast<std::size_t>(i - 1)];
    SCOPED_TRACE(i);
    EXPECT_EQ(row.time_ms, i);
    EXPECT_EQ(row.duration_us, i);
    EXPECT_EQ(row.outcome, i % 7 ? "ok" : "error");
    EXPECT_EQ(row.client, "socket pid 7 node");
    EXPECT_EQ(row.detail, i % 50 ? "" : "say \"\\\"hi\n");
  }
  // The view shows the rows as the table did: ids of words, times whole.
  EXPECT_EQ(ask(t.path(), "SELECT count(*) FROM audit WHERE outcome = 6"), "42");
  EXPECT_EQ(ask(t.path(), "SELECT group_concat(time_ms) FROM audit WHERE id % 256 = 3"), "4,260");
  EXPECT_EQ(ask(t.path(), "SELECT detail FROM audit WHERE time_ms = 150"), "say \"\\\"hi\n");
}

// A row holds the ids of its words (kind, client, profile, server, name, outcome); each word is
// kept once, however many rows use it.
TEST(StateStore, AnAuditRowHoldsItsWordsOnceEach) {
  temp_db t;
  auto store = t.open();
  ASSERT_TRUE(store);
  std::vector<audit_entry> rows;
  for (int i = 0; i < 50; ++i) rows.push_back(entry(i, "s", "n" + std::to_string(i % 3), "ok"));
  ASSERT_TRUE(store->append(rows).ok());
  // tools/call, the client, "" (the profile), s, n0, n1, n2, ok
  EXPECT_EQ(ask(t.path(), "SELECT count(*) FROM audit_text"), "8");
  EXPECT_EQ(ask(t.path(), "SELECT typeof(client) || typeof(server) FROM audit LIMIT 1"),
            "integerinteger");
  const auto got = store->history({"s", "n1", 0, 100});
  ASSERT_EQ(got.size(), 17u);
  EXPECT_EQ(got[0].client, "socket pid 1 /usr/bin/node");
  EXPECT_EQ(got[0].kind, "tools/call");
  EXPECT_EQ(got[0].outcome, "ok");
  EXPECT_EQ(got[0].time_ms, 1);
  EXPECT_TRUE(store->history({"nobody", "", 0, 100}).empty());
}

// A store made before the words had ids (and before the redacted and run columns) keeps its
// rows: they come back as they were written, and new rows join them.
TEST(StateStore, AStoreWithTheWordsInEveryRowIsRewrittenWithTheirIds) {
  temp_db t;
  std::filesystem::create_directories(std::filesystem::path(t.path()).parent_path());
  ASSERT_TRUE(run_sql(
      t.path(),
      "CREATE TABLE audit (id INTEGER PRIMARY KEY, time_ms INTEGER NOT NULL, kind TEXT NOT NULL,"
      " client TEXT NOT NULL, profile TEXT NOT NULL, server TEXT NOT NULL, name TEXT NOT NULL,"
      " duration_us INTEGER NOT NULL, outcome TEXT NOT NULL, request_bytes INTEGER NOT NULL,"
      " response_bytes INTEGER NOT NULL, detail TEXT NOT NULL);"
      "CREATE INDEX audit_server ON audit(server, time_ms);"
      "INSERT INTO audit VALUES (1, 100, 'tools/call', 'socket pid 7 node', 'work', 'gh',"
      " 'gh__get_issue', 1500, 'ok', 80, 900, '{\"number\":1}');"
      "INSERT INTO audit VALUES (2, 200, 'resources/read', 'http', '', 'fs', 'file:///a',"
      " 300, 'error', 60, 120, '');"
      "INSERT INTO audit VALUES (3, 300, 'tools/call', 'socket pid 7 node', 'work', 'gh',"
      " 'gh__get_issue', 900, 'tool_error', 80, 100, '');"));
  auto store = t.open();
  ASSERT_TRUE(store);
  EXPECT_EQ(ask(t.path(), "SELECT typeof(client) FROM audit LIMIT 1"), "integer");
  EXPECT_EQ(ask(t.path(), "SELECT count(*) FROM audit_text"), "13");
  auto got = store->history({"", "", 0, 100});
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].time_ms, 100);
  EXPECT_EQ(got[0].kind, "tools/call");
  EXPECT_EQ(got[0].client, "socket pid 7 node");
  EXPECT_EQ(got[0].profile, "work");
  EXPECT_EQ(got[0].server, "gh");
  EXPECT_EQ(got[0].name, "gh__get_issue");
  EXPECT_EQ(got[0].duration_us, 1500);
  EXPECT_EQ(got[0].outcome, "ok");
  EXPECT_EQ(got[0].request_bytes, 80);
  EXPECT_EQ(got[0].response_bytes, 900);
  EXPECT_EQ(got[0].detail, R"({"number":1})");
  EXPECT_EQ(got[0].redacted, "");
  EXPECT_EQ(got[1].name, "file:///a");
  EXPECT_EQ(got[1].profile, "");
  EXPECT_EQ(got[2].outcome, "tool_error");
  ASSERT_TRUE(store->append(std::vector{entry(400, "gh", "gh__get_issue", "ok")}).ok());
  got = store->history({"gh", "", 0, 100});
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[2].time_ms, 400);
  EXPECT_EQ(got[2].client, "socket pid 1 /usr/bin/node");
  store.reset();
  store = t.open();  // once rewritten, opened as any other
  ASSERT_TRUE(store);
  EXPECT_EQ(store->audit_rows(), 4);
}

// A client's label holds its pid: one word a connection. The words no row uses any more go
// with the rows the retention drops.
TEST(StateStore, TheWordsNoRowUsesGoWithTheRowsThatUsedThem) {
  temp_db t;
  auto store = t.open();
  ASSERT_TRUE(store);
  std::vector<audit_entry> rows;
  for (int i = 0; i < 200; ++i) {
    rows.push_back(entry(i, "s", "n", "ok"));
    rows.back().client = "socket pid " + std::to_string(i);
  }
  for (std::size_t at = 0; at < rows.size(); at += 10)  // batches of ten
    ASSERT_TRUE(store->append(std::span(rows).subspan(at, 10)).ok());
  EXPECT_EQ(ask(t.path(), "SELECT count(*) FROM audit_text"), "205");
  EXPECT_EQ(store->trim({.days = 30, .max_rows = 10}, 1000), 190);
  EXPECT_EQ(ask(t.path(), "SELECT count(*) FROM audit_text"), "15");  // 10 clients, 5 words
  const auto kept = store->history({"", "", 0, 100});
  ASSERT_EQ(kept.size(), 10u);
  EXPECT_EQ(kept[0].client, "socket pid 190");
  // Words that went come back when a row brings them again.
  ASSERT_TRUE(store->append(std::vector{rows[3]}).ok());
  EXPECT_EQ(store->history({"", "", 0, 1})[0].client, "socket pid 3");
}

// A batch that cannot be kept takes the words it added with it: the next one adds them again.
TEST(StateStore, ARefusedBatchLeavesNoWordBehindThatItsRowsNeeded) {
  temp_db t;
  auto store = t.open();
  ASSERT_TRUE(store);
  ASSERT_TRUE(run_sql(t.path(),
                      "CREATE TRIGGER refuse BEFORE INSERT ON audit_batch"
                      " WHEN NEW.entries LIKE '%,666,%'"
                      " BEGIN SELECT RAISE(FAIL, 'refused'); END;"));
  auto e = entry(1, "fresh-server", "fresh-tool", "ok");
  e.duration_us = 666;
  EXPECT_FALSE(store->append(std::vector{e}).ok());
  EXPECT_EQ(ask(t.path(), "SELECT count(*) FROM audit_text WHERE text = 'fresh-server'"), "0");
  ASSERT_TRUE(run_sql(t.path(), "DROP TRIGGER refuse"));
  e.duration_us = 1;
  ASSERT_TRUE(store->append(std::vector{e}).ok());
  const auto got = store->history({"fresh-server", "", 0, 10});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].name, "fresh-tool");
}

TEST(StateStore, KeepsPinsAndTrustPerServerAndConfiguration) {
  temp_db t;
  auto store = t.open();
  ASSERT_TRUE(store);
  EXPECT_FALSE(store->trusted("fs", "h1"));
  ASSERT_TRUE(store
                  ->put_pins({{"fs", "tools", "read", "{\"description\":\"a\"}"},
                              {"fs", "prompts", "read", "{}"},
                              {"web", "tools", "get", "{}"}})
                  .ok());
  ASSERT_TRUE(store->set_trusted("fs", "h1", 1000).ok());
  // A pin is replaced by name; the server's pins are its own.
  ASSERT_TRUE(store->put_pins({{"fs", "tools", "read", "{\"description\":\"b\"}"}}).ok());
  store.reset();
  store = t.open();
  ASSERT_TRUE(store);
  const auto pins = store->pins("fs");
  ASSERT_EQ(pins.size(), 2u);
  for (const auto& p : pins) {
    if (p.kind == "tools") {
      EXPECT_EQ(p.definition, "{\"description\":\"b\"}");
    }
  }
  EXPECT_TRUE(store->trusted("fs", "h1"));
  EXPECT_FALSE(store->trusted("fs", "h2"));  // another configuration of it is not
  EXPECT_FALSE(store->trusted("web", "h1"));
  ASSERT_TRUE(store->set_trusted("fs", "h2", 2000).ok());
  EXPECT_TRUE(store->trusted("fs", "h2"));
  EXPECT_FALSE(store->trusted("fs", "h1"));
}

TEST(StateStore, InMemoryWhenAsked) {
  auto opened = state_store::open(":memory:");
  ASSERT_TRUE(opened) << opened.error().message;
  auto& store = *opened;
  ASSERT_TRUE(store->put_cached_tools({"s", "h", "{}"}).ok());
  EXPECT_EQ(store->cached_tools().size(), 1u);
  EXPECT_FALSE(std::filesystem::exists(":memory:"));
}

TEST(StateStore, AnUnusablePathIsAnError) {
  auto store = state_store::open("/proc/mcpmux-no/state.db");
  ASSERT_FALSE(store);
  EXPECT_THAT(store.error().message, ::testing::HasSubstr("/proc/mcpmux-no"));
}

std::vector<audit_entry> batch_of(std::int64_t first, int n) {
  std::vector<audit_entry> out;
  for (int i = 0; i < n; ++i)
    out.push_back(entry(first + i, "s", "s__" + std::to_string(first + i), "ok"));
  return out;
}

TEST(AuditWriter, WritesBatchesInOrderWhileTheCallerUsesTheStore) {
  temp_db t;
  auto store = t.open();
  ASSERT_TRUE(store);
  audit_writer w(*store);
  // Batches larger than a transaction, and the store used from this thread meanwhile.
  for (int b = 0; b < 8; ++b) {
    w.write(batch_of(b * 1000, 1000));
    ASSERT_TRUE(store->put_pins({{"s", "tools", "t" + std::to_string(b), "{}"}}).ok());
    EXPECT_LE(store->audit_rows(), (b + 1) * 1000);
  }
  w.trim({.days = 30, .max_rows = 4000}, 8000 + 1);  // after the batches before it
  w.write(batch_of(8000, 10));
  w.drain();
  EXPECT_EQ(store->audit_rows(), 4010);
  EXPECT_EQ(store->pins("s").size(), 8u);
  const auto newest = store->history({"", "", 0, 1});
  ASSERT_EQ(newest.size(), 1u);
  EXPECT_EQ(newest.front().time_ms, 8009);
  EXPECT_EQ(w.take_error(), "");
}

TEST(AuditWriter, WritesWhatWasHandedOverBeforeItGoes) {
  temp_db t;
  auto store = t.open();
  ASSERT_TRUE(store);
  {
    audit_writer w(*store);
    w.write(batch_of(0, 3000));
  }
  EXPECT_EQ(store->audit_rows(), 3000);
  audit_writer idle(*store);  // never handed anything: no thread to stop
  idle.drain();
  EXPECT_EQ(idle.take_error(), "");
}

// A busy daemon's batches reuse one vector's storage instead of growing a new one per flush; a
// quiet daemon's few entries do not keep a big vector alive.
TEST(AuditWriter, HandsBackTheStorageOfABusyBatch) {
  temp_db t;
  auto store = t.open();
  ASSERT_TRUE(store);
  audit_writer w(*store);
  EXPECT_EQ(w.take_spare().capacity(), 0u);
  auto busy = batch_of(0, 1000);
  busy[0].detail.assign(5000, 'x');
  const auto* storage = busy.data();
  w.write(std::move(busy));
  w.drain();
  auto spare = w.take_spare();
  // The rows written, as slots for the next batch's: a long argument text's storage let go.
  EXPECT_EQ(spare.size(), 1000u);
  EXPECT_EQ(spare.data(), storage);
  EXPECT_LE(spare[0].detail.capacity(), audit_writer::max_kept_detail);
  EXPECT_EQ(w.take_spare().capacity(), 0u);  // handed out once
  spare.resize(1);
  spare[0] = entry(1000, "s", "t", "ok");
  w.write(std::move(spare));  // one entry in room for 1000: let go
  w.drain();
  EXPECT_EQ(w.take_spare().capacity(), 0u);
  EXPECT_EQ(store->audit_rows(), 1001);
  // Only the rows handed over are written; the slots after them come back with them.
  auto part = batch_of(2000, 120);
  part[110].name = "not written";
  w.write(std::move(part), 100);
  w.drain();
  EXPECT_EQ(store->audit_rows(), 1101);
  EXPECT_EQ(store->history({"", "", 0, 1, ""}).back().time_ms, batch_of(2000, 100).back().time_ms);
  EXPECT_EQ(w.take_spare().size(), 120u);
}

TEST(AuditWriter, ReportsWhatItCouldNotKeepOnce) {
  temp_db t;
  auto store = t.open();
  ASSERT_TRUE(store);
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(t.path().c_str(), &other), SQLITE_OK);
  ASSERT_EQ(
      sqlite3_exec(other, "DROP VIEW audit; DROP TABLE audit_batch", nullptr, nullptr, nullptr),
      SQLITE_OK);
  sqlite3_close(other);
  audit_writer w(*store);
  w.write(batch_of(0, 300));  // two transactions, both refused
  w.drain();
  const auto why = w.take_error();
  EXPECT_THAT(why, ::testing::HasSubstr("no such table"));
  EXPECT_THAT(why, ::testing::HasSubstr("(300 entries not kept)"));
  EXPECT_EQ(w.take_error(), "");  // told once
}

TEST(AuditWriter, BeyondItsBacklogTheHandOverWaitsAndNothingIsLost) {
  temp_db t;
  auto store = t.open();
  ASSERT_TRUE(store);
  // A store that does not keep up: each job waits until the gate opens.
  std::mutex m;
  std::condition_variable cv;
  bool open = false;
  audit_writer w(*store, 500, [&] {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return open; });
  });
  w.write(batch_of(0, 300));    // taken by the writer, which waits at the gate
  w.write(batch_of(300, 300));  // waiting: 300
  std::atomic<bool> handed{false};
  std::thread loop([&] {
    w.write(batch_of(600, 300));  // 600 would exceed 500: waits for room
    handed = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(handed);
  {
    std::lock_guard lock(m);
    open = true;
  }
  cv.notify_all();
  loop.join();
  EXPECT_TRUE(handed);
  w.drain();
  EXPECT_EQ(store->audit_rows(), 900);
  EXPECT_EQ(w.take_error(), "");
}

}  // namespace
}  // namespace mcpmux
