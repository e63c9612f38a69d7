// Unit tests of core/tool_cache: round trip in the state store, invalidation by config hash,
// bad entries, tools left out, and the move of older versions' cache files into the store.
#include "core/tool_cache.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace mcpmux {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

server_config stdio_server() {
  server_config s;
  s.name = "files";
  s.type = server_type::stdio;
  s.command = "npx";
  s.args = {"-y", "@modelcontextprotocol/server-filesystem", "/tmp"};
  s.env = {{"DEBUG", "0"}, {"HOME", "/home/u"}};
  s.cwd = "/srv";
  return s;
}

server_config http_server() {
  server_config s;
  s.name = "web";
  s.type = server_type::http;
  s.url = "https://example.com/mcp";
  s.headers = {{"Authorization", "Bearer x"}};
  return s;
}

json::object tool(const std::string& name, const std::string& description) {
  json::object t;
  t["name"] = name;
  t["description"] = description;
  t["inputSchema"] = json::parse(R"({"type":"object","properties":{"path":{"type":"string"}}})");
  return t;
}

std::vector<json::object> sample_tools() {
  return {tool("read_file", "Reads a file"), tool("write_file", "Writes a file \u00e9\n\"q\"")};
}

// A state store in a fresh directory under the system temp dir, removed at the end of each test.
class ToolCache : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (fs::temp_directory_path() / "mcpmux-tool-cache-XXXXXX").string();
    ASSERT_NE(::mkdtemp(templ.data()), nullptr);
    root_ = templ;
    auto opened = state_store::open(root_ + "/state/state.db");
    ASSERT_TRUE(opened) << opened.error().message;
    store_ = std::move(*opened);
  }
  void TearDown() override {
    store_.reset();
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  // A raw entry, as a crash or an older version might have left it.
  void write_entry(const server_config& s, const std::string& doc) const {
    ASSERT_TRUE(store_->put_cached_tools({s.name, server_config_hash(s), doc}).ok());
  }

  // An entry text with a valid header and the given tools array (as JSON text).
  static std::string entry_text(const std::string& tools) {
    return R"({"format":1,"tools":)" + tools + "}";
  }

  void store(const server_config& s, const std::vector<json::object>& tools) const {
    auto kept = store_cached_tools(*store_, s, tools);
    ASSERT_TRUE(kept) << kept.error().message;
  }

  std::optional<std::vector<json::object>> load_one(const server_config& s,
                                                    std::string* warning) const {
    auto got = load_cache_entries(*store_, {s});
    *warning = got[0].warning;
    return std::move(got[0].tools);
  }

  std::string root_;
  std::unique_ptr<state_store> store_;
};

TEST_F(ToolCache, ManyEntriesAreReadSideBySideInTheServersOrder) {
  // Enough cached text for the reading to be spread over threads (a helper per 256 KiB).
  std::vector<server_config> servers;
  const std::string long_words(40 * 1024, 'w');
  for (int i = 0; i < 24; ++i) {
    auto s = stdio_server();
    s.name = "s" + std::to_string(i);
    servers.push_back(s);
    if (i % 5 == 3) continue;  // no entry: nothing, and no warning
    store(s, {tool("t" + std::to_string(i), "tool of " + s.name + " " + long_words)});
  }
  servers[7].enabled = false;              // a disabled server is not read
  write_entry(servers[11], "{ not json");  // a corrupt entry: a warning
  store(servers[12], sample_tools());
  servers[12].args.push_back("--changed");  // a stale entry (config changed): nothing
  const auto got = load_cache_entries(*store_, servers);
  ASSERT_EQ(got.size(), servers.size());
  for (std::size_t i = 0; i < servers.size(); ++i) {
    SCOPED_TRACE(servers[i].name);
    if (i % 5 == 3 || i == 7 || i == 12) {
      EXPECT_FALSE(got[i].tools);
      EXPECT_EQ(got[i].warning, "");
    } else if (i == 11) {
      EXPECT_FALSE(got[i].tools);
      EXPECT_THAT(got[i].warning, HasSubstr("corrupt"));
    } else {
      ASSERT_TRUE(got[i].tools);
      ASSERT_EQ(got[i].tools->size(), 1u);
      EXPECT_EQ(got[i].tools->front().at("name").as_string(),
                ("t" + std::to_string(i)).c_str());  // its own, in order
      EXPECT_EQ(got[i].tools->front().at("description").as_string().size(),
                ("tool of " + servers[i].name + " ").size() + long_words.size());
    }
  }
}

