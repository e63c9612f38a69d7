#include "core/search_index.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <boost/json/parse.hpp>
#include <cctype>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "base/log.hpp"
#include "base/text.hpp"
#include "core/catalogue.hpp"

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

// A tool whose name holds one of these deletes something for good.
constexpr std::array<std::string_view, 6> destroy_words{"delete", "remove", "destroy",
                                                        "erase",  "purge",  "uninstall"};

// People and tool descriptions name one action or thing in different words ("remove the
// block" is delete_block). A query also searches the other words of its words' groups, at half
// weight. General words of tool APIs and their common abbreviations only, no one server's.
const std::vector<std::vector<std::string_view>>& synonym_groups() {
  static const std::vector<std::vector<std::string_view>> groups{
      {"get", "fetch", "retrieve", "read", "show", "view", "load", "open"},
      {"create", "add", "new", "make", "insert", "setup"},
      {"update", "change", "edit", "modify", "patch", "rename", "replace"},
      {"delete", "remove", "drop", "erase", "destroy", "forget", "clear", "rid"},
      {"list", "enumerate", "every", "browse", "show"},
      {"search", "find", "query", "lookup", "locate", "look"},
      {"run", "execute", "exec", "invoke"},
      {"send", "post", "message", "tell", "notify"},
      {"write", "save", "store"},
      {"navigate", "go", "visit", "open"},
      {"screenshot", "capture", "snapshot"},
      {"issue", "ticket", "bug"},
      {"directory", "folder", "dir"},
      {"download", "scrape", "crawl", "fetch"},
      {"user", "member", "person", "people", "account"},
      {"repository", "repo", "repositories"},
      {"close", "dismiss"},
      {"comment", "reply"},
      {"review", "approve"},
      {"link", "relation", "relationship", "connect"},
      {"note", "observation", "fact"},
      {"pr", "pull"},
      {"db", "database"},
      {"k8s", "kubernetes"},
      {"env", "environment"},
      {"config", "configuration"},
      {"docs", "documentation"},
      {"info", "information"},
      {"msg", "message"},
  };
  return groups;
}

// The head of a description, which says what the tool is for; indexed again on its own.
std::string_view lead_of(std::string_view description) {
  constexpr std::size_t lead_bytes = 200;
  if (description.size() <= lead_bytes) return description;
  std::size_t end = lead_bytes;
  while (end > 0 && (static_cast<unsigned char>(description[end]) & 0xC0) == 0x80) --end;
  return description.substr(0, end);
}

// A statement that is finalized with its owner.
struct statement {
  sqlite3_stmt* s = nullptr;
  statement() = default;
  statement(const statement&) = delete;
  statement& operator=(const statement&) = delete;
  ~statement() { sqlite3_finalize(s); }
};

// BM25F (Robertson and Zaragoza): a word's occurrences in each column, weighted by the column and
// normalised by that column's length against its average there (`b` per column: 0 leaves a
// column's length out), add up before they saturate. FTS5's own bm25() normalises every column
// by the length of the whole row, so that a tool with long parameter descriptions ranked low even
// for a word of its name. Arguments: a weight per column, then its b.
struct bm25f_stats {
  std::vector<double> idf;      ///< by phrase of the query
  std::vector<double> average;  ///< tokens per row, by column
  std::vector<double> per_hit;  ///< a match's weight in this row, by column (scratch)
  std::vector<double> tf;       ///< this row's weighted matches, by phrase (scratch)
};

