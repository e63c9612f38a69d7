// Fuzzes tool naming: exposed names are unique, well-formed and within the length cap, every input
// is named once, names that do not collide are kept, and the result depends only on the input set.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/naming.hpp"
#include "tests/fuzz/fuzz_check.hpp"

namespace {

using namespace mcpmux;

using named = std::tuple<std::string, std::string, std::string,
                         std::string>;  // server, prefix, tool, exposed

bool allowed(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

// The name an input wants when nothing competes, computed from the public helpers.
std::string desired(const naming_input& in, const naming_rules& rules) {
  std::string name = in.prefix.empty() ? in.original : in.prefix + rules.separator + in.original;
  name = sanitize_tool_name(name);
  if (name.empty()) name = "_";
  return shorten_tool_name(name, in.server + "/" + in.original, rules.max_len);
}

std::vector<named> check(const std::vector<naming_input>& inputs, const naming_rules& rules) {
  std::vector<naming_collision> collisions;
  const auto out = assign_tool_names(inputs, rules, &collisions);
  const std::size_t limit = std::max(rules.max_len, min_tool_name_len);
  FUZZ_CHECK(out.size() == inputs.size(), "%zu outputs for %zu inputs", out.size(), inputs.size());
  std::vector<bool> seen(inputs.size());
  std::set<std::string> names;
  for (std::size_t k = 0; k < out.size(); ++k) {
    const auto& o = out[k];
    FUZZ_CHECK(o.index < inputs.size() && !seen[o.index], "index %zu missing or repeated", o.index);
    seen[o.index] = true;
    FUZZ_CHECK(!o.exposed.empty() && o.exposed.size() <= limit,
               "name \"%s\" of %zu chars, limit %zu", o.exposed.c_str(), o.exposed.size(), limit);
    FUZZ_CHECK(std::all_of(o.exposed.begin(), o.exposed.end(), allowed), "bad character in \"%s\"",
               o.exposed.c_str());
    FUZZ_CHECK(names.insert(o.exposed).second, "name \"%s\" given twice", o.exposed.c_str());
    if (k > 0) FUZZ_CHECK(out[k - 1].exposed < o.exposed, "output not sorted by name");
  }
  // Every distinct wanted name is held, by the first input in (server, original, prefix) order.
  std::vector<std::size_t> order(inputs.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::tie(inputs[a].server, inputs[a].original, inputs[a].prefix) <
           std::tie(inputs[b].server, inputs[b].original, inputs[b].prefix);
  });
  std::vector<std::string> by_index(inputs.size());
  for (const auto& o : out) by_index[o.index] = o.exposed;
  std::set<std::string> claimed;
  for (std::size_t i : order) {
    const std::string want = desired(inputs[i], rules);
    if (claimed.insert(want).second)
      FUZZ_CHECK(by_index[i] == want, "input %zu (%s/%s) got \"%s\", wanted the free name \"%s\"",
                 i, inputs[i].server.c_str(), inputs[i].original.c_str(), by_index[i].c_str(),
                 want.c_str());
  }
  for (const auto& c : collisions)
    FUZZ_CHECK(names.count(c.renamed) == 1 && names.count(c.exposed) == 1,
               "collision names unknown names");
  FUZZ_CHECK(collisions.size() == inputs.size() - claimed.size(),
             "%zu collisions for %zu renamed inputs", collisions.size(),
             inputs.size() - claimed.size());

  std::vector<named> result;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    result.emplace_back(inputs[i].server, inputs[i].prefix, inputs[i].original, by_index[i]);
  std::sort(result.begin(), result.end());
  return result;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider fdp(data, size);
  naming_rules rules;
  rules.max_len = fdp.ConsumeIntegralInRange<std::size_t>(0, 72);
  if (fdp.ConsumeBool()) rules.separator = fdp.ConsumeRandomLengthString(4);
  // A small pool of strings makes equal servers, prefixes and tools (and so collisions) common.
  std::vector<std::string> pool;
  auto pick = [&](std::size_t max_len) {
    if (!pool.empty() && fdp.ConsumeBool())
      return pool[fdp.ConsumeIntegralInRange<std::size_t>(0, pool.size() - 1)];
    pool.push_back(fdp.ConsumeRandomLengthString(max_len));
    return pool.back();
  };
  std::vector<naming_input> inputs;
  const std::size_t n = fdp.ConsumeIntegralInRange<std::size_t>(0, 48);
  for (std::size_t i = 0; i < n && fdp.remaining_bytes() > 0; ++i) {
    naming_input in;
    in.server = pick(12);
    in.prefix = fdp.ConsumeBool() ? in.server : pick(12);
    in.original = pick(96);
    inputs.push_back(std::move(in));
  }

  const auto forward = check(inputs, rules);
  const auto again = check(inputs, rules);
  FUZZ_CHECK(forward == again, "two runs differ");
  std::reverse(inputs.begin(), inputs.end());
  const auto reversed = check(inputs, rules);
  FUZZ_CHECK(forward == reversed, "naming depends on the input order");
  return 0;
}
