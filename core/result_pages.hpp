// Big results paged (`max_result_bytes`): where a result's text is cut, the note that says how
// to read on, the store of cut texts read back page by page (mcpmux__read_result), and the stage
// that cuts a tools/call or resources/read result. Pure but for the handles' randomness: time
// is passed in.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/clock.hpp"
#include "protocol/json_rpc.hpp"
#include "protocol/result.hpp"

namespace mcpmux {

/// The end of the page of `text` that starts at `from` (a character boundary) and holds at most
/// `cap` bytes: `text.size()` when the rest fits; else a UTF-8 character boundary, just after
/// the last newline in the page's last tenth when there is one. May equal `from` when `cap` is
/// smaller than the character there (read_page then takes that one character).
std::size_t page_end(std::string_view text, std::size_t from, std::size_t cap);

/// What every note after a cut page begins with: a reader finds the page's own text before it.
inline constexpr std::string_view note_start = "\n\n[mcpmux: ";

/// The store of cut texts: each under a random handle, readable only by the owner it was kept
/// for, bounded in bytes and count (the least recently read go first) and in age.
class result_store {
 public:
  using clock = mcpmux::steady_clock;
  struct limits {
    std::size_t max_bytes = std::size_t{64} << 20;  ///< all texts kept; beyond, the oldest go
    std::size_t max_handles = 4096;                 ///< texts kept at once
    /// A text is dropped this long after it was kept or last read.
    std::chrono::milliseconds ttl = std::chrono::minutes(10);
  };
  result_store() = default;
  explicit result_store(limits l) : limits_(l) {}

  /// One page read from a kept text.
  struct page {
    std::string text;        ///< the page (no note)
    std::size_t offset = 0;  ///< where it starts (a character boundary at or before the asked one)
    std::size_t next = 0;    ///< where the next page starts (== size: the end)
    std::size_t size = 0;    ///< the whole text's
  };

  /// Keeps `text` for `owner`, read in pages of `page_bytes`; its handle. An error when the text
  /// alone is more than the store holds.
  result<std::string> keep(std::string owner, std::string text, std::size_t page_bytes,
                           clock::time_point now);
  /// The page of `handle`'s text from `offset`, for `owner`; an error a person can act on when
  /// the handle is unknown, another owner's, expired or evicted, or `offset` is past the end.
  result<page> read(std::string_view handle, std::string_view owner, std::size_t offset,
                    clock::time_point now);
  /// True once a text was kept for `owner` (it is offered mcpmux__read_result from then on).
  bool has_cut(std::string_view owner) const { return owners_.count(owner) > 0; }
  /// `owner` is gone (its session ended): its texts are dropped.
  void forget(std::string_view owner);

  std::size_t bytes() const { return bytes_; }
  std::size_t handles() const { return kept_.size(); }
  std::chrono::milliseconds ttl() const { return limits_.ttl; }
  std::size_t max_bytes() const { return limits_.max_bytes; }

 private:
  struct entry {
    std::string owner;
    std::string text;
    std::size_t page_bytes = 0;
    clock::time_point expires;
  };
  /// Why a handle no longer reads: remembered (bounded) so that the error says so.
  enum class gone_reason { expired, evicted };
  struct tombstone {
    std::string owner;
    gone_reason why;
  };
  void sweep(clock::time_point now);
  void drop(std::unordered_map<std::string, entry>::iterator it, gone_reason why);

  limits limits_;
  std::unordered_map<std::string, entry> kept_;
  std::size_t bytes_ = 0;
  std::unordered_map<std::string, tombstone> gone_;
  std::deque<std::string> gone_order_;  ///< oldest first, at most max_handles
  std::set<std::string, std::less<>> owners_;
};

/// What cutting one result needs to know.
struct page_rules {
  std::size_t cap = 0;    ///< max_result_bytes (> 0)
  std::string read_tool;  ///< the reading tool's name (mcpmux__read_result)
  std::string what;       ///< what answered, for messages: `tool "github__x"`, `resource "…"`
  bool output_schema = false;  ///< the tool declares one: its structuredContent is never cut
};

/// What cut_result did.
enum class cut_outcome {
  unchanged,  ///< within the cap
  cut,        ///< text cut and the rest kept (or too large to keep: the note says so)
  refused,    ///< a tool's structured content above the cap: the result is now a tool error
};

/// Cuts a tools/call result's text (content[].text and embedded resources' text) or a
/// resources/read result's (contents[].text) to `rules.cap` bytes, keeping the rest in `store`
/// for `owner`: the item the cap falls in is cut (page_end) and followed by a note naming the
/// handle and the next offset; later items with text are removed, their text kept after the cut
/// one's, each after a blank line. A structuredContent above the cap is dropped when the tool
/// declares no outputSchema (its text copy is paged) and refuses the result when it does. An
/// error (the answer instead) for a resource's blob above the cap.
result<cut_outcome> cut_result(json::object& result, const page_rules& rules, result_store& store,
                               const std::string& owner, steady_clock::time_point now);

/// The answer of `read_tool {handle, offset}` for `owner`: the page, with a note when more is
/// left; a tool error (isError) saying what is wrong with the arguments or the handle.
json::object read_result_answer(const json::object& arguments, std::string_view read_tool,
                                result_store& store, std::string_view owner,
                                steady_clock::time_point now);

/// mcpmux__read_result's definition in a tools list.
json::object read_result_tool(std::string_view name);

}  // namespace mcpmux
