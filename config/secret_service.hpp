// The desktop's Secret Service (GNOME Keyring, KWallet, KeePassXC…) behind `${secret:NAME}`,
// through libsecret. libsecret (and GLib with it) is loaded only when a secret is first looked
// up or kept and a session bus is there: a daemon whose config names no secret never maps it.
// Items carry the attributes {application: "mcpmux", name: NAME}, so `secret-tool lookup
// application mcpmux name NAME` finds them too.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mcpmux {

/// Whether a Secret Service may be asked: a session bus is known ($DBUS_SESSION_BUS_ADDRESS)
/// and $MCPMUX_SECRETS_FILE does not name a file as the only store.
bool secret_service_wanted();

/// Sets $DBUS_SESSION_BUS_ADDRESS when it is unset and <runtime dir>/bus (see `runtime_dir`:
/// /run/user/UID/bus by the systemd convention) is a socket of this user: an agent that passes a
/// bare environment gives its `mcpmux connect --spawn`, and so the daemon, no bus address, and
/// `${secret:…}` kept in the Secret Service must still resolve. Call at start, before threads.
void derive_session_bus();

/// What an operation on the Secret Service came to.
struct secret_service_result {
  bool available =
      true;           ///< false: no service answered (or libsecret is missing): `error` says why
  std::string error;  ///< why it failed ("" on success)
};

/// The value kept under `name`; nullopt when the service holds none (or is not available: see
/// `status`).
std::optional<std::string> secret_service_lookup(std::string_view name,
                                                 secret_service_result& status);
/// Keeps `value` under `name` in the default collection (replacing an earlier one).
secret_service_result secret_service_store(std::string_view name, std::string_view value);
/// Forgets `name`; `removed` tells whether there was such an item.
secret_service_result secret_service_clear(std::string_view name, bool& removed);
/// The names of the items mcpmux keeps there.
std::vector<std::string> secret_service_names(secret_service_result& status);

}  // namespace mcpmux