TEST_F(ToolCache, StoreThenLoadReturnsTheSameTools) {
  const auto s = stdio_server();
  store(s, sample_tools());
  std::string warning;
  auto got = load_one(s, &warning);
  ASSERT_TRUE(got.has_value()) << warning;
  EXPECT_EQ(warning, "");
  EXPECT_EQ(*got, sample_tools());
}

TEST_F(ToolCache, EmptyToolListRoundTrips) {
  const auto s = http_server();
  store(s, {});
  std::string warning;
  auto got = load_one(s, &warning);
  ASSERT_TRUE(got.has_value()) << warning;
  EXPECT_TRUE(got->empty());
  EXPECT_EQ(warning, "");
}

TEST_F(ToolCache, StoreOverwritesThePreviousEntry) {
  const auto s = stdio_server();
  store(s, sample_tools());
  store(s, {tool("only", "the new one")});
  std::string warning;
  auto got = load_one(s, &warning);
  ASSERT_TRUE(got.has_value()) << warning;
  EXPECT_EQ(*got, std::vector<json::object>{tool("only", "the new one")});
  EXPECT_EQ(store_->cached_tools().size(), 1u);
}

TEST_F(ToolCache, ServersHaveSeparateEntries) {
  store(stdio_server(), sample_tools());
  store(http_server(), {tool("fetch", "Fetches")});
  std::string warning;
  auto a = load_one(stdio_server(), &warning);
  auto b = load_one(http_server(), &warning);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a, sample_tools());
  EXPECT_EQ(*b, std::vector<json::object>{tool("fetch", "Fetches")});
}

TEST_F(ToolCache, ChangedConfigInvalidatesWithoutWarning) {
  const std::vector<std::pair<std::string, std::function<void(server_config&)>>> changes = {
      {"args", [](server_config& s) { s.args.push_back("/home"); }},
      {"args order", [](server_config& s) { std::swap(s.args[0], s.args[1]); }},
      {"env value", [](server_config& s) { s.env["DEBUG"] = "1"; }},
      {"env key", [](server_config& s) { s.env["EXTRA"] = ""; }},
      {"command", [](server_config& s) { s.command = "node"; }},
      {"cwd", [](server_config& s) { s.cwd = "/"; }},
      {"url", [](server_config& s) { s.url = "http://x"; }},
      {"headers", [](server_config& s) { s.headers["X"] = "y"; }},
      {"type", [](server_config& s) { s.type = server_type::http; }},
  };
  const auto base = stdio_server();
  store(base, sample_tools());
  for (const auto& [what, change] : changes) {
    auto s = base;
    change(s);
    std::string warning;
    EXPECT_FALSE(load_one(s, &warning).has_value()) << what;
    EXPECT_EQ(warning, "") << what;
  }
  // The entry itself is untouched: the unchanged config still finds it.
  std::string warning;
  EXPECT_TRUE(load_one(base, &warning).has_value());
}

TEST_F(ToolCache, HttpUrlAndTypeChangesInvalidate) {
  const auto base = http_server();
  store(base, sample_tools());
  for (auto change : std::vector<std::function<void(server_config&)>>{
           [](server_config& s) { s.url = "https://example.com/mcp/v2"; },
           [](server_config& s) { s.type = server_type::sse; },
           [](server_config& s) { s.headers.clear(); }}) {
    auto s = base;
    change(s);
    std::string warning;
    EXPECT_FALSE(load_one(s, &warning).has_value());
    EXPECT_EQ(warning, "");
  }
}

TEST_F(ToolCache, FieldsOutsideTheHashDoNotInvalidate) {
  // server_config_hash covers type, command, args, env, cwd, url and headers; the prefix only
  // renames the exposed tools, and the others do not change what the server lists.
  const auto base = stdio_server();
  store(base, sample_tools());
  const std::vector<std::function<void(server_config&)>> changes = {
      [](server_config& s) { s.prefix = "fs"; },
      [](server_config& s) { s.prefix = ""; },
      [](server_config& s) { s.timeout = std::chrono::milliseconds(5); },
      [](server_config& s) { s.retry = retry_mode::never; },
      [](server_config& s) { s.ping_interval = std::chrono::milliseconds(1000); },
      [](server_config& s) { s.line = 42; },
  };
  for (std::size_t i = 0; i < changes.size(); ++i) {
    auto s = base;
    changes[i](s);
    EXPECT_EQ(server_config_hash(s), server_config_hash(base)) << "change " << i;
    std::string warning;
    auto got = load_one(s, &warning);
    ASSERT_TRUE(got.has_value()) << "change " << i << ": " << warning;
    EXPECT_EQ(*got, sample_tools());
  }
}

