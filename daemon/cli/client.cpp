// Dialing the daemon and the blocking JSON-RPC client of the CLI.
#include "daemon/cli/client.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "config/config.hpp"
#include "config/paths.hpp"

namespace mcpmux::cli {

void unique_fd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

socket_location default_socket_location() {
  if (env("MCPMUX_SOCKET")) return locate_socket("", nullptr);
  const auto cfg = load_config("");
  return locate_socket("", cfg.value ? &cfg.value->daemon : nullptr);
}

namespace {

constexpr std::string_view log_notification = "notifications/mcpmux/log";
constexpr std::size_t max_stashed = 10'000;

failure no_daemon(const std::string& path) {
  return failure{exit_status::no_daemon,
                 fmt::format("no daemon at {}: start it with `systemctl --user start "
                             "mcpmuxd.socket` or `mcpmuxd`",
                             path),
                 {}};
}

// A socket's directory that another user owns, that others may write in, or that is a symlink
// could hold someone else's listener: refused before connecting. A directory that does not exist
// means no daemon (ENOENT), which `--spawn` may go on to fix.
std::optional<failure> check_socket_dir(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return std::nullopt;  // relative to the working directory
  const std::string dir = slash == 0 ? "/" : path.substr(0, slash);
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 && errno == ENOENT) {
    failure f = no_daemon(path);
    f.sys_errno = ENOENT;
    return f;
  }
  if (auto checked = check_private_dir(dir); !checked) {
    return failure{exit_status::no_daemon,
                   fmt::format("refusing to use the socket {}: {}", path, checked.error().message),
                   {}};
  }
  return std::nullopt;
}

bool set_nonblocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  return flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

bool is_id(const json::value& v, std::int64_t id) {
  if (v.is_int64()) return v.get_int64() == id;
  if (v.is_uint64()) return id >= 0 && v.get_uint64() == static_cast<std::uint64_t>(id);
  return false;
}

failure rpc_failure(const json::value& err, std::string_view method) {
  auto message = member_string(err, "message");
  failure f =
      fail(message && !message->empty() ? std::string(*message) : fmt::format("{} failed", method));
  if (const json::value* data = member(err, "data"); data != nullptr && !data->is_null()) {
    const json::value* errors = member(*data, "errors");
    if (errors != nullptr && errors->is_array()) {
      // mcpmux/reload: one "file:line: key: message" per line.
      for (const json::value& e : errors->get_array()) {
        if (!f.detail.empty()) f.detail += '\n';
        f.detail += e.is_string() ? std::string(e.get_string()) : json::serialize(e);
      }
    } else {
      f.detail = data->is_string() ? std::string(data->get_string()) : json::serialize(*data);
    }
  }
  f.from_daemon = true;
  return f;
}

}  // namespace

outcome<unique_fd> dial(const std::string& path, milliseconds timeout) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path) {
    return failure{
        exit_status::usage,
        fmt::format("socket path must be 1 to {} bytes long: '{}'", sizeof addr.sun_path - 1, path),
        {}};
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  if (auto refused = check_socket_dir(path)) return *refused;

  unique_fd fd{::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  if (fd.get() < 0) return fail(fmt::format("socket: {}", errno_text(errno)));

  // A blocking connect() to a Unix socket waits while the listener's backlog is full (a wedged
  // daemon); SO_SNDTIMEO bounds that wait.
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);

  int rc = 0;
  do {
    rc = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  } while (rc < 0 && errno == EINTR);
  if (rc < 0) {
    int err = errno;
    if (err == ENOENT || err == ECONNREFUSED) {
      failure f = no_daemon(path);
      f.sys_errno = err;
      return f;
    }
    if (err == EAGAIN || err == EWOULDBLOCK || err == EINPROGRESS) {
      return fail(
          fmt::format("timed out after {} ms connecting to {} (the daemon accepts no "
                      "connections)",
                      timeout.count(), path));
    }
    return failure{
        exit_status::no_daemon, fmt::format("cannot connect to {}: {}", path, errno_text(err)), {}};
  }
  // Who listens: the kernel's record of the process that bound the socket.
  ucred peer{};
  socklen_t len = sizeof peer;
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0)
    return fail(fmt::format("cannot tell who listens on {}: {}", path, errno_text(errno)));
  if (peer.uid != ::getuid()) {
    return failure{exit_status::no_daemon,
                   fmt::format("refusing to talk to {}: it is served by uid {} (pid {}), not by "
                               "you (uid {}); another user may have taken the path",
                               path, peer.uid, peer.pid, ::getuid()),
                   {}};
  }
  if (!set_nonblocking(fd.get())) return fail(fmt::format("fcntl: {}", errno_text(errno)));
  return fd;
}

