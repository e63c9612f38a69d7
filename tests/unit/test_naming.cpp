// Unit tests of core/naming: sanitising, shortening, collision resolution and determinism.
#include "core/naming.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace mcpmux {
namespace {

bool valid_chars(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

// `_` + the high 32 bits of fnv1a64(key) in lowercase hex: the documented suffix format.
std::string expected_suffix(const std::string& key) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "_%08llx", static_cast<unsigned long long>(fnv1a64(key) >> 32));
  return buf;
}

bool is_hash_suffix(const std::string& s) {
  if (s.size() != 9 || s[0] != '_') return false;
  return std::all_of(s.begin() + 1, s.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

#if defined(__OPTIMIZE__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__) && \
    !defined(_GLIBCXX_DEBUG)
constexpr bool timing_is_meaningful = true;
#else
constexpr bool timing_is_meaningful = false;
#endif

// identity "server/original" -> exposed name.
std::map<std::string, std::string> by_identity(const std::vector<naming_input>& inputs,
                                               const std::vector<naming_output>& out) {
  std::map<std::string, std::string> m;
  for (const auto& o : out) m[inputs[o.index].server + "/" + inputs[o.index].original] = o.exposed;
  return m;
}

std::string name_of(const std::vector<naming_input>& inputs, const std::vector<naming_output>& out,
                    const std::string& server, const std::string& original) {
  for (const auto& o : out) {
    if (inputs[o.index].server == server && inputs[o.index].original == original) return o.exposed;
  }
  ADD_FAILURE() << "no output for " << server << "/" << original;
  return {};
}

// Checks the invariants every result must hold.
void expect_well_formed(const std::vector<naming_input>& inputs,
                        const std::vector<naming_output>& out, const naming_rules& rules) {
  ASSERT_EQ(out.size(), inputs.size());
  std::set<std::size_t> indexes;
  std::set<std::string> names;
  for (const auto& o : out) {
    indexes.insert(o.index);
    names.insert(o.exposed);
    EXPECT_TRUE(valid_chars(o.exposed)) << o.exposed;
    EXPECT_FALSE(o.exposed.empty());
    EXPECT_LE(o.exposed.size(), rules.max_len) << o.exposed;
  }
  EXPECT_EQ(indexes.size(), inputs.size());
  EXPECT_EQ(names.size(), inputs.size()) << "exposed names are not unique";
  EXPECT_TRUE(std::is_sorted(out.begin(), out.end(),
                             [](const auto& a, const auto& b) { return a.exposed < b.exposed; }));
}

// ---------------------------------------------------------------------------------------------
// fnv1a64

TEST(NamingHash, Fnv1a64KnownVectors) {
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ull);
}

// ---------------------------------------------------------------------------------------------
// sanitize_tool_name

TEST(NamingSanitize, KeepsAllowedCharacters) {
  EXPECT_EQ(sanitize_tool_name("read_file-V2_abcXYZ0189"), "read_file-V2_abcXYZ0189");
}

TEST(NamingSanitize, ReplacesSpacesDotsSlashes) {
  EXPECT_EQ(sanitize_tool_name("read file"), "read_file");
  EXPECT_EQ(sanitize_tool_name("git.status"), "git_status");
  EXPECT_EQ(sanitize_tool_name("a/b\\c"), "a_b_c");
  EXPECT_EQ(sanitize_tool_name("x:y@z!?*"), "x_y_z___");
  EXPECT_EQ(sanitize_tool_name("tab\tnl\n"), "tab_nl_");
}

TEST(NamingSanitize, ReplacesEachUnicodeByte) {
  // "é" is two UTF-8 bytes, "🙂" four: each byte becomes one '_'.
  EXPECT_EQ(sanitize_tool_name("caf\xC3\xA9"), "caf__");
  EXPECT_EQ(sanitize_tool_name("\xF0\x9F\x99\x82x"), "____x");
}

TEST(NamingSanitize, NulByteIsReplaced) {
  EXPECT_EQ(sanitize_tool_name(std::string_view("a\0b", 3)), "a_b");
}

TEST(NamingSanitize, Empty) {
  EXPECT_EQ(sanitize_tool_name(""), "");
}

// ---------------------------------------------------------------------------------------------
// Composition: prefix, separator, no prefix

TEST(NamingCompose, PrefixAndSeparator) {
  const std::vector<naming_input> in{{"files", "fs", "read_file"}};
  const auto out = assign_tool_names(in, {}, nullptr);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].index, 0u);
  EXPECT_EQ(out[0].exposed, "fs__read_file");
}