void bm25f(const Fts5ExtensionApi* api, Fts5Context* ctx, sqlite3_context* result, int argc,
           sqlite3_value** argv) {
  constexpr double k1 = 1.2;
  const int columns = api->xColumnCount(ctx);
  const int phrases = api->xPhraseCount(ctx);
  // What depends on the query only, once per query.
  auto* stats = static_cast<bm25f_stats*>(api->xGetAuxdata(ctx, 0));
  if (!stats) {
    auto fresh = std::make_unique<bm25f_stats>();
    sqlite3_int64 rows = 0;
    api->xRowCount(ctx, &rows);
    for (int c = 0; c < columns; ++c) {
      sqlite3_int64 total = 0;
      api->xColumnTotalSize(ctx, c, &total);
      fresh->average.push_back(
          rows > 0 ? std::max(1.0, static_cast<double>(total) / static_cast<double>(rows)) : 1.0);
    }
    for (int p = 0; p < phrases; ++p) {
      sqlite3_int64 hits = 0;
      api->xQueryPhrase(ctx, p, &hits, [](const Fts5ExtensionApi*, Fts5Context*, void* n) {
        ++*static_cast<sqlite3_int64*>(n);
        return SQLITE_OK;
      });
      const auto n = static_cast<double>(rows), h = static_cast<double>(hits);
      fresh->idf.push_back(std::max(1e-6, std::log((n - h + 0.5) / (h + 0.5))));  // as bm25()
    }
    fresh->per_hit.resize(static_cast<std::size_t>(columns));
    fresh->tf.resize(static_cast<std::size_t>(phrases));
    stats = fresh.release();  // SQLite's now: it deletes it, also when this fails
    if (api->xSetAuxdata(ctx, stats, [](void* p) { delete static_cast<bm25f_stats*>(p); }) !=
        SQLITE_OK) {
      sqlite3_result_error_nomem(result);
      return;
    }
  }
  const auto arg = [&](int i, double fallback) {
    return i < argc ? sqlite3_value_double(argv[i]) : fallback;
  };
  auto& per_hit = stats->per_hit;
  for (int c = 0; c < columns; ++c) {
    int size = 0;
    api->xColumnSize(ctx, c, &size);
    const double b = arg(columns + c, 0.75);
    per_hit[c] = arg(c, 1.0) / (1.0 - b + b * size / stats->average[c]);
  }
  auto& tf = stats->tf;
  std::fill(tf.begin(), tf.end(), 0.0);
  int instances = 0;
  api->xInstCount(ctx, &instances);
  for (int i = 0; i < instances; ++i) {
    int phrase = 0, column = 0, offset = 0;
    if (api->xInst(ctx, i, &phrase, &column, &offset) == SQLITE_OK) tf[phrase] += per_hit[column];
  }
  double score = 0;
  for (int p = 0; p < phrases; ++p) score += stats->idf[p] * tf[p] * (k1 + 1) / (tf[p] + k1);
  sqlite3_result_double(result, -score);  // lower is better, as bm25()
}

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
    d.words = d.name_words = identifier_words(n->get_string());
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

namespace {

// A web address says that the tool takes one, not what the tool does: it is the word "url".
bool is_url(std::string_view chunk) {
  return chunk.find("://") != std::string_view::npos || chunk.substr(0, 4) == "www.";
}

// `query` without what it quotes ('Payment complete', "Alice"): a quoted text is a value the
// tool is to be given, not words about the tool. A quote opens before a word and closes after
// one, so that "what's" and "stripe.com's" hold none.
std::string without_quoted(std::string_view query) {
  std::string out;
  std::size_t i = 0;
  while (i < query.size()) {
    const char c = query[i];
    const bool opens = (c == '\'' || c == '"') && (i == 0 || !is_word_char(query[i - 1])) &&
                       i + 1 < query.size() && is_word_char(query[i + 1]);
    if (opens) {
      std::size_t j = i + 1;
      while (j < query.size() && !(query[j] == c && is_word_char(query[j - 1]) &&
                                   (j + 1 == query.size() || !is_word_char(query[j + 1]))))
        ++j;
      if (j < query.size()) {
        out += ' ';
        i = j + 1;
        continue;
      }
    }
    out += c;
    ++i;
  }
  return out;
}

// A person's words in order, lower case, with repeats and stop words.
std::vector<std::string> query_tokens(std::string_view query) {
  // Split at spaces and punctuation only: "GitHub" is one word (split like an identifier it
  // would be "git" and "hub").
  std::vector<std::string> out;
  std::string w;
  const auto flush = [&] {
    if (!w.empty()) out.push_back(std::move(w));
    w.clear();
  };
  std::size_t i = 0;
  while (i < query.size()) {
    const auto end = std::min(query.find_first_of(" \t\n\r", i), query.size());
    const auto chunk = query.substr(i, end - i);
    if (is_url(chunk)) {
      flush();
      out.emplace_back("url");
    } else {
      for (char c : chunk) {
        if (is_word_char(c))
          w += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        else
          flush();
      }
      flush();
    }
    i = end + 1;
  }
  return out;
}

bool is_number(const std::string& w) {
  return w.find_first_not_of("0123456789") == std::string::npos;
}

}  // namespace

std::vector<std::string> query_words(std::string_view query) {
  std::vector<std::string> words, all;
  auto tokens = query_tokens(without_quoted(query));
  if (tokens.empty()) tokens = query_tokens(query);  // only a quote: that is all there is
  for (auto& w : tokens) {
    if (std::find(all.begin(), all.end(), w) != all.end()) continue;
    if (!stop_words().count(w) && w.size() > 1 && !is_number(w)) words.push_back(w);
    all.push_back(std::move(w));
  }
  if (words.empty()) words = std::move(all);  // only stop words: they are all there is
  return words;
}