outcome<unique_fd> dial_daemon(const context& ctx) {
  if (ctx.default_socket) {
    if (auto recorded = read_daemon_record(); recorded && *recorded != ctx.socket_path) {
      if (auto fd = dial(*recorded, ctx.timeout)) return fd;
    }
  }
  return dial(ctx.socket_path, ctx.timeout);
}

outcome<daemon_client> open_client(const context& ctx) {
  auto fd = dial_daemon(ctx);
  if (!fd) return fd.error();
  return daemon_client(std::move(*fd), ctx.timeout);
}

outcome<json::value> daemon_client::request(std::string_view method, json::object params) {
  const std::int64_t id = next_id_++;
  const auto deadline = clock_type::now() + timeout_;
  json::object msg{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
  msg["params"] = std::move(params);
  if (auto sent = send(msg, deadline, method); !sent) return sent.error();

  for (;;) {
    auto line = read_line(deadline, method, id);
    if (!line) return line.error();
    boost::system::error_code ec;
    json::value reply = parse_json(*line, ec);
    if (ec) return fail(fmt::format("the daemon sent invalid JSON: {}", ec.message()));
    if (!reply.is_object()) continue;
    if (member(reply, "method") != nullptr) {
      if (member(reply, "id") != nullptr) {
        answer_peer_request(reply.get_object(), deadline);
      } else if (member_string(reply, "method") == log_notification &&
                 stashed_.size() < max_stashed) {
        stashed_.push_back(std::move(reply));  // a follower shows these after the answer
      }
      continue;  // other notifications (progress, list_changed) are not ours to show
    }
    const json::value* rid = member(reply, "id");
    if (rid == nullptr || !is_id(*rid, id)) continue;
    if (const json::value* err = member(reply, "error")) return rpc_failure(*err, method);
    if (const json::value* result = member(reply, "result")) return *result;
    return fail(fmt::format("the daemon's answer to {} has neither result nor error", method));
  }
}

outcome<std::optional<json::value>> daemon_client::next_log_notification(
    const volatile sig_atomic_t* stop) {
  stop_ = stop;
  for (;;) {
    if (!stashed_.empty()) {
      json::value v = std::move(stashed_.front());
      stashed_.erase(stashed_.begin());
      return std::optional<json::value>(std::move(v));
    }
    if (*stop != 0) return std::optional<json::value>();
    auto line = read_line(clock_type::time_point::max(), "mcpmux/logs", 0);
    if (!line) {
      if (eof_ || *stop != 0) return std::optional<json::value>();
      return line.error();
    }
    boost::system::error_code ec;
    json::value msg = parse_json(*line, ec);
    if (ec) return fail(fmt::format("the daemon sent invalid JSON: {}", ec.message()));
    if (!msg.is_object() || member(msg, "method") == nullptr) continue;
    if (member(msg, "id") != nullptr) {
      answer_peer_request(msg.get_object(), clock_type::now() + timeout_);
    } else if (member_string(msg, "method") == log_notification) {
      return std::optional<json::value>(std::move(msg));
    }
  }
}

outcome<void> daemon_client::notify(std::string_view method, json::object params) {
  json::object msg{{"jsonrpc", "2.0"}, {"method", method}};
  msg["params"] = std::move(params);
  auto sent = send(msg, clock_type::now() + timeout_, method);
  if (sent && method == "notifications/initialized") initialized_ = true;
  return sent;
}

// Waits until fd_ is ready for `events` or the deadline passes; false on timeout, or when a
// signal handler set *stop_.
bool daemon_client::wait_for(short events, clock_type::time_point deadline) {
  for (;;) {
    auto left = std::chrono::ceil<milliseconds>(deadline - clock_type::now()).count();
    if (left <= 0) return false;
    pollfd p{fd_.get(), events, 0};
    int rc = ::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left, INT32_MAX)));
    if (rc > 0) return true;
    if (rc < 0 && errno != EINTR) return true;  // let the following I/O call report it
    if (stop_ != nullptr && *stop_ != 0) return false;
  }
}