TEST(NamingCompose, CustomSeparator) {
  naming_rules rules;
  rules.separator = "-";
  const std::vector<naming_input> in{{"files", "fs", "read_file"}};
  EXPECT_EQ(assign_tool_names(in, rules, nullptr)[0].exposed, "fs-read_file");
}

TEST(NamingCompose, NoPrefixExposesToolNameUnchanged) {
  const std::vector<naming_input> in{{"files", "", "read_file"}};
  EXPECT_EQ(assign_tool_names(in, {}, nullptr)[0].exposed, "read_file");
}

TEST(NamingCompose, PrefixSeparatorAndToolAreSanitised) {
  naming_rules rules;
  rules.separator = ".";
  const std::vector<naming_input> in{{"s", "my srv", "do/it"}};
  EXPECT_EQ(assign_tool_names(in, rules, nullptr)[0].exposed, "my_srv_do_it");
}

TEST(NamingCompose, EmptyToolWithoutPrefixBecomesUnderscore) {
  const std::vector<naming_input> in{{"s", "", ""}};
  EXPECT_EQ(assign_tool_names(in, {}, nullptr)[0].exposed, "_");
}

TEST(NamingCompose, EmptyToolWithPrefix) {
  const std::vector<naming_input> in{{"s", "p", ""}};
  EXPECT_EQ(assign_tool_names(in, {}, nullptr)[0].exposed, "p__");
}

TEST(NamingCompose, EmptyInput) {
  std::vector<naming_collision> collisions;
  EXPECT_TRUE(assign_tool_names({}, {}, &collisions).empty());
  EXPECT_TRUE(collisions.empty());
}

// ---------------------------------------------------------------------------------------------
// shorten_tool_name

TEST(NamingShorten, ExactlyMaxLenIsUnchanged) {
  const std::string name(64, 'a');
  EXPECT_EQ(shorten_tool_name(name, "s/" + name, 64), name);
}

TEST(NamingShorten, MaxLenPlusOneIsShortened) {
  const std::string name = std::string(60, 'a') + "bcdef";  // 65
  const std::string key = "s/" + name;
  const std::string out = shorten_tool_name(name, key, 64);
  ASSERT_EQ(out.size(), 64u);
  EXPECT_EQ(out.substr(0, 55), name.substr(0, 55));
  EXPECT_EQ(out.substr(55), expected_suffix(key));
  EXPECT_TRUE(is_hash_suffix(out.substr(55)));
}

TEST(NamingShorten, VeryLongName) {
  const std::string name(100000, 'x');
  const std::string out = shorten_tool_name(name, "s/long", 64);
  EXPECT_EQ(out.size(), 64u);
  EXPECT_EQ(out.substr(0, 55), std::string(55, 'x'));
  EXPECT_EQ(out.substr(55), expected_suffix("s/long"));
}

TEST(NamingShorten, ResultLengthForManyLimits) {
  const std::string name(300, 'n');
  for (std::size_t max_len = min_tool_name_len; max_len <= 299; ++max_len) {
    const std::string out = shorten_tool_name(name, "k", max_len);
    EXPECT_EQ(out.size(), max_len);
    EXPECT_TRUE(is_hash_suffix(out.substr(max_len - 9)));
  }
  EXPECT_EQ(shorten_tool_name(name, "k", 300), name);
  EXPECT_EQ(shorten_tool_name(name, "k", 1000), name);
}

TEST(NamingShorten, TinyMaxLenIsRaisedToSuffixLength) {
  const std::string out = shorten_tool_name("abcdefghijkl", "k", 3);
  EXPECT_EQ(out, expected_suffix("k"));
  EXPECT_EQ(out.size(), min_tool_name_len);
  EXPECT_EQ(shorten_tool_name("ab", "k", 3), "ab");  // fits: unchanged
}

TEST(NamingShorten, StableAcrossCalls) {
  const std::string name(200, 'q');
  const std::string first = shorten_tool_name(name, "srv/q", 64);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(shorten_tool_name(name, "srv/q", 64), first);
  // Pinned value: the short hash must not change between releases (tool caches, client configs).
  EXPECT_EQ(first, std::string(55, 'q') + expected_suffix("srv/q"));
}

TEST(NamingShorten, DifferentKeysGiveDifferentNames) {
  const std::string name(200, 'q');
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    seen.insert(shorten_tool_name(name, "srv/tool" + std::to_string(i), 64));
  }
  EXPECT_EQ(seen.size(), 1000u);
}

