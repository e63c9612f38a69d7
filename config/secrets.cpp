#include "config/secrets.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <boost/json.hpp>
#include <cerrno>
#include <cstring>

#include "base/files.hpp"
#include "config/credentials.hpp"
#include "config/paths.hpp"
#include "config/secret_service.hpp"

namespace mcpmux {
namespace json = boost::json;

constexpr std::size_t max_secrets_bytes = 1u << 20;

std::string secrets_path() {
  if (auto p = getenv_nonempty("MCPMUX_SECRETS_FILE")) return expand_tilde(*p);
  return xdg_dir("XDG_CONFIG_HOME", ".config") + "/mcpmux/secrets.json";
}

bool is_secret_name(std::string_view name) {
  if (name.empty() || name.size() > 128) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-'))
      return false;
  return true;
}

secrets_file read_secrets(const std::string& path) {
  secrets_file out;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) out.error = fmt::format("{}: {}", path, std::strerror(errno));
    return out;
  }
  if ((st.st_mode & 077) != 0 || st.st_uid != ::getuid()) {
    out.error = fmt::format(
        "{} is readable by others (mode {:04o}); its secrets are not used until it is private: "
        "chmod 600 {}",
        path, st.st_mode & 07777, path);
    if (st.st_uid != ::getuid())
      out.error = fmt::format("{} belongs to another user; its secrets are not used", path);
    return out;
  }
  auto text = read_text_file(path, max_secrets_bytes);
  if (!text) {
    out.error = std::move(text.error().message);
    return out;
  }
  boost::system::error_code ec;
  auto v = json::parse(*text, ec);
  if (ec || !v.is_object()) {
    out.error = fmt::format("{}: not a JSON object of secret names and values", path);
    return out;
  }
  for (const auto& [k, x] : v.get_object()) {
    if (!x.is_string() || !is_secret_name(k)) {
      out.error = fmt::format("{}: \"{}\" is not a secret name with a string value", path,
                              std::string_view(k).substr(0, 64));
      out.values.clear();
      return out;
    }
    out.values.emplace(std::string(k), std::string(x.get_string()));
  }
  return out;
}

result<> write_secrets(const std::string& path, const std::map<std::string, std::string>& values) {
  json::object o;
  for (const auto& [k, v] : values) o[k] = v;
  // A new file is created 0600; an old one keeps its mode, so it is made 0600 first.
  if (::chmod(path.c_str(), 0600) != 0 && errno != ENOENT)
    return failure(fmt::format("{}: {}", path, std::strerror(errno)));
  return write_file_atomically(path, json::serialize(o) + "\n");
}

kept_secrets keep_secrets(const std::map<std::string, std::string>& values) {
  kept_secrets out;
  if (secret_service_wanted()) {
    for (const auto& [name, value] : values) {
      const auto r = secret_service_store(name, value);
      if (!r.available) {
        out.unavailable = r.error;
        break;
      }
      if (!r.error.empty()) {
        out.error = r.error;
        return out;
      }
    }
    if (out.unavailable.empty()) {
      out.where = "the Secret Service";
      return out;
    }
  }
  out.where = secrets_path();
  auto file = read_secrets(out.where);
  if (!file.error.empty()) {
    out.error = file.error;
    return out;
  }
  for (const auto& [name, value] : values) file.values[name] = value;
  if (auto written = write_secrets(out.where, file.values); !written)
    out.error = std::move(written.error().message);
  return out;
}

kept_secrets keep_moved_secrets(const std::vector<moved_secret>& moved) {
  std::map<std::string, std::string> values;
  for (const auto& m : moved) values.emplace(m.name, m.value);
  return keep_secrets(values);
}

}  // namespace mcpmux