outcome<void> daemon_client::send(const json::object& msg, clock_type::time_point deadline,
                                  std::string_view method) {
  std::string line = json::serialize(msg);
  line += '\n';
  std::string_view rest = line;
  while (!rest.empty()) {
    ssize_t n = ::send(fd_.get(), rest.data(), rest.size(), MSG_NOSIGNAL);
    if (n >= 0) {
      rest.remove_prefix(static_cast<std::size_t>(n));
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!wait_for(POLLOUT, deadline)) {
        return fail(fmt::format("timed out after {} ms sending {} to the daemon", timeout_.count(),
                                method));
      }
    } else if (errno != EINTR) {
      return fail(fmt::format("cannot send {} to the daemon: {}", method, errno_text(errno)));
    }
  }
  return {};
}

// Returns the next non-blank line (split by the NDJSON framer); on timeout, asks the daemon to
// cancel request `id`.
outcome<std::string> daemon_client::read_line(clock_type::time_point deadline,
                                              std::string_view method, std::int64_t id) {
  for (;;) {
    if (!lines_.empty()) {
      std::string line = std::move(lines_.front());
      lines_.pop_front();
      return line;
    }
    if (oversize_ || framer_.discarding()) {
      return fail(
          fmt::format("the daemon's answer to {} exceeds {} MiB", method, max_line_bytes >> 20));
    }
    char buf[64 * 1024];
    ssize_t n = ::recv(fd_.get(), buf, sizeof buf, 0);
    const int err = errno;
    if (n > 0) {
      framer_.feed(
          std::string_view(buf, static_cast<std::size_t>(n)),
          [&](std::string_view line, std::string* whole) {
            lines_.push_back(whole != nullptr ? std::move(*whole) : std::string(line));
          },
          [&](std::size_t) { oversize_ = true; });
      continue;
    }
    if (n == 0) {
      eof_ = true;
      return fail(fmt::format("the daemon closed the connection before answering {}", method));
    }
    if (err == EAGAIN || err == EWOULDBLOCK) {
      if (!wait_for(POLLIN, deadline)) {
        if (stop_ != nullptr && *stop_ != 0) return fail("interrupted");
        cancel(id);
        return fail(
            fmt::format("no answer from the daemon to {} within {} ms (raise it with "
                        "--timeout MS)",
                        method, timeout_.count()));
      }
    } else if (err != EINTR) {
      return fail(fmt::format("lost the connection to the daemon: {}", errno_text(err)));
    }
  }
}

// The daemon may ping us while a call runs; anything else we did not declare support for.
void daemon_client::answer_peer_request(const json::object& req, clock_type::time_point deadline) {
  json::object reply{{"jsonrpc", "2.0"}, {"id", req.at("id")}};
  const json::value& method = req.at("method");
  if (method.is_string() && method.get_string() == "ping") {
    reply["result"] = json::object{};
  } else {
    reply["error"] = json::object{{"code", -32601}, {"message", "Method not found"}};
  }
  (void)send(reply, deadline, "a reply");
}

// Best effort: tell the daemon to stop work we no longer wait for (closing also does).
void daemon_client::cancel(std::int64_t id) {
  if (!initialized_) return;
  json::object msg{{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}};
  msg["params"] = json::object{{"requestId", id}, {"reason", "client timeout"}};
  std::string line = json::serialize(msg);
  line += '\n';
  (void)::send(fd_.get(), line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

}  // namespace mcpmux::cli
