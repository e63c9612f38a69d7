// TypeScript declarations of tools, for a model that writes code-mode programs (issue 47): the
// `tools` object such a program calls, each tool's arguments and result typed from its JSON
// Schemas and documented by its description. Pure and bounded (depth, description and total
// size), since every schema and description comes from a server.
#pragma once

#include <cstddef>
#include <span>
#include <string>

namespace boost::json {
class value;
}

namespace mcpmux::mcp {

/// One tool as a profile offers it.
struct declared_tool {
  std::string exposed;      ///< the name clients see: "github__search_issues"
  std::string server;       ///< the server's name in that name ("github")
  std::string tool;         ///< the server's own name for it ("search_issues")
  std::string description;  ///< "" for none
  const boost::json::value* input_schema = nullptr;   ///< null: no arguments known
  const boost::json::value* output_schema = nullptr;  ///< null: the result is its text
};

/// How much of the servers' words the declarations may hold.
struct declaration_limits {
  std::size_t depth = 6;           ///< nesting of a schema; deeper is `unknown`
  std::size_t description = 1000;  ///< bytes of one description (a doc comment)
  std::size_t total = 64 * 1024;   ///< bytes of the whole; later tools named in a comment only
};

/// `interface Tools { server: { tool(args: {…}): Promise<…>; … }; … }` and `declare const
/// tools: Tools & { "server__tool": Tools["server"]["tool"]; … }`: both ways a program may call
/// a tool. A schema construct with no TypeScript counterpart here becomes `unknown`.
std::string typescript_declarations(std::span<const declared_tool> tools,
                                    const declaration_limits& limits = {});

}  // namespace mcpmux::mcp
