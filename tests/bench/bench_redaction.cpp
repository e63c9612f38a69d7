// The result redaction's false positives and cost (protocol/result_redaction), over a corpus of
// ordinary texts and code: every text file under the given paths (default: this repository's
// sources and docs, and /usr/share/doc). Prints matches per MB by kind for `patterns` mode, and
// the ms per MB of `patterns` and of `known` with 20 known secrets. --show lists each match's
// file and kind with a clipped context, to judge whether it is a false positive.
//
//   bench_redaction [--show] [--max-mb N] [path…]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "protocol/result_redaction.hpp"

namespace fs = std::filesystem;
using namespace mcpmux::mcp;

namespace {

constexpr std::uintmax_t max_file_bytes = 4 << 20;

struct corpus_file {
  std::string path, text;
};

bool is_text(const std::string& s) {
  return s.find('\0', 0) == std::string::npos;
}

void add_file(const fs::path& p, std::vector<corpus_file>& out, std::size_t& total,
              std::size_t cap) {
  std::error_code ec;
  if (total >= cap || !fs::is_regular_file(p, ec)) return;
  const auto size = fs::file_size(p, ec);
  if (ec || size == 0 || size > max_file_bytes) return;
  std::ifstream in(p, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!is_text(text)) return;
  total += text.size();
  out.push_back({p.string(), std::move(text)});
}

std::vector<corpus_file> load(const std::vector<std::string>& roots, std::size_t cap) {
  std::vector<corpus_file> files;
  std::size_t total = 0;
  for (const auto& root : roots) {
    std::error_code ec;
    if (fs::is_regular_file(root, ec)) {
      add_file(root, files, total, cap);
      continue;
    }
    for (fs::recursive_directory_iterator
             it(root, fs::directory_options::skip_permission_denied, ec),
         end;
         it != end && total < cap; it.increment(ec)) {
      if (ec) break;
      const auto name = it->path().filename().string();
      if (it->is_directory(ec) && (name == ".git" || name == "build" || name.starts_with("build-")))
        it.disable_recursion_pending();
      else
        add_file(it->path(), files, total, cap);
    }
  }
  return files;
}

std::vector<std::string> random_secrets(std::size_t n) {
  std::mt19937 rng(46);
  const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::vector<std::string> out;
  for (std::size_t i = 0; i < n; ++i) {
    std::string s;
    for (int j = 0; j < 24 + static_cast<int>(i % 16); ++j) s += alphabet[rng() % alphabet.size()];
    out.push_back(s);
  }
  return out;
}

// Milliseconds per MB of one detector over the corpus (best of three runs), and its counts.
double ms_per_mb(const secret_detector& d, const std::vector<corpus_file>& files, std::size_t bytes,
                 redaction_counts& counts) {
  double best = 1e300;
  for (int round = 0; round < 3; ++round) {
    redaction_counts c;
    std::string out;
    const auto t0 = std::chrono::steady_clock::now();
    for (const auto& f : files) c += d.redact(f.text, out);
    const std::chrono::duration<double, std::milli> ms = std::chrono::steady_clock::now() - t0;
    best = std::min(best, ms.count());
    counts = c;
  }
  return best / (static_cast<double>(bytes) / (1 << 20));
}

// Where each match of `patterns` is, for a person to judge: the file, the kind and the redacted
// line around it.
void show(const secret_detector& d, const std::vector<corpus_file>& files) {
  for (const auto& f : files) {
    std::string out;
    if (d.redact(f.text, out).empty()) continue;
    for (std::size_t at = out.find("[redacted: "); at != std::string::npos;
         at = out.find("[redacted: ", at + 1)) {
      const auto line_start = out.rfind('\n', at);
      const auto from = line_start == std::string::npos ? 0 : line_start + 1;
      const auto begin = std::max(from, at >= 60 ? at - 60 : 0);
      std::printf("%s: %s\n", f.path.c_str(), out.substr(begin, at - begin + 40).c_str());
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool verbose = false;
  std::size_t max_mb = 64;
  std::vector<std::string> roots;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--show")
      verbose = true;
    else if (a == "--max-mb" && i + 1 < argc)
      max_mb = std::stoul(argv[++i]);
    else
      roots.push_back(a);
  }
  if (roots.empty()) roots = {MCPMUX_SOURCE_DIR, "/usr/share/doc"};

  const auto files = load(roots, max_mb << 20);
  std::size_t bytes = 0;
  for (const auto& f : files) bytes += f.text.size();
  const double mb = static_cast<double>(bytes) / (1 << 20);
  std::printf("corpus: %zu files, %.1f MB\n", files.size(), mb);

  const secret_detector patterns(redaction_mode::patterns, {});
  const secret_detector known(redaction_mode::known, random_secrets(20));
  const secret_detector both(redaction_mode::patterns, random_secrets(20));
  redaction_counts found, found_known, found_both;
  const double patterns_ms = ms_per_mb(patterns, files, bytes, found);
  const double known_ms = ms_per_mb(known, files, bytes, found_known);
  const double both_ms = ms_per_mb(both, files, bytes, found_both);

  std::printf("patterns: %llu matches, %.2f per MB\n",
              static_cast<unsigned long long>(found.total()), found.total() / mb);
  for (std::size_t k = 0; k < secret_kind_count; ++k)
    if (found.by_kind[k])
      std::printf("  %-15s %6u  %.3f per MB\n",
                  std::string(kind_name(static_cast<secret_kind>(k))).c_str(), found.by_kind[k],
                  found.by_kind[k] / mb);
  std::printf("known (20 secrets): %llu matches\n",
              static_cast<unsigned long long>(found_known.total()));
  std::printf("cost: patterns %.2f ms/MB, known %.2f ms/MB, patterns+20 known %.2f ms/MB\n",
              patterns_ms, known_ms, both_ms);
  if (verbose) show(patterns, files);
}