std::vector<std::string> related_words(const std::vector<std::string>& words,
                                       const std::function<std::string(const std::string&)>& stem) {
  const auto same = [&](const std::string& w, std::string_view other) {
    if (w == other) return true;
    return stem && stem(w) == stem(std::string(other));
  };
  std::vector<std::string> out;
  for (const auto& w : words)
    for (const auto& group : synonym_groups())
      if (std::any_of(group.begin(), group.end(), [&](auto g) { return same(w, g); }))
        for (auto other : group)
          if (std::none_of(words.begin(), words.end(),
                           [&](const auto& q) { return same(q, other); }) &&
              std::find(out.begin(), out.end(), other) == out.end())
            out.emplace_back(other);
  return out;
}

std::string any_of_words(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& word : words) {
    if (!out.empty()) out += " OR ";
    out += '"' + word + '"';  // words hold no quote: identifier_words keeps letters and digits
  }
  return out;
}

namespace {

// The words of `text` (split at spaces).
std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < text.size()) {
    const auto end = std::min(text.find(' ', i), text.size());
    if (end > i) out.push_back(text.substr(i, end - i));
    i = end + 1;
  }
  return out;
}

}  // namespace

// How many tool matches one search ranks at most (see impl::prune).
constexpr sqlite3_int64 match_budget = 1000;

struct search_index::impl {
  sqlite3* db = nullptr;
  statement insert, remove, query, count;
  /// How many tools each query word matches (by its FTS5 expression), while the index stays as
  /// it is.
  std::unordered_map<std::string, sqlite3_int64> frequency;
  struct entry {
    std::uint64_t fingerprint;
    sqlite3_int64 row;
    std::string server;                   ///< its server's name in words
    std::vector<std::string> name_words;  ///< its own name's words, each once
    bool destroys = false;                ///< its name says delete, remove, …
  };
  std::unordered_map<std::string, entry> rows;
  /// How many tools have each word in their name.
  std::unordered_map<std::string, std::size_t> name_vocabulary;
  /// The index's own stemmer (FTS5's porter over unicode61), so that the related words of a
  /// query's words are found as the index would match them ("folders" is a folder); its answers
  /// cached.
  fts5_tokenizer porter{};
  Fts5Tokenizer* stemmer = nullptr;
  std::unordered_map<std::string, std::string> stems;
  std::unordered_set<std::string> destroy_stems;
  logger log{"search"};