TEST_F(ToolCache, MissingFileIsSilent) {
  std::string warning;
  EXPECT_FALSE(load_one(stdio_server(), &warning).has_value());  // no dir at all
  EXPECT_EQ(warning, "");
  store(http_server(), sample_tools());
  EXPECT_FALSE(load_one(stdio_server(), &warning).has_value());  // other server only
  EXPECT_EQ(warning, "");
}

TEST_F(ToolCache, MissingEntryIsSilent) {
  std::string warning;
  EXPECT_FALSE(load_one(stdio_server(), &warning).has_value());
  EXPECT_EQ(warning, "");
  store(http_server(), sample_tools());
  EXPECT_FALSE(load_one(stdio_server(), &warning).has_value());  // the other server's only
  EXPECT_EQ(warning, "");
}

TEST_F(ToolCache, CorruptOrMisshapenEntriesWarn) {
  const auto s = stdio_server();
  const auto full = entry_text(R"([{"name":"a"}])");
  const std::vector<std::string> bad = {
      "{not json",
      full.substr(0, full.size() - 3),
      "",
      full + "garbage",
      R"([1,2,3])",
      R"("tools")",
      R"({"format":1})",
      R"({"format":1,"tools":{}})",
      R"({"format":1,"tools":null})",
      R"({"format":2,"tools":[]})",
      R"({"format":"1","tools":[]})",
      R"({"format":1.5,"tools":[]})",
      R"({"tools":[]})",
      entry_text(R"([{"description":"no name"}])"),
      entry_text(R"([{"name":"ok"},{"description":"no name"}])"),
      entry_text(R"([{"name":42}])"),
      entry_text(R"([{"name":null}])"),
      entry_text(R"(["read_file"])"),
      entry_text(R"([null])"),
  };
  for (const auto& text : bad) {
    write_entry(s, text);
    std::string warning;
    EXPECT_FALSE(load_one(s, &warning).has_value()) << text;
    EXPECT_THAT(warning, HasSubstr("tool cache entry of files")) << text;
  }
  // The same shape with a valid tool list loads, with its era.
  write_entry(s, R"({"format":1,"era":"modern","tools":[{"name":"ok","extra":[1,{"x":null}]}]})");
  auto got = load_cache_entries(*store_, {s});
  ASSERT_TRUE(got[0].tools.has_value()) << got[0].warning;
  ASSERT_EQ(got[0].tools->size(), 1u);
  EXPECT_EQ((*got[0].tools)[0].at("name").as_string(), "ok");
  EXPECT_EQ(got[0].era, "modern");
}

TEST_F(ToolCache, ToolsTrustHoldsBackAreNotCached) {
  const auto s = stdio_server();
  const std::unordered_set<std::string> held = {"write_file"};
  auto kept = store_cached_tools(*store_, s, sample_tools(), "legacy", &held);
  ASSERT_TRUE(kept) << kept.error().message;
  auto got = load_cache_entries(*store_, {s});
  ASSERT_TRUE(got[0].tools);
  EXPECT_EQ(*got[0].tools, std::vector<json::object>{sample_tools()[0]});
  EXPECT_EQ(got[0].era, "legacy");
}

TEST_F(ToolCache, TheEntriesLastAcrossReopening) {
  store(stdio_server(), sample_tools());
  store_.reset();
  auto opened = state_store::open(root_ + "/state/state.db");
  ASSERT_TRUE(opened) << opened.error().message;
  store_ = std::move(*opened);
  std::string warning;
  auto got = load_one(stdio_server(), &warning);
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, sample_tools());
}

TEST_F(ToolCache, OlderVersionsCacheFilesMoveIntoTheStore) {
  const auto dir = root_ + "/cache/mcpmux";
  fs::create_directories(dir);
  const auto a = stdio_server(), b = http_server();
  auto file_text = [](const server_config& s, const std::string& tools) {
    return R"({"format":1,"server":")" + s.name + R"(","config_hash":")" + server_config_hash(s) +
           R"(","era":"legacy","tools":)" + tools + "}";
  };
  std::ofstream(dir + "/tools-files.json") << file_text(a, R"([{"name":"read_file"}])");
  std::ofstream(dir + "/tools-web.json") << file_text(b, R"([{"name":"fetch"},{"name":"get"}])");
  std::ofstream(dir + "/tools-broken.json") << "{ not json";
  std::vector<std::string> warnings;
  EXPECT_EQ(migrate_cache_files(dir, *store_, &warnings), 2u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("tools-broken.json"));
  EXPECT_FALSE(fs::exists(dir));  // every file moved or dropped, the directory with them
  auto got = load_cache_entries(*store_, {a, b});
  ASSERT_TRUE(got[0].tools && got[1].tools);
  EXPECT_EQ(got[0].tools->size(), 1u);
  EXPECT_EQ(got[1].tools->size(), 2u);
  EXPECT_EQ(got[0].era, "legacy");
  // Nothing to move the second time; a directory that does not exist is no error.
  EXPECT_EQ(migrate_cache_files(dir, *store_, &warnings), 0u);
  EXPECT_EQ(warnings.size(), 1u);
}

