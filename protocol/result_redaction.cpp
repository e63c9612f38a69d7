#include "protocol/result_redaction.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "protocol/result.hpp"

namespace mcpmux::mcp {
namespace {

struct match {
  std::size_t begin, end;
  secret_kind kind;
};

// Where the next PEM END line is, found once for the whole text: the positions asked about only
// grow, so every BEGIN costs no new search and a text of many BEGINs stays linear.
class pem_end_finder {
 public:
  static constexpr std::string_view end_line = "-----END ";
  std::size_t next(std::string_view s, std::size_t from) {
    if (!searched_ || (at_ != std::string_view::npos && at_ < from)) {
      at_ = s.find(end_line, from);
      searched_ = true;
    }
    return at_;
  }

 private:
  bool searched_ = false;
  std::size_t at_ = std::string_view::npos;
};

// A PEM private key is a few KB (RSA 8192: ~6.5 KB); an END further than this belongs to
// something else, and the bound keeps the search linear.
constexpr std::size_t max_pem_bytes = 16 * 1024;
// Fewer base64 characters than this after a BEGIN line is a mention of the format, not a key.
constexpr std::size_t min_pem_body = 64;
// An assigned value longer than this is not a credential (and the bound keeps the scan linear).
constexpr std::size_t max_assigned_value = 512;
constexpr std::size_t min_assigned_value = 16;
constexpr double min_assigned_entropy = 3.5;  // bits per character
constexpr std::size_t max_name_lookback = 64;
constexpr std::size_t max_jwt_header = 4096;

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_upper(char c) {
  return c >= 'A' && c <= 'Z';
}
bool is_lower(char c) {
  return c >= 'a' && c <= 'z';
}
bool is_alnum(char c) {
  return is_digit(c) || is_upper(c) || is_lower(c);
}
bool is_upper_alnum(char c) {
  return is_digit(c) || is_upper(c);
}
bool is_word(char c) {
  return is_alnum(c) || c == '_';
}
bool is_b64url(char c) {
  return is_word(c) || c == '-';
}
bool is_b64(char c) {
  return is_alnum(c) || c == '+' || c == '/' || c == '=';
}

// A token starts where the byte before it cannot be part of one: "task-…" holds no "sk-" key.
// Since a failed attempt only ever starts after such a byte, and scans stop at one, each run of
// token bytes is scanned a bounded number of times.
bool at_boundary(std::string_view s, std::size_t at) {
  return at == 0 || !is_b64url(s[at - 1]);
}

std::size_t run(std::string_view s, std::size_t from, bool (*in)(char)) {
  while (from < s.size() && in(s[from])) ++from;
  return from;
}

bool has(std::string_view s, bool (*pred)(char)) {
  return std::any_of(s.begin(), s.end(), pred);
}

double entropy(std::string_view s) {
  std::array<std::uint32_t, 256> freq{};
  for (char c : s) ++freq[static_cast<unsigned char>(c)];
  double bits = 0;
  const auto n = static_cast<double>(s.size());
  for (auto f : freq)
    if (f) bits -= (f / n) * std::log2(f / n);
  return bits;
}

// A prefix followed by a run of `body` bytes of at least `min_body` (exactly `exact` when set).
std::optional<match> prefixed(std::string_view s, std::size_t at, std::string_view prefix,
                              bool (*body)(char), std::size_t min_body, secret_kind kind,
                              std::size_t exact = 0) {
  if (s.substr(at, prefix.size()) != prefix) return std::nullopt;
  const std::size_t from = at + prefix.size(), end = run(s, from, body);
  const std::size_t n = end - from;
  if (n < min_body || (exact && n != exact)) return std::nullopt;
  return match{at, end, kind};
}

// AKIA/ASIA + 16 upper-case letters or digits, not followed by another alphanumeric.
std::optional<match> aws_access_key(std::string_view s, std::size_t at) {
  const auto head = s.substr(at, 4);
  if (head != "AKIA" && head != "ASIA") return std::nullopt;
  const std::size_t end = run(s, at + 4, is_alnum);
  if (end - (at + 4) != 16 || !std::all_of(s.begin() + at + 4, s.begin() + end, is_upper_alnum))
    return std::nullopt;
  return match{at, end, secret_kind::aws_access_key};
}

std::optional<match> github_token(std::string_view s, std::size_t at) {
  if (s.size() - at > 4 && s[at + 1] == 'h' && s[at + 3] == '_' &&
      std::string_view("pousr").find(s[at + 2]) != std::string_view::npos)
    return prefixed(s, at, s.substr(at, 4), is_alnum, 36, secret_kind::github_token);
  return prefixed(s, at, "github_pat_", is_word, 22, secret_kind::github_token);
}

std::optional<match> slack_token(std::string_view s, std::size_t at) {
  if (s.substr(at, 3) != "xox" || s.size() - at < 5 || s[at + 4] != '-' ||
      std::string_view("baprs").find(s[at + 3]) == std::string_view::npos)
    return std::nullopt;
  auto m = prefixed(s, at, s.substr(at, 5), is_b64url, 10, secret_kind::slack_token);
  if (m && !has(s.substr(at + 5, m->end - at - 5), is_digit)) return std::nullopt;
  return m;
}

// sk-ant-… (Anthropic), sk-proj-… and sk-… (OpenAI), sk_live_… (Stripe).
std::optional<match> sk_key(std::string_view s, std::size_t at) {
  if (auto m = prefixed(s, at, "sk_live_", is_alnum, 16, secret_kind::stripe_key)) return m;
  if (auto m = prefixed(s, at, "sk-ant-", is_b64url, 20, secret_kind::anthropic_key)) return m;
  if (auto m = prefixed(s, at, "sk-proj-", is_b64url, 20, secret_kind::openai_key)) return m;
  // The older and service-account keys: mixed-case base62 with digits, which a hyphenated
  // word such as "sk-learn-…" is not.
  auto m = prefixed(s, at, "sk-", is_b64url, 20, secret_kind::openai_key);
  if (!m) return std::nullopt;
  const auto body = s.substr(at + 3, m->end - at - 3);
  if (!has(body, is_digit) || !has(body, is_upper) || !has(body, is_lower)) return std::nullopt;
  return m;
}

// Decodes base64url (no padding) far enough to tell whether the header names an "alg".
bool jwt_header_has_alg(std::string_view b64) {
  if (b64.size() > max_jwt_header) return false;
  std::string out;
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : b64) {
    int v = is_upper(c)   ? c - 'A'
            : is_lower(c) ? c - 'a' + 26
            : is_digit(c) ? c - '0' + 52
            : c == '-'    ? 62
                          : 63;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out.find("\"alg\"") != std::string::npos;
}

std::optional<match> jwt(std::string_view s, std::size_t at) {
  if (s.substr(at, 3) != "eyJ") return std::nullopt;
  const std::size_t head_end = run(s, at, is_b64url);
  if (head_end >= s.size() || s[head_end] != '.') return std::nullopt;
  const std::size_t body_end = run(s, head_end + 1, is_b64url);
  if (body_end - head_end < 3 || body_end >= s.size() || s[body_end] != '.') return std::nullopt;
  if (!jwt_header_has_alg(s.substr(at, head_end - at))) return std::nullopt;
  return match{at, run(s, body_end + 1, is_b64url), secret_kind::jwt};
}

bool is_pem_label(char c) {
  return is_upper_alnum(c) || c == ' ';
}
bool is_pem_body(char c) {
  // base64, line ends (also escaped as \n in a JSON text), and the headers of an encrypted key.
  return is_b64(c) || c == '\n' || c == '\r' || c == ' ' || c == '\t' || c == '\\' || c == ':' ||
         c == ',' || c == '-';
}

// "-----BEGIN … PRIVATE KEY-----" through its END line; through the end of the base64 body when
// the END is missing (a key cut short is still a key).
std::optional<match> private_key(std::string_view s, std::size_t at, pem_end_finder& ends) {
  constexpr std::string_view begin = "-----BEGIN ", dashes = "-----";
  if (s.substr(at, begin.size()) != begin) return std::nullopt;
  const std::size_t label = at + begin.size();
  const std::size_t label_end =
      run(s.substr(0, std::min(s.size(), label + 64)), label, is_pem_label);
  if (!s.substr(label, label_end - label).ends_with("PRIVATE KEY") ||
      s.substr(label_end, dashes.size()) != dashes)
    return std::nullopt;
  const std::size_t body = label_end + dashes.size();
  if (auto end = ends.next(s, body); end != std::string_view::npos && end - body <= max_pem_bytes) {
    const auto tail = s.substr(0, end + 100).find(dashes, end + pem_end_finder::end_line.size());
    if (end - body >= min_pem_body && tail != std::string_view::npos)
      return match{at, tail + dashes.size(), secret_kind::private_key};
  }
  const std::size_t body_end = run(s, body, is_pem_body);
  if (body_end - body < min_pem_body) return std::nullopt;
  return match{at, body_end, secret_kind::private_key};
}

// The shapes that begin a token, tried where one may begin.
std::optional<match> token_at(std::string_view s, std::size_t at, pem_end_finder& ends) {
  if (!at_boundary(s, at)) return std::nullopt;
  switch (s[at]) {
    case 'A':
      if (auto m = aws_access_key(s, at)) return m;
      return prefixed(s, at, "AIza", is_b64url, 35, secret_kind::google_api_key, 35);
    case 'g':
      if (auto m = github_token(s, at)) return m;
      return prefixed(s, at, "glpat-", is_b64url, 20, secret_kind::gitlab_token);
    case 'x':
      return slack_token(s, at);
    case 's':
      return sk_key(s, at);
    case 'r':
      return prefixed(s, at, "rk_live_", is_alnum, 16, secret_kind::stripe_key);
    case 'e':
      return jwt(s, at);
    case '-':
      return private_key(s, at, ends);
    default:
      return std::nullopt;
  }
}

// Whether `name`, lowercased and without '_', '-' and '.', ends with `ending` (lowercase):
// compared from the end, with no copy (every ':' of a JSON text asks this of its key).
bool ends_with_folded(std::string_view name, std::string_view ending) {
  auto n = name.size();
  for (auto e = ending.size(); e > 0;) {
    while (n > 0 && (name[n - 1] == '_' || name[n - 1] == '-' || name[n - 1] == '.')) --n;
    if (n == 0) return false;
    const char c = name[--n];
    if ((is_upper(c) ? char(c - 'A' + 'a') : c) != ending[--e]) return false;
  }
  return true;
}

bool is_name(char c) {
  return is_word(c) || c == '-' || c == '.';
}

// Whether the name that ends at `end` of `s` may say secret: every ending assigned_kind knows
// ends in one of these two letters (most names, and every key of an ordinary JSON answer, are
// turned away here, before the name is read back).
bool may_name_a_secret(std::string_view s, std::size_t end) {
  char last[2] = {0, 0};
  for (std::size_t n = end, k = 2; n > 0 && k > 0 && is_name(s[n - 1]); --n) {
    const char c = s[n - 1];
    if (c != '_' && c != '-' && c != '.') last[--k] = is_upper(c) ? char(c - 'A' + 'a') : c;
  }
  const std::string_view tail(last, 2);
  return tail == "rd" || tail == "wd" || tail == "se" || tail == "ey" || tail == "et" ||
         tail == "en";
}

// What an assigned name says its value is: the name lowercased without '_', '-' and '.', by
// its ending ("DB_PASSWORD", "apiKey", "access_token"; not "token_file" or "max_tokens").
std::optional<secret_kind> assigned_kind(std::string_view name) {
  struct ending {
    std::string_view text;
    secret_kind kind;
  };
  static constexpr ending endings[] = {
      {"secretaccesskey", secret_kind::aws_secret_key},
      {"password", secret_kind::password},
      {"passwd", secret_kind::password},
      {"pwd", secret_kind::password},
      {"passphrase", secret_kind::password},
      {"apikey", secret_kind::api_key},
      {"secret", secret_kind::secret},
      {"secretkey", secret_kind::secret},
      {"privatekey", secret_kind::secret},
      {"token", secret_kind::token},
  };
  for (const auto& e : endings)
    if (ends_with_folded(name, e.text)) return e.kind;
  return std::nullopt;
}

bool is_unquoted_value(char c) {
  return static_cast<unsigned char>(c) > ' ' &&
         std::string_view("\"'`,;&()[]{}<>").find(c) == std::string_view::npos;
}

// A name from code or config rather than a value: each part between '_', '-', '.', '/', '$' is
// letters then digits ("context7_API_KEY", "ProgressTokenSchema$1.optional"). A generated value
// with digits has them scattered ("k3J9x…", "5e1f0a9c…").
bool identifier_like(std::string_view v) {
  std::size_t i = 0;
  while (i < v.size()) {
    while (i < v.size() && (is_upper(v[i]) || is_lower(v[i]))) ++i;
    while (i < v.size() && is_digit(v[i])) ++i;
    if (i == v.size()) return true;
    if (std::string_view("_-./$").find(v[i]) == std::string_view::npos) return false;
    ++i;
  }
  return true;
}

// A value that looks generated rather than written: long, dense, letters and digits mixed, and
// not a reference to something else (a variable, a path, a URL, a template).
bool looks_generated(std::string_view v) {
  if (v.size() < min_assigned_value || v.size() > max_assigned_value) return false;
  if (std::string_view("${<%/~.").find(v.front()) != std::string_view::npos) return false;
  if (v.find("://") != std::string_view::npos) return false;
  if (std::any_of(v.begin(), v.end(), [](char c) { return c == ' ' || c == '\t'; })) return false;
  if (!has(v, is_digit) || !has(v, [](char c) { return is_upper(c) || is_lower(c); })) return false;
  return !identifier_like(v) && entropy(v) >= min_assigned_entropy;
}

// `name=value`, `name: value`, `"name": "value"` (at the '=' or ':'), where the name says secret
// and the value looks generated. Only the value is replaced.
std::optional<match> assignment_at(std::string_view s, std::size_t at, pem_end_finder& ends) {
  // Comparisons ("==", "!=", "<=") are code, not assignments.
  if (at + 1 < s.size() && s[at] == '=' && s[at + 1] == '=') return std::nullopt;
  if (at > 0 && std::string_view("=!<>").find(s[at - 1]) != std::string_view::npos)
    return std::nullopt;
  std::size_t j = at;
  while (j > 0 && at - j < 4 && (s[j - 1] == ' ' || s[j - 1] == '\t')) --j;
  if (j > 0 && (s[j - 1] == '"' || s[j - 1] == '\'')) --j;
  const std::size_t name_end = j;
  if (!may_name_a_secret(s, name_end)) return std::nullopt;
  while (j > 0 && name_end - j < max_name_lookback && is_name(s[j - 1])) --j;
  if (j == name_end) return std::nullopt;
  const auto kind = assigned_kind(s.substr(j, name_end - j));
  if (!kind) return std::nullopt;

  std::size_t v = at + 1;
  if (s[at] == ':' && v < s.size() && s[v] == '=') ++v;  // Go's :=
  while (v < s.size() && v - at < 8 && (s[v] == ' ' || s[v] == '\t')) ++v;
  if (v >= s.size()) return std::nullopt;
  std::size_t e = v;
  if (s[v] == '"' || s[v] == '\'') {
    const char quote = s[v++];
    for (e = v; e < s.size() && s[e] != quote && s[e] != '\n' && e - v <= max_assigned_value;)
      e += s[e] == '\\' ? 2 : 1;
    if (e >= s.size() || s[e] != quote) return std::nullopt;
  } else {
    while (e < s.size() && is_unquoted_value(s[e]) && e - v <= max_assigned_value) ++e;
    if (e < s.size() && s[e] == '(') return std::nullopt;  // a call: `token: make_token(…)`
  }
  // A value of a known shape is named by its shape: GITHUB_TOKEN=ghp_… is a github-token.
  if (auto m = token_at(s, v, ends); m && m->end <= e) return m;
  if (!looks_generated(s.substr(v, e - v))) return std::nullopt;
  return match{v, e, *kind};
}

std::optional<match> shape_at(std::string_view s, std::size_t at, pem_end_finder& ends) {
  if (s[at] == '=' || s[at] == ':') return assignment_at(s, at, ends);
  return token_at(s, at, ends);
}

constexpr std::string_view shape_triggers = "Agxsre-=:";

}  // namespace

std::optional<redaction_mode> parse_redaction_mode(std::string_view name) {
  if (name == "off") return redaction_mode::off;
  if (name == "known") return redaction_mode::known;
  if (name == "patterns") return redaction_mode::patterns;
  return std::nullopt;
}

std::string_view to_string(redaction_mode mode) {
  switch (mode) {
    case redaction_mode::off:
      return "off";
    case redaction_mode::known:
      return "known";
    case redaction_mode::patterns:
      return "patterns";
  }
  return "patterns";
}

std::string_view kind_name(secret_kind kind) {
  static constexpr std::string_view names[secret_kind_count] = {
      "known-secret", "private-key",   "aws-access-key", "aws-secret-key",
      "github-token", "gitlab-token",  "slack-token",    "stripe-key",
      "openai-key",   "anthropic-key", "google-api-key", "jwt",
      "password",     "secret",        "token",          "api-key",
  };
  return names[static_cast<std::size_t>(kind)];
}

void redaction_counts::add_all(const redaction_counts& other) {
  for (std::size_t i = 0; i < by_kind.size(); ++i) by_kind[i] += other.by_kind[i];
  all += other.all;
}

secret_detector::secret_detector(redaction_mode mode, const std::vector<std::string>& known_secrets)
    : mode_(mode), known_pairs_(65536 / 64) {
  if (mode_ == redaction_mode::off) return;
  const auto add = [&](std::string k) {
    if (k.size() >= min_known_secret_bytes &&
        std::find(known_.begin(), known_.end(), k) == known_.end())
      known_.push_back(std::move(k));
  };
  for (const auto& k : known_secrets) {
    add(k);
    // Also as a JSON text writes it (quotes, backslashes, controls escaped; some encoders also
    // escape '/'), so that may_hold_secret finds it in an answer before any parse.
    auto escaped = json::serialize(json::string(k));
    add(escaped.substr(1, escaped.size() - 2));
    if (k.find('/') != std::string::npos) {
      std::string slashed;
      for (char c : escaped.substr(1, escaped.size() - 2)) {
        if (c == '/') slashed.push_back('\\');
        slashed.push_back(c);
      }
      add(std::move(slashed));
    }
  }
  // Longest first: a value that contains another is replaced whole.
  std::stable_sort(known_.begin(), known_.end(),
                   [](const auto& a, const auto& b) { return a.size() > b.size(); });
  for (const auto& k : known_) {
    const auto first = static_cast<unsigned char>(k[0]);
    const unsigned pair = first << 8 | static_cast<unsigned char>(k[1]);
    trigger_[first] = true;
    known_pairs_[pair / 64] |= std::uint64_t{1} << (pair % 64);
  }
  if (mode_ == redaction_mode::patterns)
    for (char c : shape_triggers) trigger_[static_cast<unsigned char>(c)] = true;
}

std::size_t secret_detector::known_at(std::string_view text, std::size_t at) const {
  if (known_.empty() || text.size() - at < min_known_secret_bytes) return 0;
  const unsigned pair =
      static_cast<unsigned char>(text[at]) << 8 | static_cast<unsigned char>(text[at + 1]);
  if (!(known_pairs_[pair / 64] >> (pair % 64) & 1)) return 0;
  for (const auto& k : known_)
    if (text.substr(at, k.size()) == k) return k.size();
  return 0;
}

redaction_counts secret_detector::redact(std::string_view text, std::string& out) const {
  redaction_counts counts;
  if (mode_ == redaction_mode::off) return counts;
  std::vector<match> found;
  pem_end_finder pem_ends;
  for (std::size_t i = 0; i < text.size();) {
    if (!trigger_[static_cast<unsigned char>(text[i])]) {
      ++i;
      continue;
    }
    std::optional<match> m;
    if (auto n = known_.empty() ? 0 : known_at(text, i))
      m = match{i, i + n, secret_kind::known_secret};
    if (!m && mode_ == redaction_mode::patterns) {
      m = shape_at(text, i, pem_ends);
      // An assigned value starts after `i`: a known value there is named as such.
      if (m && m->begin != i)
        if (auto n = known_at(text, m->begin))
          m = match{m->begin, m->begin + n, secret_kind::known_secret};
    }
    if (!m) {
      ++i;
      continue;
    }
    found.push_back(*m);
    counts.add(m->kind);
    i = m->end;
  }
  if (found.empty()) return counts;
  std::string r;
  r.reserve(text.size());
  std::size_t at = 0;
  for (const auto& m : found) {
    r.append(text.substr(at, m.begin - at)).append("[redacted: ").append(kind_name(m.kind));
    r.push_back(']');
    at = m.end;
  }
  r.append(text.substr(at));
  out = std::move(r);
  return counts;
}

redaction_counts secret_detector::redact(std::string& text) const {
  std::string out;
  auto counts = redact(std::string_view(text), out);
  if (!counts.empty()) text = std::move(out);
  return counts;
}

namespace {

void redact_string(json::value* v, const secret_detector& d, redaction_counts& counts) {
  auto* s = v ? v->if_string() : nullptr;
  if (!s) return;
  std::string out;
  const auto n = d.redact(std::string_view(*s), out);
  if (n.empty()) return;
  *s = out;
  counts += n;
}

// Every string at any depth (values, not keys). The depth is the parser's (Boost.JSON stops at
// 32 levels by default), so the recursion is bounded.
void redact_deep(json::value& v, const secret_detector& d, redaction_counts& counts) {
  if (v.is_string()) {
    redact_string(&v, d, counts);
  } else if (auto* a = v.if_array()) {
    for (auto& e : *a) redact_deep(e, d, counts);
  } else if (auto* o = v.if_object()) {
    for (auto& kv : *o) redact_deep(kv.value(), d, counts);
  }
}

// A content block: text, an embedded resource's text (never its blob), a resource link's
// description.
void redact_block(json::value& block, const secret_detector& d, redaction_counts& counts) {
  auto* b = block.if_object();
  if (!b) return;
  redact_string(b->if_contains("text"), d, counts);
  if (auto* r = b->if_contains("resource"); r && r->is_object())
    redact_string(r->as_object().if_contains("text"), d, counts);
  if (auto* type = b->if_contains("type"); type && type->is_string() && *type == "resource_link")
    redact_string(b->if_contains("description"), d, counts);
}

void redact_blocks(json::value* blocks, const secret_detector& d, redaction_counts& counts) {
  if (!blocks) return;
  if (auto* a = blocks->if_array()) {
    for (auto& b : *a) redact_block(b, d, counts);
  } else {
    redact_block(*blocks, d, counts);  // a prompt message holds one block
  }
}

}  // namespace

namespace {

// A printable ASCII character written as \u00XX. Encoders escape a few of them to be safe in HTML
// (Go: < > &; some also ' and /), never letters or digits, which only a server hiding a value
// would write so.
bool escapes_word_character(std::string_view text) {
  for (auto at = text.find("\\u00"); at != std::string_view::npos;
       at = text.find("\\u00", at + 1)) {
    if (at + 6 > text.size()) return false;
    const char hi = text[at + 4], lo = static_cast<char>(std::tolower(text[at + 5]));
    if (hi < '2' || hi > '7') continue;
    const std::string_view code = text.substr(at + 4, 2);
    if (code == "22" || code == "26" || code == "27" || code == "2f" || code == "2F" ||
        code == "3c" || code == "3C" || code == "3e" || code == "3E" || code == "5c" ||
        code == "5C")
      continue;
    if (std::isxdigit(static_cast<unsigned char>(lo))) return true;
  }
  return false;
}

}  // namespace

bool may_hold_secret(std::string_view json_text, const secret_detector& detector) {
  if (detector.mode() == redaction_mode::off) return false;
  std::string scratch;
  if (!detector.redact(json_text, scratch).empty()) return true;
  // A PEM block's lines are joined by "\n" escapes in JSON text, which the shape needs.
  if (detector.mode() == redaction_mode::patterns &&
      json_text.find("PRIVATE KEY-----") != std::string_view::npos)
    return true;
  return escapes_word_character(json_text);
}

redaction_counts redact_result(json::value& result, const secret_detector& detector) {
  redaction_counts counts;
  auto* r = result.if_object();
  if (detector.mode() == redaction_mode::off || !r) return counts;
  redact_blocks(r->if_contains("content"), detector, counts);  // tools/call
  if (auto* structured = r->if_contains("structuredContent"))
    redact_deep(*structured, detector, counts);
  if (auto* contents = r->if_contains("contents"); contents && contents->is_array())  // read
    for (auto& c : contents->as_array())
      if (c.is_object()) redact_string(c.as_object().if_contains("text"), detector, counts);
  if (auto* messages = r->if_contains("messages"); messages && messages->is_array()) {  // prompt
    for (auto& m : messages->as_array())
      if (m.is_object()) redact_blocks(m.as_object().if_contains("content"), detector, counts);
    redact_string(r->if_contains("description"), detector, counts);
  }
  return counts;
}

redaction_counts redact_error(json::value& error, const secret_detector& detector) {
  redaction_counts counts;
  auto* e = error.if_object();
  if (detector.mode() == redaction_mode::off || !e) return counts;
  redact_string(e->if_contains("message"), detector, counts);
  if (auto* data = e->if_contains("data")) redact_deep(*data, detector, counts);
  return counts;
}

redaction_counts redact_notification(std::string_view method, json::value& params,
                                     const secret_detector& detector) {
  redaction_counts counts;
  auto* p = params.if_object();
  if (detector.mode() == redaction_mode::off || !p) return counts;
  if (method == "notifications/message") {
    if (auto* data = p->if_contains("data")) redact_deep(*data, detector, counts);
  } else if (method == "notifications/progress") {
    redact_string(p->if_contains("message"), detector, counts);
  }
  return counts;
}

}  // namespace mcpmux::mcp
