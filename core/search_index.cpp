#include "core/search_index.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <boost/json/parse.hpp>
#include <cctype>
#include <functional>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "core/catalogue.hpp"
#include "core/protocol/log.hpp"
#include "core/protocol/text.hpp"

namespace mcpmux {
namespace {

bool is_word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || static_cast<unsigned char>(c) >= 0x80;
}

// Words that say nothing about which tool is meant.
const std::unordered_set<std::string_view>& stop_words() {
  static const std::unordered_set<std::string_view> words{
      "a",     "about", "all",    "an",   "and",  "any",   "are", "as",    "at",   "be",   "by",
      "can",   "could", "do",     "does", "for",  "from",  "get", "give",  "have", "how",  "i",
      "if",    "in",    "into",   "is",   "it",   "its",   "me",  "my",    "need", "of",   "on",
      "or",    "our",   "please", "so",   "some", "that",  "the", "their", "them", "then", "there",
      "these", "this",  "to",     "up",   "us",   "want",  "was", "we",    "what", "when", "where",
      "which", "who",   "why",    "will", "with", "would", "you", "your"};
  return words;
}

// A statement that is finalized with its owner.
struct statement {
  sqlite3_stmt* s = nullptr;
  statement() = default;
  statement(const statement&) = delete;
  statement& operator=(const statement&) = delete;
  ~statement() { sqlite3_finalize(s); }
};

}  // namespace

