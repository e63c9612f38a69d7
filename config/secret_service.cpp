// libsecret loaded on first use (config/secret_service.hpp). Only libsecret's headers are seen at
// build time: each function is looked up in libsecret-1.so.0 (GLib's through its dependencies)
// and called through a pointer of the type the header declares, so the compiler checks every
// call. The library stays loaded once loaded (GLib cannot be unloaded).
#include "config/secret_service.hpp"

#include <dlfcn.h>

#include <fmt/format.h>
#include <libsecret/secret.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "config/config.hpp"

namespace mcpmux {
namespace {

constexpr const char* soname = "libsecret-1.so.0";

// The functions mcpmux calls, resolved together (none or all).
struct api {
  decltype(&::secret_password_lookupv_sync) lookup = nullptr;
  decltype(&::secret_password_storev_sync) store = nullptr;
  decltype(&::secret_password_clearv_sync) clear = nullptr;
  decltype(&::secret_password_searchv_sync) search = nullptr;
  decltype(&::secret_password_free) free_password = nullptr;
  decltype(&::secret_retrievable_get_attributes) attributes = nullptr;
  decltype(&::g_hash_table_new) table_new = nullptr;
  decltype(&::g_hash_table_insert) table_insert = nullptr;
  decltype(&::g_hash_table_lookup) table_lookup = nullptr;
  decltype(&::g_hash_table_unref) table_unref = nullptr;
  decltype(&::g_str_hash) str_hash = nullptr;
  decltype(&::g_str_equal) str_equal = nullptr;
  decltype(&::g_error_free) error_free = nullptr;
  decltype(&::g_list_free_full) list_free_full = nullptr;
  decltype(&::g_object_unref) object_unref = nullptr;
  std::string error;  ///< why it could not be loaded
};

template <class F>
bool resolve(void* handle, const char* name, F& out) {
  out = reinterpret_cast<F>(::dlsym(handle, name));
  return out != nullptr;
}

const api& lib() {
  static const api a = [] {
    api a;
    void* h = ::dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* why = ::dlerror();
      a.error = std::string("libsecret is not installed (") + (why ? why : soname) + ")";
      return a;
    }
    const bool all =
        resolve(h, "secret_password_lookupv_sync", a.lookup) &&
        resolve(h, "secret_password_storev_sync", a.store) &&
        resolve(h, "secret_password_clearv_sync", a.clear) &&
        resolve(h, "secret_password_searchv_sync", a.search) &&
        resolve(h, "secret_password_free", a.free_password) &&
        resolve(h, "secret_retrievable_get_attributes", a.attributes) &&
        resolve(h, "g_hash_table_new", a.table_new) &&
        resolve(h, "g_hash_table_insert", a.table_insert) &&
        resolve(h, "g_hash_table_lookup", a.table_lookup) &&
        resolve(h, "g_hash_table_unref", a.table_unref) && resolve(h, "g_str_hash", a.str_hash) &&
        resolve(h, "g_str_equal", a.str_equal) && resolve(h, "g_error_free", a.error_free) &&
        resolve(h, "g_list_free_full", a.list_free_full) &&
        resolve(h, "g_object_unref", a.object_unref);
    if (!all) {
      a = api{};
      a.error = std::string(soname) + " lacks a function mcpmux needs (libsecret 0.19 or later)";
    }
    return a;
  }();
  return a;
}

const SecretSchema schema = {"io.github.mcpmux.Secret",
                             SECRET_SCHEMA_NONE,
                             {{"application", SECRET_SCHEMA_ATTRIBUTE_STRING},
                              {"name", SECRET_SCHEMA_ATTRIBUTE_STRING},
                              {nullptr, SECRET_SCHEMA_ATTRIBUTE_STRING}},
                             0,
                             nullptr,
                             nullptr,
                             nullptr,
                             nullptr,
                             nullptr,
                             nullptr,
                             nullptr};

// The attributes of one item ({application, name}), or of all mcpmux's ({application}).
struct attributes {
  GHashTable* table;
  std::string name;
  explicit attributes(std::string_view n)
      : table(lib().table_new(lib().str_hash, lib().str_equal)), name(n) {
    lib().table_insert(table, const_cast<char*>("application"), const_cast<char*>("mcpmux"));
    if (!name.empty()) lib().table_insert(table, const_cast<char*>("name"), name.data());
  }
  ~attributes() { lib().table_unref(table); }
  attributes(const attributes&) = delete;
  attributes& operator=(const attributes&) = delete;
};

// libsecret's sync calls run a GLib main context of their own: one at a time.
std::mutex calls;

// The result of a call that set `error`: no service (D-Bus could not reach one) or a failure.
secret_service_result failed(GError* error) {
  secret_service_result r;
  r.available = false;
  r.error = std::string("the Secret Service did not answer: ") +
            (error && error->message ? error->message : "unknown error");
  if (error) lib().error_free(error);
  return r;
}

secret_service_result unavailable() {
  secret_service_result r;
  r.available = false;
  r.error = lib().error;
  return r;
}

}  // namespace