TEST(NamingShorten, AssignUsesServerSlashOriginalAsKey) {
  const std::string tool(100, 't');
  const std::vector<naming_input> in{{"srv", "p", tool}};
  const auto out = assign_tool_names(in, {}, nullptr);
  EXPECT_EQ(out[0].exposed, shorten_tool_name("p__" + tool, "srv/" + tool, 64));
  EXPECT_EQ(out[0].exposed.size(), 64u);
}

TEST(NamingShorten, AssignRespectsMaxLenBoundary) {
  naming_rules rules;
  rules.max_len = 20;
  const std::vector<naming_input> in{
      {"s", "p", std::string(17, 'a')},  // p__ + 17 = 20: fits
      {"s", "p", std::string(18, 'b')},  // 21: shortened
  };
  const auto out = assign_tool_names(in, rules, nullptr);
  expect_well_formed(in, out, rules);
  EXPECT_EQ(name_of(in, out, "s", std::string(17, 'a')), "p__" + std::string(17, 'a'));
  const std::string b = name_of(in, out, "s", std::string(18, 'b'));
  EXPECT_EQ(b, "p__bbbbbbbb" + expected_suffix("s/" + std::string(18, 'b')));
}

TEST(NamingShorten, LongNamesSharingAHeadDoNotCollide) {
  const std::string head(80, 'h');
  const std::vector<naming_input> in{{"s", "", head + "1"}, {"s", "", head + "2"}};
  std::vector<naming_collision> collisions;
  const auto out = assign_tool_names(in, {}, &collisions);
  expect_well_formed(in, out, {});
  EXPECT_TRUE(collisions.empty());
}

// ---------------------------------------------------------------------------------------------
// Collisions

TEST(NamingCollision, TwoServersWithTheSamePrefix) {
  // Input order deliberately reversed: "alpha" < "beta", so alpha keeps the name.
  const std::vector<naming_input> in{{"beta", "git", "status"}, {"alpha", "git", "status"}};
  std::vector<naming_collision> collisions;
  const auto out = assign_tool_names(in, {}, &collisions);
  expect_well_formed(in, out, {});
  EXPECT_EQ(name_of(in, out, "alpha", "status"), "git__status");
  const std::string renamed = "git__status" + expected_suffix("beta/status");
  EXPECT_EQ(name_of(in, out, "beta", "status"), renamed);
  ASSERT_EQ(collisions.size(), 1u);
  EXPECT_EQ(collisions[0].exposed, "git__status");
  EXPECT_EQ(collisions[0].winner, "alpha/status");
  EXPECT_EQ(collisions[0].loser, "beta/status");
  EXPECT_EQ(collisions[0].renamed, renamed);
}

TEST(NamingCollision, NullCollisionsPointerIsAllowed) {
  const std::vector<naming_input> in{{"a", "x", "t"}, {"b", "x", "t"}};
  const auto out = assign_tool_names(in, {}, nullptr);
  expect_well_formed(in, out, {});
}

TEST(NamingCollision, CreatedBySanitising) {
  const std::vector<naming_input> in{{"s", "", "a_b"}, {"s", "", "a.b"}};
  std::vector<naming_collision> collisions;
  const auto out = assign_tool_names(in, {}, &collisions);
  expect_well_formed(in, out, {});
  // "a.b" sorts before "a_b" ('.' < '_'), so it keeps the sanitised name.
  EXPECT_EQ(name_of(in, out, "s", "a.b"), "a_b");
  EXPECT_EQ(name_of(in, out, "s", "a_b"), "a_b" + expected_suffix("s/a_b"));
  ASSERT_EQ(collisions.size(), 1u);
  EXPECT_EQ(collisions[0].exposed, "a_b");
  EXPECT_EQ(collisions[0].winner, "s/a.b");
  EXPECT_EQ(collisions[0].loser, "s/a_b");
}

TEST(NamingCollision, CreatedByShortening) {
  // s1's long name shortens to exactly the literal (fitting) name of s2's tool.
  const std::string long_tool(100, 'L');
  const std::string shortened = shorten_tool_name(long_tool, "s1/" + long_tool, 64);
  const std::vector<naming_input> in{{"s2", "", shortened}, {"s1", "", long_tool}};
  std::vector<naming_collision> collisions;
  const auto out = assign_tool_names(in, {}, &collisions);
  expect_well_formed(in, out, {});
  EXPECT_EQ(name_of(in, out, "s1", long_tool), shortened);
  const std::string renamed = name_of(in, out, "s2", shortened);
  EXPECT_EQ(renamed.size(), 64u);
  EXPECT_EQ(renamed, shortened.substr(0, 55) + expected_suffix("s2/" + shortened));
  ASSERT_EQ(collisions.size(), 1u);
  EXPECT_EQ(collisions[0].winner, "s1/" + long_tool);
  EXPECT_EQ(collisions[0].loser, "s2/" + shortened);
}

