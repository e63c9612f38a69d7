// The tool search in process: what a search profile's search costs the daemon's loop, without a
// client's round trip. Loads the real servers' tool lists of tests/bench/search/fixtures, copies
// them under more server names until there are --tools tools, builds the catalogue and a search
// profile, then times every query of tests/bench/search/tasks.json (each --reps times) and the
// rebuilds. Figures only.
//
// usage: bench_search [--fixtures DIR] [--tasks FILE] [--tools N] [--reps N] [--verbose]
#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/profiles.hpp"

namespace json = boost::json;
using namespace mcpmux;
using clock_type = std::chrono::steady_clock;

namespace {

json::value read_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str());
}

double ms(clock_type::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

// "server\n__tool": the hit is that tool of that server or of one of its copies (server_2, …).
bool is_expected(const json::object& hit, const std::string& expected) {
  const auto nl = expected.find('\n');
  const std::string server = expected.substr(0, nl), suffix = expected.substr(nl + 1);
  const std::string got_server(hit.at("server").as_string());
  const std::string_view name = hit.at("name").as_string();
  const bool same_server =
      got_server == server ||
      (got_server.rfind(server + "_", 0) == 0 &&
       got_server.find_first_not_of("0123456789", server.size() + 1) == std::string::npos);
  return same_server && name.size() >= suffix.size() &&
         name.substr(name.size() - suffix.size()) == suffix;
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[std::min(v.size() - 1, static_cast<std::size_t>(q * v.size()))];
}

}  // namespace

int main(int argc, char** argv) {
  const std::filesystem::path root = MCPMUX_BENCH_SEARCH_DIR;  // tests/bench/search
  std::filesystem::path fixtures = root / "fixtures", tasks_file = root / "tasks.json";
  std::size_t want = 10000, reps = 3;
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--verbose") {
      verbose = true;
      continue;
    }
    if (i + 1 >= argc) break;
    const char* value = argv[++i];
    if (a == "--fixtures") fixtures = value;
    if (a == "--tasks") tasks_file = value;
    if (a == "--tools") want = std::stoul(value);
    if (a == "--reps") reps = std::stoul(value);
  }
  // The servers' lists, copied under new names (github, github_2, …) until there are enough.
  std::vector<std::pair<std::string, std::vector<json::object>>> servers;
  for (const auto& e : std::filesystem::directory_iterator(fixtures)) {
    if (e.path().extension() != ".json") continue;
    auto f = read_json(e.path());
    if (!f.is_object() || !f.as_object().contains("tools")) continue;
    std::vector<json::object> tools;
    for (const auto& t : f.at("tools").as_array()) tools.push_back(t.as_object());
    servers.emplace_back(std::string(f.at("server").as_string()), std::move(tools));
  }
  std::sort(servers.begin(), servers.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::pair<std::string, std::vector<json::object>>> lists;
  std::size_t total = 0;
  for (int copy = 1; total < want; ++copy)
    for (const auto& [name, tools] : servers) {
      if (total >= want) break;
      lists.emplace_back(copy == 1 ? name : fmt::format("{}_{}", name, copy), tools);
      total += tools.size();
    }
  const std::vector<json::object> none;
  std::vector<catalogue_source> sources;
  for (const auto& [name, tools] : lists)
    sources.push_back(catalogue_source{name, name, {&tools, &none, &none, &none}, {}});
  std::vector<server_note> notes;
  for (const auto& [name, tools] : lists) notes.push_back({name, ""});

  profile_config p;
  p.name = "search";
  p.exposure = exposure_mode::search;
  profile_set set;
  set.configure({p});
  catalogue whole;
  naming_rules rules{"__", 64};
  std::vector<std::string> warnings;
  auto t0 = clock_type::now();
  whole.rebuild(sources, rules, warnings);
  auto t1 = clock_type::now();
  set.rebuild(sources, rules, notes, whole);
  auto t2 = clock_type::now();
  set.rebuild(sources, rules, notes, whole);  // nothing changed: fingerprints only
  auto t3 = clock_type::now();

  std::vector<std::string> queries, expected;
  const auto tasks = read_json(tasks_file);
  for (const auto& t : tasks.as_array()) {
    queries.emplace_back(t.at("task").as_string());
    expected.push_back(fmt::format("{}\n__{}", t.at("server").as_string().c_str(),
                                   t.at("tool").as_string().c_str()));
  }
  const auto* view = set.find("search");
  std::vector<double> times;
  std::size_t found = 0, at1 = 0, at5 = 0;
  double mrr = 0;
  for (std::size_t r = 0; r < reps; ++r)
    for (std::size_t i = 0; i < queries.size(); ++i) {
      auto s = clock_type::now();
      auto hits = set.search(*view, queries[i], "", 5);
      times.push_back(ms(clock_type::now() - s));
      found += !hits.empty();
      if (hits.empty() && r == 0 && verbose) fmt::print("  nothing found for: {}\n", queries[i]);
      if (r > 0) continue;
      for (std::size_t k = 0; k < hits.size(); ++k)
        if (is_expected(hits[k].as_object(), expected[i])) {
          at1 += k == 0;
          ++at5;
          mrr += 1.0 / static_cast<double>(k + 1);
          break;
        }
    }
  fmt::print("tool search in process: {} tools of {} servers, {} queries x {}\n", set.indexed(),
             lists.size(), queries.size(), reps);
  fmt::print(
      "  catalogue build {:.1f} ms; profile views + index build {:.1f} ms; resync, unchanged "
      "{:.1f} ms\n",
      ms(t1 - t0), ms(t2 - t1), ms(t3 - t2));
  fmt::print(
      "  search (top 5, items parsed and returned): p50 {:.3f} ms, p90 {:.3f} ms, p99 "
      "{:.3f} ms; {} of {} queries found something\n",
      percentile(times, 0.5), percentile(times, 0.9), percentile(times, 0.99), found, times.size());
  fmt::print(
      "  retrieval (a copy's tool counts as the original): recall@1 {:.3f}, recall@5 {:.3f}, MRR@5 "
      "{:.3f}\n",
      static_cast<double>(at1) / queries.size(), static_cast<double>(at5) / queries.size(),
      mrr / queries.size());
  return 0;
}