TEST_F(ToolCache, AnotherFileInTheOldDirectoryStays) {
  const auto dir = root_ + "/cache/mcpmux";
  fs::create_directories(dir);
  std::ofstream(dir + "/notes.txt") << "mine";
  std::vector<std::string> warnings;
  EXPECT_EQ(migrate_cache_files(dir, *store_, &warnings), 0u);
  EXPECT_TRUE(fs::exists(dir + "/notes.txt"));
  EXPECT_TRUE(warnings.empty());
}

TEST_F(ToolCache, HashIsStableAndHex) {
  const auto s = stdio_server();
  const auto h = server_config_hash(s);
  EXPECT_EQ(h.size(), 16u);
  EXPECT_EQ(h.find_first_not_of("0123456789abcdef"), std::string::npos) << h;
  EXPECT_EQ(server_config_hash(s), h);
  auto copy = s;
  EXPECT_EQ(server_config_hash(copy), h);
  // Name is the entry's key, not part of the hash.
  copy.name = "other";
  EXPECT_EQ(server_config_hash(copy), h);
  // The same env built in another order hashes the same (std::map is ordered).
  server_config t = s;
  t.env.clear();
  t.env["HOME"] = "/home/u";
  t.env["DEBUG"] = "0";
  EXPECT_EQ(server_config_hash(t), h);
}

TEST_F(ToolCache, HashSeparatesFieldBoundaries) {
  auto pair_differs = [](const std::function<void(server_config&)>& a,
                         const std::function<void(server_config&)>& b) {
    server_config x, y;
    a(x);
    b(y);
    return server_config_hash(x) != server_config_hash(y);
  };
  EXPECT_TRUE(pair_differs(
      [](server_config& s) {
        s.args = {"ab", "c"};
      },
      [](server_config& s) {
        s.args = {"a", "bc"};
      }));
  EXPECT_TRUE(pair_differs(
      [](server_config& s) {
        s.args = {"a", "b"};
      },
      [](server_config& s) { s.args = {"ab"}; }));
  EXPECT_TRUE(
      pair_differs([](server_config& s) { s.args = {}; }, [](server_config& s) { s.args = {""}; }));
  EXPECT_TRUE(pair_differs([](server_config& s) { s.args = {""}; },
                           [](server_config& s) {
                             s.args = {"", ""};
                           }));
  EXPECT_TRUE(pair_differs([](server_config& s) { s.command = "ab"; },
                           [](server_config& s) { s.command = "a", s.args = {"b"}; }));
  EXPECT_TRUE(pair_differs(
      [](server_config& s) {
        s.args = {"k", "v"};
      },
      [](server_config& s) {
        s.env = {{"k", "v"}};
      }));
  EXPECT_TRUE(pair_differs(
      [](server_config& s) {
        s.env = {{"ab", "c"}};
      },
      [](server_config& s) {
        s.env = {{"a", "bc"}};
      }));
  EXPECT_TRUE(pair_differs(
      [](server_config& s) {
        s.env = {{"a", ""}};
      },
      [](server_config& s) {
        s.env = {{"", "a"}};
      }));
  EXPECT_TRUE(
      pair_differs([](server_config& s) { s.cwd = "x"; }, [](server_config& s) { s.url = "x"; }));
  EXPECT_TRUE(pair_differs([](server_config& s) { s.url = "x"; },
                           [](server_config& s) {
                             s.headers = {{"x", ""}};
                           }));
  EXPECT_TRUE(pair_differs(
      [](server_config& s) {
        s.headers = {{"ab", "c"}};
      },
      [](server_config& s) {
        s.headers = {{"a", "bc"}};
      }));
  EXPECT_TRUE(pair_differs([](server_config& s) { s.args = {"|"}; },
                           [](server_config& s) {
                             s.env = {{"", ""}};
                           }));
  EXPECT_TRUE(
      pair_differs([](server_config&) {}, [](server_config& s) { s.type = server_type::http; }));
  EXPECT_TRUE(pair_differs([](server_config& s) { s.type = server_type::http; },
                           [](server_config& s) { s.type = server_type::sse; }));
}

}  // namespace
}  // namespace mcpmux