std::string identifier_words(std::string_view id) {
  std::string out;
  out.reserve(id.size() + 8);
  char prev = 0;
  for (std::size_t i = 0; i < id.size(); ++i) {
    const char c = id[i];
    if (!is_word_char(c)) {
      if (!out.empty() && out.back() != ' ') out += ' ';
      prev = 0;
      continue;
    }
    const auto uc = static_cast<unsigned char>(c);
    const bool upper = std::isupper(uc) != 0;
    const bool next_lower =
        i + 1 < id.size() && std::islower(static_cast<unsigned char>(id[i + 1]));
    // readFile → read file; HTTPServer → http server; v2 stays with its letter.
    if (upper && prev != 0 &&
        (std::islower(static_cast<unsigned char>(prev)) ||
         (std::isupper(static_cast<unsigned char>(prev)) && next_lower)) &&
        out.back() != ' ')
      out += ' ';
    out += static_cast<char>(std::tolower(uc));
    prev = c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

tool_document document_of(std::string_view exposed, std::string_view server,
                          const json::object& tool) {
  tool_document d;
  d.name = exposed;
  d.server = identifier_words(server);
  if (const auto* n = tool.if_contains("name"); n && n->is_string())
    d.words = identifier_words(n->get_string());
  if (const auto* t = tool.if_contains("title"); t && t->is_string())
    d.words += " " + std::string(t->get_string());
  if (const auto* desc = tool.if_contains("description"); desc && desc->is_string())
    d.description = desc->get_string();
  const auto* schema = tool.if_contains("inputSchema");
  const auto* props =
      schema && schema->is_object() ? schema->get_object().if_contains("properties") : nullptr;
  if (props && props->is_object()) {
    for (const auto& [key, value] : props->get_object()) {
      d.parameters += identifier_words(key);
      d.parameters += ". ";
      if (const auto* p = value.if_object())
        if (const auto* pd = p->if_contains("description"); pd && pd->is_string()) {
          d.parameters += std::string_view(pd->get_string()).substr(0, 300);
          d.parameters += ". ";
        }
    }
  }
  return d;
}

std::vector<std::string> query_words(std::string_view query) {
  std::vector<std::string> words, all;
  std::string w;
  const auto flush = [&] {
    if (w.empty()) return;
    if (std::find(all.begin(), all.end(), w) == all.end()) {
      all.push_back(w);
      if (!stop_words().count(w)) words.push_back(w);
    }
    w.clear();
  };
  for (char c : identifier_words(query)) {
    if (c == ' ')
      flush();
    else
      w += c;
  }
  flush();
  if (words.empty()) words = std::move(all);  // only stop words: they are all there is
  return words;
}

std::string match_expression(std::string_view query) {
  return any_of_words(query_words(query));
}

std::string any_of_words(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& word : words) {
    if (!out.empty()) out += " OR ";
    out += '"' + word + '"';  // words hold no quote: identifier_words keeps letters and digits
  }
  return out;
}

// Below this many tools every query word is searched.
constexpr sqlite3_int64 prune_from = 2000;

struct search_index::impl {
  sqlite3* db = nullptr;
  statement insert, remove, query, count;
  /// How many tools each query word matches, while the index stays as it is.
  std::unordered_map<std::string, sqlite3_int64> frequency;
  struct entry {
    std::uint64_t fingerprint;
    sqlite3_int64 row;
  };
  std::unordered_map<std::string, entry> rows;
  logger log{"search"};

  impl() {
    if (sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
        SQLITE_OK)
      throw std::runtime_error("cannot open the search index: out of memory");
    exec(
        "CREATE VIRTUAL TABLE tools USING fts5(name UNINDEXED, words, server, description, "
        "parameters, tokenize = 'porter unicode61')");

    prepare(insert,
            "INSERT INTO tools(name, words, server, description, parameters) "
            "VALUES (?1, ?2, ?3, ?4, ?5)");
    prepare(remove, "DELETE FROM tools WHERE rowid = ?1");
    prepare(count, "SELECT count(*) FROM tools WHERE tools MATCH ?1");
    // BM25 with the tool's own name words weighing most, then its description.
    prepare(query,
            "SELECT name, bm25(tools, 0.0, 6.0, 2.0, 3.0, 1.0) AS rank FROM tools "
            "WHERE tools MATCH ?1 ORDER BY rank LIMIT ?2");
  }
  ~impl() {
    sqlite3_finalize(insert.s);
    sqlite3_finalize(remove.s);
    sqlite3_finalize(query.s);
    sqlite3_finalize(count.s);
    insert.s = remove.s = query.s = count.s = nullptr;
    sqlite3_close(db);
  }
  void exec(const char* sql) {
    char* error = nullptr;
    if (sqlite3_exec(db, sql, nullptr, nullptr, &error) != SQLITE_OK) {
      std::string text = error ? error : "unknown error";
      sqlite3_free(error);
      throw std::runtime_error("search index: " + text);
    }
  }
  void prepare(statement& st, const char* sql) {
    if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st.s, nullptr) != SQLITE_OK)
      throw std::runtime_error(std::string("search index: ") + sqlite3_errmsg(db));
  }
  sqlite3_int64 frequency_of(const std::string& word) {
    auto [it, fresh] = frequency.try_emplace(word, 0);
    if (!fresh) return it->second;
    bind(count.s, 1, "\"" + word + "\"");
    if (sqlite3_step(count.s) == SQLITE_ROW) it->second = sqlite3_column_int64(count.s, 0);
    sqlite3_reset(count.s);
    return it->second;
  }
  static void bind(sqlite3_stmt* s, int i, std::string_view text) {
    sqlite3_bind_text(s, i, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  }
};

search_index::search_index() : impl_(std::make_unique<impl>()) {}
search_index::~search_index() = default;

std::size_t search_index::size() const {
  return impl_->rows.size();
}

std::size_t search_index::sync(const catalogue& cat, const std::vector<variant>& variants) {
  std::vector<std::pair<tool_document, std::uint64_t>> docs;
  const auto& routes = cat.routes(collection::tools);
  docs.reserve(routes.size() + variants.size());
  // Only new or changed tools are parsed: a name and fingerprint alone tell sync to keep one.
  const auto add = [&](std::string_view key, std::string_view exposed, const route& r,
                       const std::string* description) {
    const auto item = cat.item(collection::tools, exposed);
    auto fingerprint = std::hash<std::string_view>{}(item) ^ std::hash<std::string>{}(r.server);
    if (description) fingerprint ^= std::hash<std::string>{}(*description) * 31;
    auto known = impl_->rows.find(std::string(key));
    if (known != impl_->rows.end() && known->second.fingerprint == fingerprint) {
      docs.push_back({tool_document{std::string(key), {}, {}, {}, {}}, fingerprint});
      return;
    }
    boost::system::error_code ec;
    auto parsed = json::parse(item, ec);
    if (ec || !parsed.is_object()) return;
    auto doc = document_of(key, r.server, parsed.get_object());
    if (description) doc.description = *description;
    docs.push_back({std::move(doc), fingerprint});
  };
  for (const auto& [name, r] : routes) add(name, name, r, nullptr);
  for (const auto& v : variants)
    if (const auto* r = cat.find(collection::tools, v.exposed))
      add(v.key, v.exposed, *r, &v.description);
  return sync(std::move(docs));
}