TEST(NamingCollision, ShortenedLoserFallsBackToCounter) {
  // "a" holds the literal name; "b"'s long tool shortens to it using b's own identity hash, so the
  // first rename candidate (same head, same hash) is the taken name again and the counter kicks in.
  const std::string long_tool(100, 'L');
  const std::string shortened = shorten_tool_name(long_tool, "b/" + long_tool, 64);
  const std::vector<naming_input> in{{"b", "", long_tool}, {"a", "", shortened}};
  std::vector<naming_collision> collisions;
  const auto out = assign_tool_names(in, {}, &collisions);
  expect_well_formed(in, out, {});
  EXPECT_EQ(name_of(in, out, "a", shortened), shortened);
  const std::string renamed = name_of(in, out, "b", long_tool);
  EXPECT_EQ(renamed, shortened.substr(0, 55) + expected_suffix("b/" + long_tool + "#1"));
  ASSERT_EQ(collisions.size(), 1u);
  EXPECT_EQ(collisions[0].renamed, renamed);
}

TEST(NamingCollision, RenameStaysWithinMaxLen) {
  // Both exactly max_len: the rename must cut the head to fit the suffix.
  const std::string tool(59, 'z');  // "pqr__" + 59 = 64
  const std::vector<naming_input> in{{"a", "pqr", tool}, {"b", "pqr", tool}};
  std::vector<naming_collision> collisions;
  const auto out = assign_tool_names(in, {}, &collisions);
  expect_well_formed(in, out, {});
  const std::string natural = "pqr__" + tool;
  ASSERT_EQ(natural.size(), 64u);
  EXPECT_EQ(name_of(in, out, "a", tool), natural);
  EXPECT_EQ(name_of(in, out, "b", tool), natural.substr(0, 55) + expected_suffix("b/" + tool));
}

TEST(NamingCollision, NaturalNameBeatsAnotherToolsRename) {
  // c's literal tool name equals the name b's rename would take; c keeps its natural name.
  const std::string would_be = "t" + expected_suffix("b/t");
  const std::vector<naming_input> in{{"a", "", "t"}, {"b", "", "t"}, {"c", "", would_be}};
  std::vector<naming_collision> collisions;
  const auto out = assign_tool_names(in, {}, &collisions);
  expect_well_formed(in, out, {});
  EXPECT_EQ(name_of(in, out, "a", "t"), "t");
  EXPECT_EQ(name_of(in, out, "c", would_be), would_be);
  EXPECT_EQ(name_of(in, out, "b", "t"), "t" + expected_suffix("b/t#1"));
  ASSERT_EQ(collisions.size(), 1u);
  EXPECT_EQ(collisions[0].loser, "b/t");
}

TEST(NamingCollision, ManyWayCollision) {
  std::vector<naming_input> in;
  for (int i = 0; i < 50; ++i) in.push_back({"srv" + std::to_string(i), "same", "tool"});
  std::vector<naming_collision> collisions;
  const auto out = assign_tool_names(in, {}, &collisions);
  expect_well_formed(in, out, {});
  EXPECT_EQ(collisions.size(), 49u);
  EXPECT_EQ(name_of(in, out, "srv0", "tool"), "same__tool");
  for (const auto& c : collisions) EXPECT_EQ(c.winner, "srv0/tool");
}

TEST(NamingCollision, IdenticalDuplicateInputsStillGetUniqueNames) {
  const std::vector<naming_input> in{{"s", "", "t"}, {"s", "", "t"}};
  std::vector<naming_collision> collisions;
  const auto out = assign_tool_names(in, {}, &collisions);
  expect_well_formed(in, out, {});
  EXPECT_EQ(collisions.size(), 1u);
}

// ---------------------------------------------------------------------------------------------
// Determinism and ordering

std::vector<naming_input> tricky_inputs() {
  std::vector<naming_input> in;
  for (int s = 0; s < 6; ++s) {
    const std::string server = "server" + std::to_string(s);
    const std::string prefix = s < 3 ? "shared" : (s == 3 ? "" : server);
    for (int t = 0; t < 30; ++t) {
      in.push_back({server, prefix, "tool" + std::to_string(t)});
      in.push_back({server, prefix, "tool." + std::to_string(t)});
      in.push_back({server, prefix, "tool_" + std::to_string(t)});
      in.push_back({server, prefix, std::string(70, 'x') + std::to_string(t % 7)});
    }
    in.push_back({server, prefix, "caf\xC3\xA9"});
    in.push_back({server, prefix, "caf__"});
  }
  return in;
}

