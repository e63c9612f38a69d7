// mcpmuxd's run loop: wires config, logging, the listener, the manager and signals together.
#include "daemon/daemon.hpp"

#include <signal.h>
#ifdef __GLIBC__
#include <malloc.h>
#include <sys/mman.h>
#endif
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/serialize.hpp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "base/log.hpp"
#include "config/config.hpp"
#include "config/paths.hpp"
#include "config/secret_service.hpp"
#include "config/secrets.hpp"
#include "core/guard.hpp"
#include "core/manager.hpp"
#include "core/oauth_store.hpp"
#include "core/session.hpp"
#include "core/state_store.hpp"
#include "daemon/channels.hpp"
#include "daemon/code_runners.hpp"
#include "daemon/config_watch.hpp"
#include "daemon/dashboard.hpp"
#include "daemon/http_auth.hpp"
#include "daemon/metrics.hpp"
#include "daemon/oauth_accounts.hpp"
#include "daemon/peer.hpp"
#include "daemon/sandboxes.hpp"
#include "daemon/systemd.hpp"
#include "transports/fd_transport.hpp"
#include "transports/http_endpoint.hpp"
#include "transports/stdio_transport.hpp"
#include "transports/unix_listener.hpp"
#include "transports/write_batch.hpp"

namespace mcpmux {
namespace {

namespace asio = boost::asio;

constexpr auto shutdown_budget = std::chrono::milliseconds(4500);

spdlog::level::level_enum to_spdlog(log_level l) {
  switch (l) {
    case log_level::trace:
      return spdlog::level::trace;
    case log_level::debug:
      return spdlog::level::debug;
    case log_level::info:
      return spdlog::level::info;
    case log_level::warn:
      return spdlog::level::warn;
    case log_level::error:
      return spdlog::level::err;
    case log_level::off:
      return spdlog::level::off;
  }
  return spdlog::level::info;
}

// syslog priorities, for journald's `<N>` line prefixes.
int priority(log_level l) {
  switch (l) {
    case log_level::trace:
    case log_level::debug:
      return 7;
    case log_level::info:
      return 6;
    case log_level::warn:
      return 4;
    default:
      return 3;
  }
}

void setup_logging(log_level level) {
  auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  auto lg = std::make_shared<spdlog::logger>("mcpmuxd", sink);
  const bool journal = std::getenv("JOURNAL_STREAM") != nullptr;
  // journald adds its own timestamps and reads levels from the `<N>` prefix.
  lg->set_pattern(journal ? "%v" : "%Y-%m-%d %H:%M:%S.%e %^%-5l%$ %v");
  lg->set_level(spdlog::level::trace);
  lg->flush_on(spdlog::level::trace);
  set_log_level(level);
  set_log_sink([lg, journal](log_level l, std::string_view name, std::string_view msg) {
    if (journal)
      lg->log(to_spdlog(l), "<{}>{}: {}", priority(l), name, msg);
    else
      lg->log(to_spdlog(l), "{}: {}", name, msg);
  });
}

// Big message buffers (up to max_message_bytes) are mapped and unmapped as they come and go:
// glibc's adaptive threshold would move them into the heap once the first one is freed, and a
// 10 MiB answer would stay resident long after it was sent.
constexpr int mmap_threshold = 256 * 1024;
constexpr int default_top_pad = 128 * 1024;  // glibc's M_TOP_PAD

// Starting writes megabytes of fresh heap (the configuration, the catalogue snapshot, the
// upstreams), and each fresh 4 KiB page is a fault: ~10 µs in a virtual machine, most of a
// 10,000-tool start. While starting, the heap grows in one step and asks for transparent huge
// pages (one fault per 2 MiB where the kernel has them, plain pages where not), and the
// snapshot's big strings come from it rather than from their own mappings.
class start_heap {
 public:
  start_heap() {
#ifdef __GLIBC__
    constexpr std::size_t reserve = 32 << 20;
    ::mallopt(M_MMAP_THRESHOLD, 8 << 20);
    ::mallopt(M_TOP_PAD, reserve);
    // A block bigger than the free top makes malloc move the break once, by the reserve.
    void* grow = ::malloc(::mallinfo2().keepcost + 4096);
    const auto first = reinterpret_cast<std::uintptr_t>(grow);
    ::free(grow);
    const auto brk = reinterpret_cast<std::uintptr_t>(::sbrk(0));
    begin_ = (first + huge_page - 1) & ~(huge_page - 1);
    end_ = brk & ~(huge_page - 1);
    if (end_ <= begin_ + huge_page ||
        ::madvise(reinterpret_cast<void*>(begin_), end_ - begin_, MADV_HUGEPAGE) != 0) {
      begin_ = end_ = 0;
      return;
    }
    // What lies below the first huge page is held (untouched) until started, so that the heap
    // goes on from there.
    if (begin_ - first > 4096) below_ = ::malloc(begin_ - first - 64);
#endif
  }
  ~start_heap() {
    ::free(below_);
  }
  start_heap(const start_heap&) = delete;
  start_heap& operator=(const start_heap&) = delete;