std::size_t search_index::sync(std::vector<std::pair<tool_document, std::uint64_t>> docs) {
  auto& d = *impl_;
  std::size_t changed = 0;
  std::unordered_set<std::string_view> present;
  present.reserve(docs.size());
  for (const auto& [doc, fp] : docs) present.insert(doc.name);
  d.exec("BEGIN");
  const auto drop = [&](sqlite3_int64 row) {
    sqlite3_bind_int64(d.remove.s, 1, row);
    sqlite3_step(d.remove.s);
    sqlite3_reset(d.remove.s);
    ++changed;
  };
  for (auto it = d.rows.begin(); it != d.rows.end();) {
    if (present.count(it->first)) {
      ++it;
      continue;
    }
    drop(it->second.row);
    it = d.rows.erase(it);
  }
  for (auto& [doc, fp] : docs) {
    auto known = d.rows.find(doc.name);
    if (known != d.rows.end()) {
      if (known->second.fingerprint == fp) continue;
      drop(known->second.row);
      d.rows.erase(known);
    }
    sqlite3_stmt* s = d.insert.s;
    impl::bind(s, 1, doc.name);
    impl::bind(s, 2, doc.words);
    impl::bind(s, 3, doc.server);
    impl::bind(s, 4, doc.description);
    impl::bind(s, 5, doc.parameters);
    const bool ok = sqlite3_step(s) == SQLITE_DONE;
    sqlite3_reset(s);
    if (!ok) {
      d.log.warn("cannot index tool {}: {}", doc.name, sqlite3_errmsg(d.db));
      continue;
    }
    d.rows.emplace(doc.name, impl::entry{fp, sqlite3_last_insert_rowid(d.db)});
    ++changed;
  }
  d.exec("COMMIT");
  if (changed) d.frequency.clear();
  return changed;
}

std::vector<search_index::hit> search_index::search(
    std::string_view query, std::size_t limit,
    const std::function<bool(std::string_view)>& accept) const {
  std::vector<hit> out;
  auto words = query_words(query);
  if (words.empty() || limit == 0) return out;
  // In a large index a word most tools share ranks little and costs much (every tool it
  // matches is ranked): words in more than a quarter of the tools are left out while a rarer one
  // remains.
  const auto rows = static_cast<sqlite3_int64>(impl_->rows.size());
  if (rows >= prune_from) {
    std::vector<std::string> rare;
    for (const auto& w : words)
      if (const auto f = impl_->frequency_of(w); f > 0 && f * 4 <= rows) rare.push_back(w);
    if (!rare.empty()) words = std::move(rare);
  }
  const std::string expr = any_of_words(words);
  sqlite3_stmt* s = impl_->query.s;
  // SQLite keeps only the best `rows` while ranking (a bounded sort); when `accept` turns too
  // many of them down, the search runs again over every match.
  for (sqlite3_int64 rows = static_cast<sqlite3_int64>(limit) * 8 + 32;; rows = -1) {
    out.clear();
    impl::bind(s, 1, expr);
    sqlite3_bind_int64(s, 2, rows);
    sqlite3_int64 seen = 0;
    while (out.size() < limit && sqlite3_step(s) == SQLITE_ROW) {
      ++seen;
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
      std::string_view name(text ? text : "", static_cast<std::size_t>(sqlite3_column_bytes(s, 0)));
      if (accept && !accept(name)) continue;
      out.push_back({std::string(name), -sqlite3_column_double(s, 1)});
    }
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    if (out.size() == limit || rows < 0 || seen < rows) return out;
  }
}

}  // namespace mcpmux
