// The conventions every argv parser of mcpmux follows (mcpmux, mcpmux import, mcpmuxd), on
// CLI11: help opens with a hand-written synopsis; --help and --version print on stdout and exit
// 0; a usage error prints "PROGRAM: message", the synopsis and a hint on stderr and exits 2.
// Header-only: the unit tests compile daemon/mcpmux_import.cpp without the rest of the CLI.
#pragma once

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mcpmux::cli {

/// Help laid out as "Usage: SYNOPSIS", the description, the details, the arguments, the options,
/// the subcommands (each with its synopsis) and the footer.
class help_formatter : public CLI::Formatter {
 public:
  help_formatter(std::string synopsis, std::string details)
      : synopsis_(std::move(synopsis)), details_(std::move(details)) {
    column_width(26);
    label("Positionals", "Arguments");
  }

  /// The whole usage line without "Usage: ", e.g. "mcpmux logs SERVER [-n N] [-f]".
  const std::string& synopsis() const { return synopsis_; }

  std::string make_usage(const CLI::App*, std::string) const override {
    return "Usage: " + synopsis_ + "\n";
  }

  std::string make_help(const CLI::App* app, std::string name,
                        CLI::AppFormatMode mode) const override {
    if (mode == CLI::AppFormatMode::Sub) return make_expanded(app);
    std::string out = make_usage(app, name);
    if (std::string d = app->get_description(); !d.empty()) {
      // A command's one-line summary, as a sentence.
      d[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(d[0])));
      out += "\n" + d + (d.back() == '.' ? "\n" : ".\n");
    }
    if (!details_.empty()) out += "\n" + details_;
    out += make_positionals(app);
    out += make_groups(app, mode);
    out += make_subcommands(app, mode);
    if (std::string f = make_footer(app); !f.empty()) out += "\n" + f;
    return out;
  }

  // A subcommand is listed by its synopsis (without the words before its name).
  std::string make_subcommand(const CLI::App* sub) const override {
    std::string name = sub->get_name();
    if (auto f = std::dynamic_pointer_cast<help_formatter>(sub->get_formatter())) {
      const std::size_t at = f->synopsis().find(" " + name);
      if (at != std::string::npos) name = f->synopsis().substr(at + 1);
    }
    std::string line = "  " + name;
    if (line.size() + 1 > subcommand_width)  // too long: the summary goes on the next line
      return line + "\n" + std::string(subcommand_width, ' ') + sub->get_description() + "\n";
    line.resize(subcommand_width, ' ');
    return line + sub->get_description() + "\n";
  }

  // After an option's name only its value's name ("--socket PATH"), no "TEXT", "REQUIRED" or
  // "Needs:" (the text says it); after an argument's name nothing.
  std::string make_option_opts(const CLI::Option* opt) const override {
    if (opt->get_positional() || opt->get_type_size() == 0) return "";
    return " " + opt->get_type_name();
  }

 private:
  static constexpr std::size_t subcommand_width = 36;
  std::string synopsis_;
  std::string details_;
};

/// Sets the conventions on `app`, before its options are added (subcommands inherit them): its
/// synopsis and details for help and usage errors, a value given twice means the last one, and
/// a flag takes no value (`--json=x` is an error, as is `--json=false`).
inline void use_conventions(CLI::App& app, std::string synopsis, std::string details = {}) {
  app.formatter(std::make_shared<help_formatter>(std::move(synopsis), std::move(details)));
  app.option_defaults()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->disable_flag_override();
  app.set_help_flag("-h,--help", "show this help and exit");
}

/// Refuses an empty value, naming what it should be ("a path").
inline CLI::Validator non_empty(std::string what) {
  return CLI::Validator(
      [what](std::string& value) { return value.empty() ? "needs " + what + ", not ''" : ""; }, "");
}

/// The subcommand the command line selected last (`app` itself when none).
inline const CLI::App& selected(const CLI::App& app) {
  const CLI::App* at = &app;
  for (auto subs = at->get_subcommands(); !subs.empty(); subs = at->get_subcommands())
    at = subs.front();
  return *at;
}

/// The words of the command line that select `app`, e.g. "mcpmux logs".
inline std::string command_path(const CLI::App& app) {
  std::string out = app.get_name();
  for (const CLI::App* p = app.get_parent(); p != nullptr; p = p->get_parent())
    out = p->get_name() + " " + out;
  return out;
}

/// CLI11's message for a usage error, in plainer words where CLI11's are obscure.
inline std::string usage_message(const CLI::ParseError& e, const CLI::App& app) {
  const std::string what = e.what();
  const bool extras = dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr;
  const bool required = dynamic_cast<const CLI::RequiredError*>(&e) != nullptr;
  if (const auto left = app.remaining(true); !left.empty() && (extras || required)) {
    const std::string& word = left.front();
    if (word.size() > 1 && word[0] == '-') return "unknown option '" + word + "'";
    if (&selected(app) == &app && !app.get_subcommands({}).empty())
      return "unknown command '" + word + "'";
    return "unexpected argument '" + word + "'";
  }
  if (required && &selected(app) == &app && !app.get_subcommands({}).empty())
    return "no command given";
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr) {
    constexpr std::string_view override_text = " was given a disallowed flag override";
    if (what.ends_with(" missing") && what.find(':') != std::string::npos)
      return "option '" + what.substr(0, what.find(':')) + "' needs a value";
    if (what.ends_with(override_text)) {
      const std::string name = what.substr(0, what.size() - override_text.size());
      return "option '" + std::string(name.size() > 1 ? "--" : "-") + name + "' takes no value";
    }
  }
  return what;
}

/// Parses `args` (without the program's name). Returns nullopt when the program should go on,
/// else the exit status it should end with: 0 after help or the version was printed, 2 after a
/// usage error was reported as "PROGRAM: message" on stderr.
inline std::optional<int> parse_command_line(CLI::App& app, std::vector<std::string> args) {
  // CLI11 2.1 reads `--name=` as `--name` and then takes the next word as its value; what was
  // written is an empty value.
  for (auto it = args.begin(); it != args.end() && *it != "--"; ++it) {
    if (it->size() > 3 && it->starts_with("--") && it->ends_with('=')) {
      it->pop_back();
      it = args.insert(it + 1, std::string());
    }
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes them last first
  try {
    app.parse(args);
    return std::nullopt;
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    std::fputs(app.help("", CLI::AppFormatMode::All).c_str(), stdout);
    return 0;
  } catch (const CLI::CallForVersion& e) {
    std::printf("%s\n", e.what());
    return 0;
  } catch (const CLI::ParseError& e) {
    const CLI::App& where = selected(app);
    std::string text = app.get_name() + ": " + usage_message(e, app) + "\n";
    if (auto f = std::dynamic_pointer_cast<help_formatter>(where.get_formatter()))
      text += "usage: " + f->synopsis() + "\n";
    text += "Try '" + command_path(where) + " --help'.\n";
    std::fputs(text.c_str(), stderr);
    return 2;
  }
}

}  // namespace mcpmux::cli
