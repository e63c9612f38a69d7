// Private to the importer of other MCP clients' JSON configs, whose jobs are spread over
//   import.cpp         the file layouts (mcpServers, projects, VS Code's servers and inputs), name
//                      clashes, the merge into a config.toml
//   import_server.cpp  one server entry into a server_config
// Only config/ includes it.
#pragma once

#include <boost/json.hpp>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"

namespace mcpmux::json_import {

namespace json = boost::json;

std::string sv(json::string_view s);
// "a string", "an object", ... for notes.
std::string_view kind_name(const json::value& v);

// Converts one server entry of a client config. `label` names it in notes.
class server_importer {
 public:
  server_importer(bool vscode, std::vector<std::string>& notes) : vscode_(vscode), notes_(notes) {}

  std::optional<server_config> run(const std::string& name, const json::value& v,
                                   const std::string& label);

 private:
  void note(std::string message);
  void not_for(const std::string& key, std::string_view kind);
  std::optional<std::string> string_value(const std::string& key, const json::value& v,
                                          std::string_view otherwise = "not carried over");
  std::vector<std::string> args(const json::value& v);
  std::map<std::string, std::string> table(const std::string& key, const json::value& v,
                                           bool headers);
  void timeout(const json::value& v, server_config& s);
  void oauth(const json::value& v, server_config& s);
  std::string convert(std::string_view in, const std::string& key);
  static bool is_editor_variable(std::string_view name);

  bool vscode_;
  std::vector<std::string>& notes_;
  std::string label_;
};

}  // namespace mcpmux::json_import