  impl() {
    if (sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
        SQLITE_OK)
      throw std::runtime_error("cannot open the search index: out of memory");
    exec(
        "CREATE VIRTUAL TABLE tools USING fts5(name UNINDEXED, words, server, lead, description, "
        "parameters, tokenize = 'porter unicode61')");
    prepare(insert,
            "INSERT INTO tools(name, words, server, lead, description, parameters) "
            "VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
    prepare(remove, "DELETE FROM tools WHERE rowid = ?1");
    prepare(count, "SELECT count(*) FROM tools WHERE tools MATCH ?1");
    fts5_api* api = nullptr;
    statement get_api;
    prepare(get_api, "SELECT fts5(?1)");
    sqlite3_bind_pointer(get_api.s, 1, static_cast<void*>(&api), "fts5_api_ptr", nullptr);
    sqlite3_step(get_api.s);
    void* context = nullptr;
    if (!api || api->xFindTokenizer(api, "porter", &context, &porter) != SQLITE_OK ||
        porter.xCreate(context, nullptr, 0, &stemmer) != SQLITE_OK)
      throw std::runtime_error("search index: no porter tokenizer");
    if (api->xCreateFunction(api, "bm25f", nullptr, &bm25f, nullptr) != SQLITE_OK)
      throw std::runtime_error("search index: cannot add bm25f");
    // BM25F with the tool's own name words weighing most, then its server, the head of its
    // description, the rest and its parameters. A name's few words and the head of a description
    // (at most 200 bytes) say as much whatever their length: b 0 and 0.3 there, BM25's usual
    // 0.75 for the rest.
    prepare(query,
            "SELECT name, bm25f(tools, 0.0, 6.0, 2.0, 2.0, 1.0, 1.0, 0.0, 0.0, 0.75, 0.3, 0.75, "
            "0.75) AS rank FROM tools WHERE tools MATCH ?1 ORDER BY rank LIMIT ?2");
  }
  ~impl() {
    if (stemmer) porter.xDelete(stemmer);
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
  /// `word` as the index stems it ("directories" → "directori").
  const std::string& stem(const std::string& word) {
    if (stems.size() > 100000) stems.clear();
    auto [it, fresh] = stems.try_emplace(word);
    if (!fresh) return it->second;
    std::string out;
    porter.xTokenize(stemmer, &out, FTS5_TOKENIZE_DOCUMENT, word.data(),
                     static_cast<int>(word.size()),
                     [](void* ctx, int, const char* token, int size, int, int) {
                       auto& first = *static_cast<std::string*>(ctx);
                       if (first.empty()) first.assign(token, static_cast<std::size_t>(size));
                       return SQLITE_OK;
                     });
    it->second = out.empty() ? word : std::move(out);
    return it->second;
  }
  /// Whether `words` hold one of destroy_words, by its stem ("deletes", "removing").
  bool says_destroy(const std::vector<std::string>& words) {
    if (destroy_stems.empty())
      for (auto w : destroy_words) destroy_stems.insert(stem(std::string(w)));
    return std::any_of(words.begin(), words.end(),
                       [&](const std::string& w) { return destroy_stems.count(stem(w)) > 0; });
  }
  /// Counts `e`'s name words in (`by` 1) or out (`by` -1) of the vocabulary.
  void count_names(const entry& e, int by) {
    for (const auto& w : e.name_words)
      if ((name_vocabulary[w] += by) == 0) name_vocabulary.erase(w);
  }
  /// How many tools `word` is in (in their name's words only, with `names_only`).
  sqlite3_int64 frequency_of(const std::string& word, bool names_only) {
    const std::string phrase = '"' + word + '"';
    const std::string expr = names_only ? "{words} : " + phrase : phrase;
    auto [it, fresh] = frequency.try_emplace(expr, 0);
    if (!fresh) return it->second;
    bind(count.s, 1, expr);
    if (sqlite3_step(count.s) == SQLITE_ROW) it->second = sqlite3_column_int64(count.s, 0);
    sqlite3_reset(count.s);
    return it->second;
  }
  /// Every tool a query matches is ranked, so a query's cost is the number of tools its words
  /// match. Above `match_budget` the commonest words are left out (they rank little: BM25
  /// weighs a word by its rarity) until the rest fit, keeping the rarest word that matches at
  /// all; words that match nothing are left out.
  std::vector<std::string> prune(std::vector<std::string> words, bool names_only) {
    if (static_cast<sqlite3_int64>(rows.size()) <= match_budget) return words;
    std::vector<std::pair<sqlite3_int64, std::string>> by_rarity;
    for (auto& w : words)
      if (const auto f = frequency_of(w, names_only); f > 0)
        by_rarity.emplace_back(f, std::move(w));
    std::stable_sort(by_rarity.begin(), by_rarity.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::string> kept;
    sqlite3_int64 matches = 0;
    for (auto& [f, w] : by_rarity) {
      if (!kept.empty() && matches + f > match_budget) break;
      matches += f;
      kept.push_back(std::move(w));
    }
    return kept;
  }
  /// The best `k` tools matching any of `words` (in their name's words only, with
  /// `names_only`) that `accept` takes, by BM25 (higher is better).
  std::vector<hit> ranked(const std::vector<std::string>& words, bool names_only, std::size_t k,
                          const std::function<bool(std::string_view)>& accept) {
    std::vector<hit> out;
    std::string expr = any_of_words(words);
    if (expr.empty()) return out;
    if (names_only) expr = "{words} : (" + expr + ")";
    sqlite3_stmt* s = query.s;
    // SQLite keeps only the best `limit` rows while ranking (a bounded sort); when `accept`
    // turns too many of them down, the search runs again over every match.
    for (sqlite3_int64 limit = static_cast<sqlite3_int64>(k) + 8;; limit = -1) {
      out.clear();
      bind(s, 1, expr);
      sqlite3_bind_int64(s, 2, limit);
      sqlite3_int64 seen = 0;
      while (out.size() < k && sqlite3_step(s) == SQLITE_ROW) {
        ++seen;
        const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
        std::string_view name(text ? text : "",
                              static_cast<std::size_t>(sqlite3_column_bytes(s, 0)));
        if (accept && !accept(name)) continue;
        out.push_back({std::string(name), -sqlite3_column_double(s, 1)});
      }
      sqlite3_reset(s);
      sqlite3_clear_bindings(s);
      if (out.size() == k || limit < 0 || seen < limit) return out;
    }
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
      docs.push_back({tool_document{std::string(key), {}, {}, {}, {}, {}}, fingerprint});
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
  const auto drop = [&](const impl::entry& e) {
    sqlite3_bind_int64(d.remove.s, 1, e.row);
    sqlite3_step(d.remove.s);
    sqlite3_reset(d.remove.s);
    d.count_names(e, -1);
    ++changed;
  };
  for (auto it = d.rows.begin(); it != d.rows.end();) {
    if (present.count(it->first)) {
      ++it;
      continue;
    }
    drop(it->second);
    it = d.rows.erase(it);
  }
  for (auto& [doc, fp] : docs) {
    auto known = d.rows.find(doc.name);
    if (known != d.rows.end()) {
      if (known->second.fingerprint == fp) continue;
      drop(known->second);
      d.rows.erase(known);
    }
    sqlite3_stmt* s = d.insert.s;
    impl::bind(s, 1, doc.name);
    impl::bind(s, 2, doc.words);
    impl::bind(s, 3, doc.server);
    impl::bind(s, 4, lead_of(doc.description));
    impl::bind(s, 5, doc.description);
    impl::bind(s, 6, doc.parameters);
    const bool ok = sqlite3_step(s) == SQLITE_DONE;
    sqlite3_reset(s);
    if (!ok) {
      d.log.warn("cannot index tool {}: {}", doc.name, sqlite3_errmsg(d.db));
      continue;
    }
    impl::entry e{fp, sqlite3_last_insert_rowid(d.db), doc.server, {}};
    for (auto& w : split_words(doc.name_words))
      if (std::find(e.name_words.begin(), e.name_words.end(), w) == e.name_words.end())
        e.name_words.push_back(std::move(w));
    e.destroys = d.says_destroy(e.name_words);
    d.count_names(e, 1);
    d.rows.emplace(doc.name, std::move(e));
    ++changed;
  }
  d.exec("COMMIT");
  if (changed) d.frequency.clear();
  return changed;
}

std::vector<search_index::hit> search_index::search(
    std::string_view query, std::size_t limit,
    const std::function<bool(std::string_view)>& accept) const {
  auto& d = *impl_;
  auto words = query_words(query);
  if (words.empty() || limit == 0) return {};
  // Two words of the query that make one word of a tool's name or of the related words' table
  // ("clean up" → cleanup, "look up" → lookup) are that word too.
  const auto tokens = query_tokens(without_quoted(query));
  for (std::size_t i = 0; i + 1 < tokens.size(); ++i) {
    auto joined = tokens[i] + tokens[i + 1];
    if ((d.name_vocabulary.count(joined) || !related_words({joined}).empty()) &&
        std::find(words.begin(), words.end(), joined) == words.end())
      words.push_back(std::move(joined));
  }
  // The best of the query's own words, then of their related words in tool names at half
  // weight: a pool of candidates ranked on both.
  const std::size_t pool = std::max<std::size_t>(limit, 50);
  std::unordered_map<std::string, double> score;
  for (auto& h : d.ranked(d.prune(words, false), false, pool, accept)) score[h.name] += h.score;
  auto related = related_words(words, [&d](const std::string& w) { return d.stem(w); });
  const bool asks_destroy = d.says_destroy(words) || d.says_destroy(related);
  if (!related.empty())
    for (auto& h : d.ranked(d.prune(std::move(related), true), true, pool, accept))
      score[h.name] += 0.5 * h.score;
  // A query that names a server ("… on GitHub") wants that server's tools. A tool that deletes
  // counts half for a query that does not ask to delete ("drop", "get rid of" …): "link Alice to
  // Acme" shares as many words with delete_relations as with create_relations, and a wrong first
  // guess there loses data.
  std::vector<hit> out;
  out.reserve(score.size());
  for (auto& [name, s] : score) {
    auto it = d.rows.find(name);
    bool named = false, unasked = false;
    if (it != d.rows.end()) {
      for (const auto& w : words)
        named = named || (' ' + it->second.server + ' ').find(' ' + w + ' ') != std::string::npos;
      unasked = it->second.destroys && !asks_destroy;
    }
    out.push_back({name, s * (named ? 2 : 1) * (unasked ? 0.5 : 1)});
  }
  std::sort(out.begin(), out.end(), [](const hit& a, const hit& b) {
    return a.score != b.score ? a.score > b.score : a.name < b.name;
  });
  if (out.size() > limit) out.resize(limit);
  return out;
}

}  // namespace mcpmux