  // Started: big buffers are mapped again, the heap's free pages go back to the system, and its
  // huge pages are no longer kept whole (nor rebuilt by khugepaged).
  void started() {
#ifdef __GLIBC__
    if (std::exchange(over_, true)) return;
    ::mallopt(M_MMAP_THRESHOLD, mmap_threshold);
    ::mallopt(M_TOP_PAD, default_top_pad);
    if (end_ > begin_) ::madvise(reinterpret_cast<void*>(begin_), end_ - begin_, MADV_NOHUGEPAGE);
    ::free(std::exchange(below_, nullptr));
    ::malloc_trim(0);
#endif
  }

 private:
  static constexpr std::uintptr_t huge_page = 2 << 20;
  std::uintptr_t begin_ = 0, end_ = 0;
  void* below_ = nullptr;
  bool over_ = false;
};

// The Unix-socket clients' transports while servers start, to tell whether an answer is still
// being written.
class client_outputs {
 public:
  void add(const std::shared_ptr<transport>& t) { all_.push_back(t); }
  void clear() { all_.clear(); }
  bool writing() {
    bool any = false;
    std::erase_if(all_, [&](const std::weak_ptr<transport>& w) {
      auto t = w.lock();
      any = any || (t && t->queued_bytes() > 0);
      return !t;
    });
    return any;
  }

