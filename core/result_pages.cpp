#include "core/result_pages.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json/serialize.hpp>
#include <cerrno>
#include <system_error>
#include <utility>
#include <vector>

#include "base/random.hpp"
#include "core/tool_error.hpp"

namespace mcpmux {
namespace {

bool continuation(char c) {
  return (static_cast<unsigned char>(c) & 0xC0) == 0x80;
}

// The start of the character `offset` falls in (the offset itself on a boundary).
std::size_t char_start(std::string_view text, std::size_t offset) {
  while (offset > 0 && offset < text.size() && continuation(text[offset])) --offset;
  return offset;
}

std::string new_handle() {
  auto id = random_hex(16);  // 128 bits: a handle cannot be guessed, only given
  if (!id) throw std::system_error(errno, std::generic_category(), "getrandom");
  return "r-" + *id;
}

std::string minutes(std::chrono::milliseconds d) {
  const auto m = std::chrono::duration_cast<std::chrono::minutes>(d).count();
  return m >= 1 ? std::to_string(m) + (m == 1 ? " minute" : " minutes")
                : std::to_string(d.count()) + " ms";
}

std::string more_note(std::string_view tool, std::string_view handle, std::size_t next,
                      std::size_t left) {
  return fmt::format(
      "{}{} more bytes of this result; read them with {} {{\"handle\": \"{}\", \"offset\": {}}}]",
      note_start, left, tool, handle, next);
}

// One text of a result, in order: where it lives and the item that holds it.
struct text_slot {
  json::string* text;
  std::size_t item;       // index in the result's content / contents array
  bool own_item = false;  // a text item (the note joins it), not an embedded resource's text
};

}  // namespace

std::size_t page_end(std::string_view text, std::size_t from, std::size_t cap) {
  if (from >= text.size() || text.size() - from <= cap) return text.size();
  std::size_t end = char_start(text, from + cap);
  // A line's end in the page's last tenth makes a cleaner break than a character's.
  const std::size_t lowest = from + cap - cap / 10;
  if (end > from) {
    const auto nl = text.rfind('\n', end - 1);
    if (nl != std::string_view::npos && nl >= lowest && nl >= from) return nl + 1;
  }
  return end;
}

// ---- the store ----

result<std::string> result_store::keep(std::string owner, std::string text, std::size_t page_bytes,
                                       clock::time_point now) {
  sweep(now);
  owners_.insert(owner);
  if (text.size() > limits_.max_bytes)
    return failure(fmt::format("the result is more than mcpmux keeps for reading ({} bytes)",
                               limits_.max_bytes));
  // The least recently read give way, by bytes and by count.
  while (!kept_.empty() &&
         (bytes_ + text.size() > limits_.max_bytes || kept_.size() >= limits_.max_handles)) {
    auto oldest = std::min_element(kept_.begin(), kept_.end(), [](const auto& a, const auto& b) {
      return a.second.expires < b.second.expires;
    });
    drop(oldest, gone_reason::evicted);
  }
  auto handle = new_handle();
  bytes_ += text.size();
  kept_[handle] = entry{std::move(owner), std::move(text), page_bytes, now + limits_.ttl};
  return handle;
}

result<result_store::page> result_store::read(std::string_view handle, std::string_view owner,
                                              std::size_t offset, clock::time_point now) {
  sweep(now);
  const std::string key(handle);
  auto it = kept_.find(key);
  if (it == kept_.end()) {
    const auto g = gone_.find(key);
    if (g == gone_.end()) return failure(fmt::format("Unknown handle \"{}\"", handle));
    if (g->second.owner != owner)
      return failure(fmt::format(
          "Handle \"{}\" belongs to another session; a cut result is read only by the session "
          "that got it",
          handle));
    if (g->second.why == gone_reason::expired)
      return failure(fmt::format(
          "Handle \"{}\" expired: the rest of a cut result is kept {} after it was last read; "
          "call the tool again",
          handle, minutes(limits_.ttl)));
    return failure(fmt::format(
        "Handle \"{}\" was dropped to make room for newer cut results (mcpmux keeps {} bytes of "
        "them); call the tool again",
        handle, limits_.max_bytes));
  }
  auto& e = it->second;
  if (e.owner != owner)
    return failure(fmt::format(
        "Handle \"{}\" belongs to another session; a cut result is read only by the session that "
        "got it",
        handle));
  if (offset >= e.text.size())
    return failure(
        fmt::format("offset {} is past the end of the result ({} bytes)", offset, e.text.size()));
  e.expires = now + limits_.ttl;  // a result being read stays while it is read
  page p;
  p.offset = char_start(e.text, offset);
  p.next = page_end(e.text, p.offset, e.page_bytes);
  if (p.next == p.offset) p.next = page_end(e.text, p.offset, 4);  // at least one character
  p.size = e.text.size();
  p.text = e.text.substr(p.offset, p.next - p.offset);
  return p;
}

void result_store::forget(std::string_view owner) {
  owners_.erase(std::string(owner));
  for (auto it = kept_.begin(); it != kept_.end();) {
    if (it->second.owner == owner) {
      bytes_ -= it->second.text.size();
      it = kept_.erase(it);
    } else {
      ++it;
    }
  }
}

void result_store::sweep(clock::time_point now) {
  for (auto it = kept_.begin(); it != kept_.end();) {
    auto next = std::next(it);
    if (it->second.expires <= now) drop(it, gone_reason::expired);
    it = next;
  }
}

void result_store::drop(std::unordered_map<std::string, entry>::iterator it, gone_reason why) {
  bytes_ -= it->second.text.size();
  gone_[it->first] = tombstone{std::move(it->second.owner), why};
  gone_order_.push_back(it->first);
  while (gone_order_.size() > limits_.max_handles) {
    gone_.erase(gone_order_.front());
    gone_order_.pop_front();
  }
  kept_.erase(it);
}

// ---- the stage ----

result<cut_outcome> cut_result(json::object& result, const page_rules& rules, result_store& store,
                               const std::string& owner, steady_clock::time_point now) {
  const bool tool = !result.contains("contents");
  auto* items_v = result.if_contains(tool ? "content" : "contents");
  auto* items = items_v ? items_v->if_array() : nullptr;

  if (auto* sc = result.if_contains("structuredContent")) {
    const auto bytes = json::serialize(*sc).size();
    if (bytes > rules.cap) {
      if (rules.output_schema) {
        result = tool_error(fmt::format(
            "The result of {} is {} bytes of structured content, above max_result_bytes ({}); "
            "structured content is never cut (it must match the tool's outputSchema): ask for "
            "less, or raise max_result_bytes for this server or profile",
            rules.what, bytes, rules.cap));
        return cut_outcome::refused;
      }
      result.erase("structuredContent");  // no schema: its text copy in content is paged
    }
  }

  std::vector<text_slot> slots;
  std::size_t total = 0;
  if (items)
    for (std::size_t i = 0; i < items->size(); ++i) {
      auto* item = (*items)[i].if_object();
      if (!item) continue;
      json::object* holder = item;
      bool own = false;
      if (tool) {
        const auto* type = item->if_contains("type");
        const bool is_text = type && type->is_string() && type->get_string() == "text";
        const bool is_resource = type && type->is_string() && type->get_string() == "resource";
        if (is_resource) {
          auto* r = item->if_contains("resource");
          holder = r ? r->if_object() : nullptr;
        } else if (!is_text) {
          continue;
        }
        own = is_text;
      } else if (const auto* blob = item->if_contains("blob"); blob && blob->is_string()) {
        // Base64 has no clean place to cut, and a half is no use to anyone.
        if (blob->get_string().size() > rules.cap)
          return failure(fmt::format("The contents of {} are a blob of {} bytes, above "
                                     "max_result_bytes ({}); raise max_result_bytes for this "
                                     "server or profile to read it",
                                     rules.what, blob->get_string().size(), rules.cap),
                         rpc_code::invalid_request);
      }
      auto* t = holder ? holder->if_contains("text") : nullptr;
      if (!t || !t->is_string()) continue;
      slots.push_back({&t->get_string(), i, own});
      total += t->get_string().size();
    }
  if (total <= rules.cap) return cut_outcome::unchanged;

  // The item the cap falls in is cut; its text and every later one are kept to be read on.
  std::size_t budget = rules.cap, k = 0;
  while (slots[k].text->size() <= budget) budget -= slots[k++].text->size();
  std::string rest(slots[k].text->data(), slots[k].text->size());
  for (std::size_t j = k + 1; j < slots.size(); ++j) {
    rest += "\n\n";
    rest.append(slots[j].text->data(), slots[j].text->size());
  }
  const auto end = page_end(rest, 0, budget);
  const auto left = rest.size() - end;
  const auto cut_item = slots[k].item;
  const bool own = slots[k].own_item;
  std::vector<std::size_t> later;
  for (std::size_t j = k + 1; j < slots.size(); ++j) later.push_back(slots[j].item);
  *slots[k].text = json::string(std::string_view(rest).substr(0, end));

  std::string note;
  if (auto handle = store.keep(owner, std::move(rest), rules.cap, now))
    note = more_note(rules.read_tool, *handle, end, left);
  else
    note = fmt::format("{}{} more bytes of this result were cut (max_result_bytes = {}): {}]",
                       note_start, left, rules.cap, handle.error().message);
  // Later items are gone from the end first, so that the indexes still hold.
  for (auto it = later.rbegin(); it != later.rend(); ++it)
    items->erase(items->begin() + static_cast<std::ptrdiff_t>(*it));
  if (own || !tool) {
    auto& s = (*items)[cut_item].as_object()["text"].as_string();
    s.append(note);
  } else {  // an embedded resource's text stays the resource's: the note is an item of its own
    items->insert(items->begin() + static_cast<std::ptrdiff_t>(cut_item + 1),
                  json::object{{"type", "text"}, {"text", note.substr(2)}});
  }
  return cut_outcome::cut;
}

json::object read_result_answer(const json::object& arguments, std::string_view read_tool,
                                result_store& store, std::string_view owner,
                                steady_clock::time_point now) {
  const auto* h = arguments.if_contains("handle");
  if (!h || !h->is_string() || h->get_string().empty())
    return tool_error(fmt::format(
        "{} needs the \"handle\" the note at the end of a cut result gives", read_tool));
  std::size_t offset = 0;
  if (const auto* o = arguments.if_contains("offset")) {
    if (o->is_uint64())
      offset = static_cast<std::size_t>(o->get_uint64());
    else if (o->is_int64() && o->get_int64() >= 0)
      offset = static_cast<std::size_t>(o->get_int64());
    else
      return tool_error("\"offset\" must be a non-negative integer (the note gives it)");
  }
  auto p = store.read(h->get_string(), owner, offset, now);
  if (!p) return tool_error(std::move(p.error().message));
  std::string text = std::move(p->text);
  if (p->next < p->size) text += more_note(read_tool, h->get_string(), p->next, p->size - p->next);
  return json::object{
      {"content", json::array{json::object{{"type", "text"}, {"text", std::move(text)}}}}};
}

json::object read_result_tool(std::string_view name) {
  return json::object{
      {"name", name},
      {"description",
       "Reads more of a result that mcpmux cut because it was longer than max_result_bytes: "
       "the text from \"offset\" of the result \"handle\" names. The note at the end of a cut "
       "text gives both; each page's note gives the next offset."},
      {"inputSchema",
       json::object{{"type", "object"},
                    {"properties",
                     json::object{{"handle", json::object{{"type", "string"}}},
                                  {"offset", json::object{{"type", "integer"}, {"minimum", 0}}}}},
                    {"required", json::array{"handle", "offset"}}}},
      {"annotations", json::object{{"readOnlyHint", true}, {"openWorldHint", false}}}};
}

}  // namespace mcpmux
