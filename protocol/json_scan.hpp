// A quick check of a message's JSON text on the hot path, without a DOM: it validates the JSON
// it can vouch for cheaply and records where the members of the message object are, and those of
// one object in it (a request's params, a response's result). For anything else it is unsure,
// and the full parser decides (and gives the error): a number with an exponent or of more than 18
// digits before its point, a lone surrogate escape, an escaped key among those it records,
// nesting deeper than 64, more members than it keeps. A key written twice is recorded twice: the
// reader of the members decides what that means.
// What it accepts, Boost.JSON's parser accepts too, with the same values. Sans-io.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace mcpmux {

class json_scan {
 public:
  /// A member of the message object (parent -1), or of the object that is the value of the
  /// message's member `nested` (parent: that member's index).
  struct member {
    std::string_view key;    ///< its key as written, quotes excluded (never escaped)
    std::string_view value;  ///< its value's text
    int parent;
  };
  static constexpr std::size_t capacity = 48;

  /// Scans `text`: true when it is one JSON object (blanks around it) this scan vouches for.
  /// The members of its member `nested`'s value are recorded too, when that is an object.
  bool scan(std::string_view text, std::string_view nested);
  std::size_t size() const { return size_; }
  const member& operator[](std::size_t i) const { return members_[i]; }

  /// How many of the first bytes of `s` a JSON string holds as they are (no quote, backslash,
  /// control or byte beyond ASCII): all of them when it needs no escape.
  static std::size_t plain_prefix(std::string_view s);
  /// `value` as an integer when it is one written plainly (no fraction or exponent).
  static std::optional<std::int64_t> integer(std::string_view value);

 private:
  // Each takes where its value starts and gives where it ended (null: not one it vouches for).
  const char* value(const char* p, int depth, int record_as);
  const char* object(const char* p, int depth, int record_as);
  const char* array(const char* p, int depth);
  int record(std::string_view key, int parent);

  const char* end_ = nullptr;  ///< of the text being scanned
  std::string_view nested_;
  member members_[capacity];
  std::size_t size_ = 0;
};

}  // namespace mcpmux