 private:
  std::vector<std::weak_ptr<transport>> all_;
};

// Runs the loop until it is stopped. While servers wait for their start, the next one starts when
// the loop has nothing else to do and no client answer is still being written: the clients the
// tool cache is there for come first, then a hundred starting processes may take the CPU. The
// first start also waits for a short quiet spell, so that clients present at the start (socket
// activation) get through their first exchanges, and so does a client that connects while
// servers start. Busy clients hold a start back by at most max_start_deferral. When a catalogue
// snapshot listed the cached tools, the cached entries are read in the same idle moments, one
// server's a turn (the manager's read_next_cached), so that reading them never holds a client up
// (and, the loop busy, one every max_start_deferral).
void run_loop(asio::io_context& io, manager& mgr, client_outputs& clients) {
  constexpr auto quiet_before_first_start = std::chrono::milliseconds(2);
  constexpr auto max_start_deferral = std::chrono::milliseconds(10);
  // A client that just connected is in its first exchanges (initialize, tools/list): its next
  // request is a moment away, and a start between them would make it wait.
  constexpr auto new_client = std::chrono::milliseconds(20);
  auto work = asio::make_work_guard(io);  // an idle poll() must not find the loop out of work
  auto last_start = steady_clock::now();
  auto last_read = last_start;
  bool first = true;
  while ((mgr.starts_pending() || mgr.cached_reads_pending()) && !io.stopped()) {
    const auto now = steady_clock::now();
    // The lists wait for the cached entries: a busy loop still reads one every so often.
    if (now - last_read >= max_start_deferral && mgr.read_next_cached()) last_read = now;
    if (!mgr.starts_pending() || now - last_start < max_start_deferral) {
      const bool wait = first && mgr.starts_pending();
      if (guarded([&] { return wait ? io.run_one_for(quiet_before_first_start) : io.poll(); }) > 0)
        continue;
      if (io.stopped()) break;
      // Idle: the next server's cached tools read (when a snapshot listed them), then a start.
      const bool read = mgr.read_next_cached();
      if (read) last_read = now;
      if (!mgr.starts_pending()) continue;
      if (clients.writing() || now - mgr.last_attach() < new_client) {
        if (!read) guarded([&] { return io.run_one_for(std::chrono::milliseconds(1)); });
        continue;
      }
    }
    mgr.start_next();
    first = false;
    last_start = steady_clock::now();
  }
  clients.clear();
  work.reset();
  // A handler's exception ends a run early (and is logged): run on. A run that ends of itself
  // (out of work) returns 0 the next time.
  while (!io.stopped() && guarded([&] { return io.run(); }) > 0) {
  }
}

void print_errors(const config_result& r) {
  for (const auto& e : r.errors) std::fprintf(stderr, "mcpmuxd: %s\n", e.to_string().c_str());
}

}  // namespace

// mcpmux's own files, which no sandboxed server may see: the config, the secrets, the state
// (state store, OAuth logins, the daemon record), the caches, the socket and its directory, the
// HTTP token.
static std::vector<std::string> own_files(const daemon_info& info, const std::string& config_file) {
  std::vector<std::string> out{
      config_file,          xdg_dir("XDG_CONFIG_HOME", ".config") + "/mcpmux",
      secrets_path(),       state_dir(),
      oauth_dir(),          state_store_path(),
      daemon_record_path(), cache_dir(),
      info.socket_path};
  // The socket's directory when it is mcpmux's own (the default $XDG_RUNTIME_DIR/mcpmux), not
  // a directory the user put a socket in.
  if (const auto dir = parent_dir(info.socket_path); dir.ends_with("/mcpmux")) out.push_back(dir);
  if (!info.http_token_file.empty()) out.push_back(info.http_token_file);
  return out;
}

int check_config(const daemon_options& opt) {
  auto r = load_config(opt.config_path);
  for (const auto& w : r.warnings) std::fprintf(stderr, "mcpmuxd: warning: %s\n", w.c_str());
  if (!r.value) {
    print_errors(r);
    return 1;
  }
  std::printf("%s: OK, %zu servers\n", r.value->source.c_str(), r.value->servers.size());
  return 0;
}

int run_daemon(const daemon_options& opt) {
  start_heap heap;
  derive_session_bus();  // before the config's ${secret:…} are looked up
  if (opt.ready_fd >= 0 && !take_ready_fd(opt.ready_fd)) {  // before any child could inherit it
    std::fprintf(stderr, "mcpmuxd: --ready-fd %d: not an open pipe\n", opt.ready_fd);
    return 2;
  }
  auto loaded = load_config(opt.config_path);
  if (!loaded.value) {
    print_errors(loaded);
    return 1;
  }
  config cfg = std::move(*loaded.value);
  auto level = parse_log_level(opt.log_level.empty() ? cfg.daemon.log_level : opt.log_level);
  if (!level) {
    std::fprintf(stderr, "mcpmuxd: unknown log level \"%s\"\n", opt.log_level.c_str());
    return 2;
  }
  setup_logging(*level);
  logger log("mcpmuxd");
  for (const auto& w : loaded.warnings) log.warn("config: {}", w);

  ::signal(SIGPIPE, SIG_IGN);
  // One thread runs the loop, and only it starts or performs I/O on a descriptor: the reactor's
  // per-descriptor locks are off (~470 instructions a call). The scheduler keeps its lock, for
  // what other threads hand it (the resolver's answers, signals).
  asio::io_context io(BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO);
  // What one read makes the loop send goes out in one write per destination (write_batch.hpp):
  // the client sockets and the stdio children share it.
  auto batch = std::make_shared<write_batch>();

  // Under socket activation the socket is the one systemd made (mcpmuxd.socket): its own path is
  // where we listen (and what status, the HTTP token's place and the record say), whatever the
  // rule would have chosen in the environment the manager gave us.
  const auto inherited = sd_listen_fd();
  socket_location where = locate_socket(opt.socket_path, &cfg.daemon);
  if (inherited)
    if (auto bound = bound_unix_path(*inherited)) where.path = std::move(*bound);
  const std::string& socket_path = where.path;
  // The file to watch: the one loaded, or where a user would create one.
  const std::string watched =
      cfg.source == "<default>" ? resolve_config_path(opt.config_path) : cfg.source;
  bool reloading = false;
  std::string last_status;
  manager* mgr_ptr = nullptr;
  dashboard* board_ptr = nullptr;
  daemon_info info;
  info.socket_path = socket_path;
  info.config_path = cfg.source;
  if (const auto& d = cfg.daemon; !d.http.empty()) {
    // No open door on the loopback port: without a token file of the user's, one is made next
    // to the socket (before anything listens: a failure stops the start).
    info.http_url = "http://" + d.http + "/mcp";
    info.http_token_file = d.http_token_file;
    if (!d.http_auth_none && info.http_token_file.empty()) {
      info.http_token_file = socket_path.substr(0, socket_path.rfind('/') + 1) + "http-token";
      if (auto made = ensure_http_token(info.http_token_file); !made) {
        log.error("{}: {}", info.http_token_file, made.error().message);
        return 1;
      }
    }
  }
  info.socket_for = [explicit_socket = opt.socket_path](const daemon_config& d) {
    return resolve_socket_path(explicit_socket, &d);
  };
  info.reload_config = [path = opt.config_path, &reloading] {
    reloading = true;
    sd_notify("RELOADING=1");
    return load_config(path);
  };
  // systemd's status line follows the servers; READY=1 closes a reload.
  info.on_change = [&] {
    if (!mgr_ptr) return;
    if (board_ptr) board_ptr->changed();
    auto [ready, total] = mgr_ptr->ready_count();
    auto line = fmt::format("STATUS={}/{} servers ready", ready, total);
    if (std::exchange(reloading, false)) line = "READY=1\n" + line;
    if (line != last_status) sd_notify(line);
    last_status = std::move(line);
    // Starting leaves freed memory behind in the heap (the cached lists, replaced by the servers'
    // own, and parse buffers); it goes back to the system once no server is starting any more.
    if (mgr_ptr->startup_over()) heap.started();
  };
  const auto max_message = cfg.daemon.max_message_bytes;
  const auto max_queue = cfg.daemon.max_client_queue_bytes;
  // OAuth logins: a login that arrives restarts the server that waited for it; a logout
  // restarts it so that it finds out it is logged out.
  oauth_accounts logins(io, oauth_dir(), [&](const std::string& server, oauth_change what) {
    asio::post(io, [&, server, what] {
      if (!mgr_ptr) return;
      auto up = mgr_ptr->find_upstream(server);
      if (!up) return;
      const auto st = up->state();
      const bool waiting = st == upstream_state::needs_login || st == upstream_state::backoff;
      if (what == oauth_change::logged_out || (what == oauth_change::logged_in && waiting))
        up->restart();
      info.on_change();
    });
  });
  // The socket listens before the manager reads the tool cache: a client that comes early has
  // connected and sent its initialize by the time the loop runs. (Accepts are handled by the
  // loop, once `serving` is set.)
  std::uint64_t next_session = 1;
  client_outputs clients;
  manager* serving = nullptr;
  // The signals are ours before the socket listens: a client may start us and stop us at once,
  // and a SIGTERM then must not kill us before we can remove the socket and our record. (Asio
  // keeps a signal that comes before its wait for that wait.)
  asio::signal_set signals(io, SIGTERM, SIGINT);
  asio::signal_set hup(io, SIGHUP);
  auto listening = listen_unix(io, socket_path, inherited.value_or(-1), [&](int fd) {
    fd_transport_options fo;
    fo.limits.max_message_bytes = max_message;
    fo.limits.max_queue_bytes = max_queue;
    fo.accept_handoff = true;  // mcpmux connect hands over the agent's stdio
    fo.batch = batch;
    auto who = identify_peer(fd);
    auto t = make_fd_transport(io, fd, fd, fo);
    if (serving->starts_pending()) clients.add(t);
    session::start(*serving, std::move(t), next_session++, std::move(who));
  });
  if (!listening) {
    log.error("{}", listening.error().message);
    return 1;
  }
  const auto listener = std::move(*listening);
  // A daemon nobody pointed at a socket by name says where it listens, in a place found from
  // the home directory alone: `mcpmux connect` started by an agent that passes a bare
  // environment (no $XDG_RUNTIME_DIR) finds this daemon instead of starting a second one.
  const bool recorded = where.is_default();
  if (recorded) {
    if (auto written = write_daemon_record(socket_path); !written)
      log.warn("cannot record the socket in {}: {}", daemon_record_path(), written.error().message);
  }
  server_sandboxes sandboxes(io, own_files(info, watched), parent_dir(socket_path) + "/proxy");
  manager mgr(io, std::move(cfg), info, make_channel_factory(io, logins, sandboxes, batch));
  serving = &mgr;
  code_runners runners(io, sandboxes);
  mgr.set_code_runners([&runners] { return runners.take(); });
  if (std::any_of(mgr.current_config().profiles.begin(), mgr.current_config().profiles.end(),
                  [](const profile_config& p) { return p.code; }))
    runners.start_ahead();
  mgr.add_control_extension(&logins);
  mgr.add_control_extension(&sandboxes);
  dashboard board(mgr);  // the page on the HTTP endpoint, when there is one
  mgr.add_control_extension(&board);
  logins.set_configured([&](const std::string& server) {
    auto up = mgr.find_upstream(server);
    return up && oauth_may_apply(up->config());
  });

  // [daemon] http: MCP over loopback Streamable HTTP, with the dashboard's page. Without it, the
  // page alone is started on a free loopback port at the first `mcpmux dashboard`.
  std::shared_ptr<http_endpoint> http;
  board_ptr = &board;
  auto open_http = [&](http_endpoint_options ho) {
    ho.web = [&board](const web_request& r) { return board.handle(r); };
    auto status = [&] { return json::serialize(mgr.control("mcpmux/status", {}, 0).value()); };
    auto metrics = [&] {
      return metrics_from_status(json::serialize(
          mgr.control("mcpmux/status", json::object{{"histograms", true}}, 0).value()));
    };
    return start_http_endpoint(
        io, std::move(ho),
        [&](std::shared_ptr<transport> t, std::string_view profile, std::string_view token) {
          client_identity who;
          who.transport = "http";
          who.requested_profile = profile;
          who.token = token;
          session::start(mgr, std::move(t), next_session++, std::move(who));
        },
        status, metrics);
  };
  if (const auto& d = mgr.current_config().daemon; !d.http.empty()) {
    if (d.http_auth_none)
      log.warn(
          "http_auth = \"none\": ANY user or program on this machine can use the HTTP endpoint "
          "{} — every server behind mcpmux and its credentials",
          d.http);
    http_endpoint_options ho{
        .address = d.http,
        .allow_remote = d.http_allow_remote,
        .token_file = mgr.info().http_token_file,
        .named_tokens = d.http_tokens,
        .limits = {.max_message_bytes = max_message, .max_queue_bytes = max_queue},
        .max_connections = d.http_max_connections,
        .max_sessions = d.http_max_sessions,
        .max_requests_per_session = d.http_max_requests_per_session,
        .tool_param_headers =
            [&mgr](std::string_view tool) { return mgr.tool_param_headers(tool); },
        .profile_known = [&mgr](std::string_view name) { return mgr.profile(name) != nullptr; }};
    auto opened = open_http(std::move(ho));
    if (!opened) {
      log.error("{}", opened.error().message);
      listener->close();
      if (recorded) remove_daemon_record(socket_path);
      return 1;
    }
    http = std::move(*opened);
    // The page's address: the configured host, the bound port.
    const auto host = d.http.substr(0, d.http.rfind(':'));
    board.set_base_url(fmt::format("http://{}:{}", host, http->port()));
  } else {
    board.set_endpoint_starter([&]() -> result<> {
      auto opened = open_http({.address = "127.0.0.1:0", .serve_mcp = false});
      if (!opened) return std::move(opened.error());
      http = std::move(*opened);
      board.set_base_url(fmt::format("http://127.0.0.1:{}", http->port()));
      log.info(
          "the dashboard's page is at http://127.0.0.1:{}/ (the page alone: /mcp stays off "
          "without [daemon] http)",
          http->port());
      return {};
    });
  }
  log.info("mcpmuxd {} listening on {}{} ({} servers from {})", MCPMUX_VERSION, socket_path,
           inherited ? " (socket activation)" : "", mgr.current_config().servers.size(),
           mgr.current_config().source);
  mgr.start();  // the servers start once the loop runs (run_loop)
  // Cached tools were loaded with the upstreams: clients can be served from here on.
  auto [ready, total] = mgr.ready_count();
  sd_notify(fmt::format("READY=1\nSTATUS={}/{} servers ready", ready, total));
  notify_ready_fd(opt.ready_fd);
  mgr_ptr = &mgr;  // status updates from here on

  // The config file and the files it includes; a reload may change the includes.
  auto watched_files = [&] {
    auto files = include_files(mgr.current_config().daemon, watched);
    files.insert(files.begin(), watched);
    return files;
  };
  std::shared_ptr<config_watch> watch;
  auto reload = [&](std::string_view why) {
    log.info("reloading the configuration ({})", why);
    static_cast<void>(mgr.reload());  // logs its outcome
    if (watch) watch->watch(watched_files());
  };
  watch = watch_config(io, watched_files(), std::chrono::milliseconds(200),
                       [&] { reload("file changed"); });
  if (watch) log.debug("watching {} (and its includes) for changes", watched);

  std::function<void()> wait_hup = [&] {
    hup.async_wait([&](boost::system::error_code ec, int) {
      if (ec) return;
      reload("SIGHUP");
      wait_hup();
    });
  };
  wait_hup();

  // The dashboard's last hour: each server's calls and latency once a minute.
  asio::steady_timer sampler(io);
  std::function<void()> sample = [&] {
    board.sample();
    sampler.expires_after(dashboard::sample_interval);
    sampler.async_wait([&](boost::system::error_code ec) {
      if (ec) return;
      heap.started();  // at the latest: a server may take its time to answer
      sample();
    });
  };
  sample();

  asio::steady_timer watchdog(io);
  std::function<void()> pet;
  if (auto interval = sd_watchdog_interval()) {
    pet = [&, interval = *interval] {
      sd_notify("WATCHDOG=1");
      watchdog.expires_after(interval);
      watchdog.async_wait([&](boost::system::error_code ec) {
        if (!ec) pet();
      });
    };
    pet();
  }

  // Graceful stop: no new clients, sessions closed, children asked to exit, all bounded.
  asio::steady_timer stop_timer(io);
  bool stopping = false;
  auto deadline = std::chrono::steady_clock::now();
  std::function<void()> wait_children = [&] {
    if ((live_children() == 0 && !(http && http->draining())) ||
        std::chrono::steady_clock::now() >= deadline) {
      if (live_children() > 0) log.warn("{} children still running at exit", live_children());
      io.stop();
      return;
    }
    stop_timer.expires_after(std::chrono::milliseconds(10));
    stop_timer.async_wait([&](boost::system::error_code) { wait_children(); });
  };
  signals.async_wait([&](boost::system::error_code ec, int sig) {
    if (ec || stopping) return;
    stopping = true;
    log.info("received {}; stopping", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    sd_notify("STOPPING=1");
    deadline = std::chrono::steady_clock::now() + shutdown_budget;
    mgr_ptr = nullptr;
    if (watch) watch->close();
    hup.cancel();
    watchdog.cancel();
    sampler.cancel();
    listener->close();
    if (recorded) remove_daemon_record(socket_path);
    if (http) http->close();
    mgr.close_sessions();
    mgr.stop();
    runners.stop();
    wait_children();
  });

  run_loop(io, mgr, clients);
  log.info("stopped");
  return 0;
}

}  // namespace mcpmux