void derive_session_bus() {
  if (const char* bus = std::getenv("DBUS_SESSION_BUS_ADDRESS"); bus && *bus) return;
  const auto run = runtime_dir();
  if (!run) return;
  const std::string path = *run + "/bus";
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_uid != ::getuid()) return;
  // D-Bus address values keep [-0-9A-Za-z_/.\\*] as they are; any other byte is %XX.
  std::string address = "unix:path=";
  for (unsigned char c : path) {
    if (std::isalnum(c) || std::strchr("-_/.\\*", c) != nullptr) {
      address += static_cast<char>(c);
    } else {
      address += fmt::format("%{:02x}", c);
    }
  }
  ::setenv("DBUS_SESSION_BUS_ADDRESS", address.c_str(), 1);
}

bool secret_service_wanted() {
  const char* file = std::getenv("MCPMUX_SECRETS_FILE");
  const char* bus = std::getenv("DBUS_SESSION_BUS_ADDRESS");
  return !(file && *file) && bus && *bus;
}

std::optional<std::string> secret_service_lookup(std::string_view name,
                                                 secret_service_result& status) {
  if (!lib().lookup) {
    status = unavailable();
    return std::nullopt;
  }
  std::lock_guard lock(calls);
  attributes attrs(name);
  GError* error = nullptr;
  gchar* value = lib().lookup(&schema, attrs.table, nullptr, &error);
  if (error) {
    status = failed(error);
    return std::nullopt;
  }
  status = {};
  if (!value) return std::nullopt;
  std::string out(value);
  lib().free_password(value);  // wiped before it is freed
  return out;
}

secret_service_result secret_service_store(std::string_view name, std::string_view value) {
  if (!lib().store) return unavailable();
  std::lock_guard lock(calls);
  attributes attrs(name);
  const std::string label = "mcpmux: " + std::string(name);
  const std::string text(value);
  GError* error = nullptr;
  if (!lib().store(&schema, attrs.table, SECRET_COLLECTION_DEFAULT, label.c_str(), text.c_str(),
                   nullptr, &error))
    return failed(error);
  return {};
}

secret_service_result secret_service_clear(std::string_view name, bool& removed) {
  removed = false;
  if (!lib().clear) return unavailable();
  std::lock_guard lock(calls);
  attributes attrs(name);
  GError* error = nullptr;
  removed = lib().clear(&schema, attrs.table, nullptr, &error);
  if (error) return failed(error);
  return {};
}

std::vector<std::string> secret_service_names(secret_service_result& status) {
  std::vector<std::string> out;
  if (!lib().search) {
    status = unavailable();
    return out;
  }
  std::lock_guard lock(calls);
  attributes attrs("");
  GError* error = nullptr;
  GList* items = lib().search(&schema, attrs.table, SECRET_SEARCH_ALL, nullptr, &error);
  if (error) {
    status = failed(error);
    return out;
  }
  status = {};
  for (GList* i = items; i; i = i->next) {
    GHashTable* found = lib().attributes(static_cast<SecretRetrievable*>(i->data));
    if (!found) continue;
    if (const auto* n = static_cast<const char*>(lib().table_lookup(found, "name")))
      out.emplace_back(n);
    lib().table_unref(found);
  }
  lib().list_free_full(items, lib().object_unref);
  return out;
}

}  // namespace mcpmux