TEST(NamingDeterminism, ShuffledInputGivesSameNames) {
  std::vector<naming_input> in = tricky_inputs();
  std::vector<naming_collision> ref_collisions;
  const auto ref_out = assign_tool_names(in, {}, &ref_collisions);
  expect_well_formed(in, ref_out, {});
  EXPECT_FALSE(ref_collisions.empty());
  const auto ref = by_identity(in, ref_out);

  std::mt19937 rng(12345);
  for (int round = 0; round < 20; ++round) {
    std::shuffle(in.begin(), in.end(), rng);
    std::vector<naming_collision> collisions;
    const auto out = assign_tool_names(in, {}, &collisions);
    expect_well_formed(in, out, {});
    EXPECT_EQ(by_identity(in, out), ref);
    ASSERT_EQ(collisions.size(), ref_collisions.size());
    for (std::size_t i = 0; i < collisions.size(); ++i) {
      EXPECT_EQ(collisions[i].exposed, ref_collisions[i].exposed);
      EXPECT_EQ(collisions[i].winner, ref_collisions[i].winner);
      EXPECT_EQ(collisions[i].loser, ref_collisions[i].loser);
      EXPECT_EQ(collisions[i].renamed, ref_collisions[i].renamed);
    }
    // Same exposed sequence, indexes pointing at the same identities.
    ASSERT_EQ(out.size(), ref_out.size());
    for (std::size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i].exposed, ref_out[i].exposed);
  }
}

TEST(NamingDeterminism, StableAcrossCalls) {
  const auto in = tricky_inputs();
  const auto a = assign_tool_names(in, {}, nullptr);
  const auto b = assign_tool_names(in, {}, nullptr);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].index, b[i].index);
    EXPECT_EQ(a[i].exposed, b[i].exposed);
  }
}

TEST(NamingOrder, OutputSortedByExposedName) {
  const std::vector<naming_input> in{
      {"z", "", "zeta"}, {"a", "", "alpha"}, {"m", "", "Mid"}, {"b", "", "beta"}, {"c", "", "-x"}};
  const auto out = assign_tool_names(in, {}, nullptr);
  expect_well_formed(in, out, {});
  std::vector<std::string> names;
  for (const auto& o : out) names.push_back(o.exposed);
  EXPECT_EQ(names, (std::vector<std::string>{"-x", "Mid", "alpha", "beta", "zeta"}));
  EXPECT_EQ(out[0].index, 4u);
  EXPECT_EQ(out[1].index, 2u);
}

TEST(NamingOrder, IndexesMapBackToInputs) {
  const auto in = tricky_inputs();
  const auto out = assign_tool_names(in, {}, nullptr);
  for (const auto& o : out) {
    const auto& i = in[o.index];
    const std::string natural = shorten_tool_name(
        sanitize_tool_name(i.prefix.empty() ? i.original : i.prefix + "__" + i.original),
        i.server + "/" + i.original, 64);
    // Either the natural name or a rename sharing its head.
    EXPECT_EQ(o.exposed.substr(0, std::min<std::size_t>(natural.size(), 55)),
              natural.substr(0, std::min<std::size_t>(natural.size(), 55)));
  }
}

// ---------------------------------------------------------------------------------------------
// Scale

TEST(NamingScale, TenThousandToolsAllUnique) {
  std::vector<naming_input> in;
  in.reserve(10000);
  for (int i = 0; i < 10000; ++i) {
    const int s = i % 20;
    // Servers 0..4 share one prefix, so their tools collide; some names are long, some need
    // sanitising.
    const std::string prefix = s < 5 ? "shared" : "srv" + std::to_string(s);
    std::string tool = "tool_" + std::to_string(i / 20);
    if (i % 7 == 0) tool += std::string(80, 'y');
    if (i % 11 == 0) tool = "ns." + tool;
    in.push_back({"server" + std::to_string(s), prefix, tool});
  }
  std::vector<naming_collision> collisions;
  const auto start = std::chrono::steady_clock::now();
  const auto out = assign_tool_names(in, {}, &collisions);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  expect_well_formed(in, out, {});
  EXPECT_FALSE(collisions.empty());
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(elapsed).count();
  RecordProperty("naming_10k_us", static_cast<int>(us));
  // The target is well under 10 ms in an optimised build; the bound is loose so a loaded CI machine
  // does not flake, and it is skipped where instrumentation makes timing meaningless.
  if (timing_is_meaningful) {
    EXPECT_LT(us, 50000) << "naming 10,000 tools took " << us << " us";
  }
}

}  // namespace
}  // namespace mcpmux
