// Benchmark suite: every row measures mcpmuxd and the direct path to the same upstream in one run
// and prints figures (no pass/fail). Rows: floor (plain relays beside mcpmux), calls (latency +
// throughput, attach), audit, node (the same against server-everything), scale, start, payload,
// clients, http, endpoint. tests/bench/run_all.sh runs every row and prints one table and a
// targets block.
#include "bench_common.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <map>

namespace {

// ---------------------------------------------------------------------------------------------
// Output: one table row per line, a target line per target (run_all.sh gathers them).

void row(std::string_view group, std::string_view what, std::string_view mux,
         std::string_view direct, std::string_view cmp = "") {
  fmt::print("{:<9} {:<46} {:>16} {:>16} {:>18}\n", group, what, mux, direct, cmp);
  std::fflush(stdout);
}

void target(std::string_view what, std::string_view limit, std::string_view value, bool met) {
  fmt::print("target: {:<52} {:<12} {:>14}   {}\n", what, limit, value, met ? "met" : "MISSED");
  std::fflush(stdout);
}

std::string us(double v) {
  return fmt::format("{:.1f} µs", v);
}
std::string ms(double v) {
  return fmt::format("{:.1f} ms", v);
}
std::string mib(double kib) {
  return fmt::format("{:.1f} MiB", kib / 1024.0);
}
std::string per_s(double v) {
  return fmt::format("{:.0f}/s", v);
}

double since_ms(clk::time_point t0) {
  return std::chrono::duration<double, std::milli>(clk::now() - t0).count();
}

// CPU time of every thread of `pid` in seconds, from /proc/PID/task/*/schedstat (ns resolution;
// /proc/PID/stat only counts clock ticks).
double cpu_ns_seconds(pid_t pid) {
  double total = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fmt::format("/proc/{}/task", pid), ec)) {
    std::ifstream f(e.path() / "schedstat");
    double ns = 0;
    if (f >> ns) total += ns;
  }
  if (total == 0) return cpu_seconds(pid);
  return total * 1e-9;
}

// CPU time of the main thread of `pid` alone (mcpmuxd's event loop), in seconds.
double loop_cpu_seconds(pid_t pid) {
  std::ifstream f(fmt::format("/proc/{}/task/{}/schedstat", pid, pid));
  double ns = 0;
  f >> ns;
  return ns * 1e-9;
}

// Resets VmHWM of `pid` to its current RSS (clear_refs "5").
void reset_hwm(pid_t pid) {
  std::ofstream f(fmt::format("/proc/{}/clear_refs", pid));
  f << "5\n";
}

// ---------------------------------------------------------------------------------------------
// Daemon with a free-form config

struct bench_env {
  std::string mcpmuxd, fake, node_entry;
  std::string mcpmux, relay;  ///< the CLI (for `mcpmux connect`) and the plain relay (floor row)
  std::size_t calls = 20000;
  int reps = 3;
  fs::path tmp;
};

// Writes `config` and starts mcpmuxd on tmp/stem.sock, with $XDG_CACHE_HOME = `cache_home` (and
// its state store beside it).
// Returns the exec time.
clk::time_point start_mux(daemon_handle& d, const bench_env& e, const std::string& stem,
                          const std::string& config, const fs::path& cache_home) {
  const auto cfg = e.tmp / (stem + ".toml");
  {
    std::ofstream f(cfg);
    f << config;
    if (!f) fail("cannot write " + cfg.string());
  }
  fs::create_directories(cache_home);
  ::setenv("XDG_CACHE_HOME", cache_home.c_str(), 1);
  ::setenv("XDG_STATE_HOME", (cache_home / "state").c_str(), 1);
  d.socket = (e.tmp / (stem + ".sock")).string();
  std::error_code ec;
  fs::remove(d.socket, ec);
  const auto log = (e.tmp / (stem + ".log")).string();
  const auto t0 = clk::now();
  d.proc.spawn({e.mcpmuxd, "--config", cfg.string(), "--socket", d.socket}, false, log, log);
  return t0;
}

std::string daemon_section(std::string_view extra = "") {
  return fmt::format("[daemon]\nlog_level = \"warn\"\ntimeout_ms = 120000\n{}\n", extra);
}

std::string stdio_server(std::string_view name, const std::string& fake,
                         const std::vector<std::string>& args = {}) {
  std::string s = fmt::format("\n[servers.{}]\ncommand = {}\n", name, toml_string(fake));
  if (!args.empty()) {
    s += "args = [";
    for (std::size_t i = 0; i < args.size(); ++i) s += (i ? ", " : "") + toml_string(args[i]);
    s += "]\n";
  }
  return s;
}

line_conn connect_retry(const std::string& path, clk::duration max) {
  const auto until = clk::now() + max;
  for (;;) {
    try {
      return line_conn::connect_unix(path);
    } catch (const std::exception&) {
      if (clk::now() >= until) throw;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
}

// Best of `reps` by a key (higher is better).
template <class F, class K>
figures best_of(int reps, F&& f, K&& key) {
  figures best;
  bool have = false;
  for (int r = 0; r < reps; ++r) {
    figures x = f();
    if (!have || key(x) > key(best)) best = x, have = true;
  }
  return best;
}

// ---------------------------------------------------------------------------------------------
// Floor: what a hop costs at the least. A plain relay (tests/bench/relay.cpp: read → write, no
// parsing) between the same client and the fake, once and twice, beside mcpmux with the client
// on its socket (one hop) and through `mcpmux connect` (two hops), interleaved in one run.

void row_floor(const bench_env& e) {
  if (e.relay.empty() || e.mcpmux.empty()) {
    fmt::print("floor     skipped: needs --relay and --mcpmux\n");
    return;
  }
  struct path {
    std::string name;
    child proc;  ///< the process at the near end (none for the socket)
    std::unique_ptr<line_conn> conn;
    std::string tool = "echo";
    std::int64_t id = 1;
    figures seq, wide;
  };
  std::vector<path> paths(6);
  const std::vector<std::vector<std::string>> argvs = {
      {e.fake}, {e.relay, e.fake}, {e.relay, e.relay, e.fake}};
  const char* names[] = {"direct",     "relay x1",    "relay x2",
                         "mux socket", "mux connect", "relay x1 socket"};
  for (std::size_t i = 0; i < paths.size(); ++i) paths[i].name = names[i];
  for (std::size_t i = 0; i < argvs.size(); ++i) {
    paths[i].proc.spawn(argvs[i], true, "", "/dev/null");
    paths[i].conn =
        std::make_unique<line_conn>(paths[i].proc.from_child(), paths[i].proc.to_child(), false);
  }
  daemon_handle d;
  start_mux(d, e, "floor", daemon_section() + stdio_server("f", e.fake), e.tmp / "cache-floor");
  wait_ready(d, 1, e.tmp / "floor.log");
  paths[3].conn = std::make_unique<line_conn>(line_conn::connect_unix(d.socket));
  paths[4].proc.spawn({e.mcpmux, "--socket", d.socket, "connect"}, true, "", "/dev/null");
  paths[4].conn =
      std::make_unique<line_conn>(paths[4].proc.from_child(), paths[4].proc.to_child(), false);
  // The same relay with its client on a Unix socket: the floor for the socket row's medium.
  const auto relay_socket = (e.tmp / "relay.sock").string();
  paths[5].proc.spawn({e.relay, "--listen", relay_socket, e.fake}, false, "/dev/null", "/dev/null");
  paths[5].conn = std::make_unique<line_conn>(connect_retry(relay_socket, std::chrono::seconds(5)));
  const std::size_t n = e.calls;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    if (i == 3 || i == 4) paths[i].tool = "f__echo";  // through mcpmux
    paths[i].conn->mcp_handshake();
    warm_up({paths[i].conn.get()}, paths[i].tool, paths[i].id, std::min<std::size_t>(2000, n / 4));
  }
  // Interleaved rounds, best of each: background load hits every path alike.
  const int reps = std::max(3, e.reps);
  for (int r = 0; r < reps; ++r)
    for (auto& p : paths) {
      figures s = run_calls(p.name, {p.conn.get()}, 1, p.tool, p.id, n);
      figures w = run_calls(p.name, {p.conn.get()}, 16, p.tool, p.id, n);
      if (r == 0 || s.p50_us < p.seq.p50_us) p.seq = s;
      if (r == 0 || w.calls_per_s > p.wide.calls_per_s) p.wide = w;
    }
  const double base = paths[0].seq.p50_us;
  for (auto& p : paths)
    row("floor", fmt::format("{}: seq p50 / calls/s at 16", p.name),
        fmt::format("{:.1f} µs / {}", p.seq.p50_us, per_s(p.wide.calls_per_s)),
        p.name == "direct" ? "-" : fmt::format("+{:.1f} µs", p.seq.p50_us - base));
  auto compare = [&](const path& mux, const path& relay, std::string_view hops) {
    const double mux_add = mux.seq.p50_us - base, relay_add = relay.seq.p50_us - base;
    const double lat = relay_add > 0 ? mux_add / relay_add : 0;
    const double rate = 100 * mux.wide.calls_per_s / relay.wide.calls_per_s;
    row("floor", fmt::format("{}: added p50, {} vs {}", hops, mux.name, relay.name),
        fmt::format("+{:.1f} µs", mux_add), fmt::format("+{:.1f} µs", relay_add),
        fmt::format("{:.2f}× the relay", lat));
    row("floor", fmt::format("{}: 16 in flight, {} vs {}", hops, mux.name, relay.name),
        per_s(mux.wide.calls_per_s), per_s(relay.wide.calls_per_s),
        fmt::format("{:.0f} % of the relay", rate));
    target(fmt::format("floor: {} added p50 within 1.2× the plain relay", hops), "<= 1.20×",
           fmt::format("{:.2f}×", lat), lat <= 1.2);
    target(fmt::format("floor: {} throughput at 16 in flight vs the plain relay", hops), ">= 95 %",
           fmt::format("{:.0f} %", rate), rate >= 95);
  };
  compare(paths[3], paths[1], "1 hop");
  compare(paths[4], paths[2], "2 hops");
  // Like for like: a Unix socket costs the client and the hop more than a pipe.
  compare(paths[3], paths[5], "1 hop, client on a socket");
  for (auto& p : paths) p.conn.reset();
  for (auto& p : paths) p.proc.stop();
  d.proc.stop();
}

// ---------------------------------------------------------------------------------------------
// Rows 1 and 2: latency and throughput

void row_calls(const bench_env& e) {
  const std::size_t n = e.calls;
  child fake;
  fake.spawn({e.fake}, true, "", "/dev/null");
  line_conn direct(fake.from_child(), fake.to_child(), false);
  direct.mcp_handshake();
  std::int64_t did = 1;

  daemon_handle d;
  start_mux(d, e, "calls", daemon_section() + stdio_server("f", e.fake), e.tmp / "cache-calls");
  wait_ready(d, 1, e.tmp / "calls.log");
  std::vector<line_conn> conns;
  for (int i = 0; i < 16; ++i) {
    conns.push_back(line_conn::connect_unix(d.socket));
    conns.back().mcp_handshake();
  }
  std::int64_t mid = 1;
  const std::size_t warm = std::min<std::size_t>(2000, n / 4);
  warm_up({&direct}, "echo", did, warm);
  {
    std::vector<line_conn*> all;
    for (auto& c : conns) all.push_back(&c);
    warm_up(all, "f__echo", mid, warm);
  }

  // The upstream fake's pid, for its CPU per call.
  const auto st = conns[0].call(mid++, "mcpmux/status", json::object{});
  const auto up_pid =
      static_cast<pid_t>(st.at("servers").as_array().at(0).at("pid").to_number<std::int64_t>());
  const double dn = static_cast<double>(n);
  auto run_direct = [&](std::size_t depth) {
    const double fb = cpu_ns_seconds(fake.pid());
    figures f = run_calls("direct", {&direct}, depth, "echo", did, n);
    f.upstream_cpu_us = (cpu_ns_seconds(fake.pid()) - fb) * 1e6 / dn;
    return f;
  };
  auto run_mux = [&](std::size_t clients, std::size_t in_flight) {
    std::vector<line_conn*> cs;
    for (std::size_t i = 0; i < clients; ++i) cs.push_back(&conns[i]);
    const double before = cpu_ns_seconds(d.proc.pid()), fb = cpu_ns_seconds(up_pid);
    figures f = run_calls("mux", cs, in_flight / clients, "f__echo", mid, n);
    f.daemon_cpu_us = (cpu_ns_seconds(d.proc.pid()) - before) * 1e6 / dn;
    f.upstream_cpu_us = (cpu_ns_seconds(up_pid) - fb) * 1e6 / dn;
    return f;
  };
  // CPU per call of the bench client / mcpmuxd / the fake: on a saturated machine throughput is
  // bounded by their sum, so this row explains the throughput ratio.
  auto cpu_split = [](const figures& f) {
    return fmt::format("{:.1f}/{}/{:.1f}", f.client_cpu_us,
                       f.daemon_cpu_us ? fmt::format("{:.1f}", *f.daemon_cpu_us) : std::string("-"),
                       f.upstream_cpu_us.value_or(0));
  };
  // Interleave direct and mux so that background load hits both alike; keep the best of reps.
  auto low_p50 = [](const figures& f) { return -f.p50_us; };
  auto high_rate = [](const figures& f) { return f.calls_per_s; };

  // 1. Latency
  figures ds, ms_;
  {
    std::vector<figures> dv, mv;
    for (int r = 0; r < std::max(5, e.reps); ++r) {
      dv.push_back(run_direct(1));
      mv.push_back(run_mux(1, 1));
    }
    ds = *std::max_element(dv.begin(), dv.end(),
                           [&](auto& a, auto& b) { return low_p50(a) < low_p50(b); });
    ms_ = *std::max_element(mv.begin(), mv.end(),
                            [&](auto& a, auto& b) { return low_p50(a) < low_p50(b); });
  }
  const double over50 = ms_.p50_us - ds.p50_us, over99 = ms_.p99_us - ds.p99_us;
  row("latency", "sequential tools/call echo: p50", us(ms_.p50_us), us(ds.p50_us),
      fmt::format("+{:.1f} µs", over50));
  row("latency", "sequential tools/call echo: p99", us(ms_.p99_us), us(ds.p99_us),
      fmt::format("+{:.1f} µs", over99));
  row("latency", "sequential: CPU µs/call client/mcpmuxd/fake", cpu_split(ms_), cpu_split(ds));

  // 2. Throughput
  struct combo {
    std::size_t in_flight, clients;
  };
  const combo combos[] = {{1, 1}, {16, 1}, {16, 4}, {16, 16}, {64, 1}, {64, 4}, {64, 16}};
  std::map<std::size_t, figures> dbest;
  double ratio16 = 1e9, cpu16 = 0, cpu_max = 0;
  for (const auto& c : combos) {
    figures db, mb;
    bool have = false;
    for (int r = 0; r < e.reps; ++r) {
      figures df = run_direct(c.in_flight);
      figures mf = run_mux(c.clients, c.in_flight);
      if (!have || high_rate(df) > high_rate(db)) db = df;
      if (!have || high_rate(mf) > high_rate(mb)) mb = mf;
      have = true;
    }
    if (dbest.count(c.in_flight) == 0 || high_rate(db) > high_rate(dbest[c.in_flight]))
      dbest[c.in_flight] = db;
    const double ratio = mb.calls_per_s / db.calls_per_s;
    row("through", fmt::format("{:>2} in flight, {:>2} client(s): calls/s", c.in_flight, c.clients),
        per_s(mb.calls_per_s), per_s(db.calls_per_s),
        fmt::format("{:.0f} % of direct", ratio * 100));
    row("through",
        fmt::format("{:>2} in flight, {:>2} client(s): p50 / p99", c.in_flight, c.clients),
        fmt::format("{:.0f}/{:.0f} µs", mb.p50_us, mb.p99_us),
        fmt::format("{:.0f}/{:.0f} µs", db.p50_us, db.p99_us));
    row("through",
        fmt::format("{:>2} in flight, {:>2} client(s): CPU µs/call cl/mux/fake", c.in_flight,
                    c.clients),
        cpu_split(mb), cpu_split(db),
        fmt::format("sum {:.1f} vs {:.1f}",
                    mb.client_cpu_us + *mb.daemon_cpu_us + *mb.upstream_cpu_us,
                    db.client_cpu_us + *db.upstream_cpu_us));
    if (c.in_flight == 16) {
      ratio16 = std::min(ratio16, ratio);
      cpu16 = std::max(cpu16, *mb.daemon_cpu_us);
    }
    cpu_max = std::max(cpu_max, *mb.daemon_cpu_us);
  }
  target("calls: overhead per call at p50 (sequential)", "<= 30 µs",
         fmt::format("{:.1f} µs", over50), over50 <= 30);
  target("calls: throughput at 16 in flight (worst of 1/4/16 clients)", ">= 90 %",
         fmt::format("{:.0f} %", ratio16 * 100), ratio16 >= 0.90);
  target("calls: mcpmuxd CPU per call at 16 in flight (worst)", "<= 15 µs",
         fmt::format("{:.1f} µs", cpu16), cpu16 <= 15);
  target("calls: mcpmuxd CPU per call, any row (worst)", "<= 15 µs",
         fmt::format("{:.1f} µs", cpu_max), cpu_max <= 15);

  // 3. Attach: a new client on the running daemon — connect, initialize, tools/list — as an
  // agent does at its start. Wall time at the client, and the daemon's CPU per attach.
  {
    constexpr int attaches = 200;
    std::vector<double> wall_us;
    const double before = cpu_ns_seconds(d.proc.pid());
    for (int i = 0; i < attaches; ++i) {
      const auto t0 = clk::now();
      auto c = line_conn::connect_unix(d.socket);
      c.mcp_handshake();
      const auto list = c.call(1, "tools/list", json::object{});
      if (!list.is_object() || !list.as_object().contains("tools")) fail("attach: no tool list");
      wall_us.push_back(std::chrono::duration<double, std::micro>(clk::now() - t0).count());
    }
    const double cpu_ms = (cpu_ns_seconds(d.proc.pid()) - before) * 1e3 / attaches;
    std::sort(wall_us.begin(), wall_us.end());
    const double p50 = wall_us[wall_us.size() / 2], p99 = wall_us[wall_us.size() * 99 / 100];
    row("attach", "connect + initialize + tools/list: p50 / p99",
        fmt::format("{:.0f}/{:.0f} µs", p50, p99), "-");
    row("attach", "the same: mcpmuxd CPU per attach", fmt::format("{:.3f} ms", cpu_ms), "-");
    target("attach: mcpmuxd time per attach (CPU)", "<= 5 ms", fmt::format("{:.3f} ms", cpu_ms),
           cpu_ms <= 5);
    target("attach: wall time per attach at p99", "<= 5 ms", fmt::format("{:.2f} ms", p99 / 1e3),
           p99 <= 5000);
  }
  conns.clear();
  d.proc.stop();
}

// ---------------------------------------------------------------------------------------------
// Row 3: scale

struct list_answer {
  std::size_t tools = 0;
  std::size_t bytes = 0;
  std::string next_cursor;
  clk::time_point received;  ///< when the whole answer had been read (before it was parsed)
};

// tools/list (one page) by a raw request; returns the count, bytes and next cursor.
list_answer list_page(line_conn& c, std::int64_t id, const std::string& cursor) {
  std::string req =
      fmt::format(R"({{"jsonrpc":"2.0","id":{},"method":"tools/list","params":{{{}}}}})", id,
                  cursor.empty() ? "" : "\"cursor\":" + json::serialize(json::value(cursor)));
  c.write_all(req + "\n");
  for (;;) {
    const auto line = c.read_line();
    if (scan_id(line) != id) continue;
    list_answer a;
    a.received = clk::now();
    a.bytes = line.size() + 1;
    const json::value v = json::parse(line);
    if (const auto* err = v.as_object().if_contains("error"))
      fail("tools/list failed: " + json::serialize(*err));
    const auto& r = v.at("result").as_object();
    a.tools = r.at("tools").as_array().size();
    if (const auto* nc = r.if_contains("nextCursor"); nc && nc->is_string())
      a.next_cursor = std::string(nc->as_string());
    return a;
  }
}

// Every page; returns total tools, bytes and the number of pages.
std::tuple<std::size_t, std::size_t, int> list_all(line_conn& c, std::int64_t& id) {
  std::size_t tools = 0, bytes = 0;
  int pages = 0;
  std::string cursor;
  do {
    const auto a = list_page(c, id++, cursor);
    tools += a.tools;
    bytes += a.bytes;
    ++pages;
    cursor = a.next_cursor;
  } while (!cursor.empty());
  return {tools, bytes, pages};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// "p50/max ms" of repeated measurements (the start rows: "every run" is the max).
std::string p50_max(const std::vector<double>& v) {
  return fmt::format("{:.1f}/{:.1f} ms", median(v), *std::max_element(v.begin(), v.end()));
}

// The audit log's cost: the same calls through a daemon that audits each one (the default) and
// through one with `audit = false`, interleaved; mcpmuxd CPU per call on each.
void row_audit(const bench_env& e) {
  const std::size_t n = e.calls;
  daemon_handle on, off;
  start_mux(on, e, "audit-on", daemon_section() + stdio_server("f", e.fake), e.tmp / "cache-aon");
  start_mux(off, e, "audit-off", daemon_section("audit = false") + stdio_server("f", e.fake),
            e.tmp / "cache-aoff");
  wait_ready(on, 1, e.tmp / "audit-on.log");
  wait_ready(off, 1, e.tmp / "audit-off.log");
  struct side {
    daemon_handle* d;
    std::vector<line_conn> conns;
    std::int64_t id = 1;
  };
  side sides[2] = {{&on, {}}, {&off, {}}};
  for (auto& s : sides) {
    for (int i = 0; i < 16; ++i) {
      s.conns.push_back(line_conn::connect_unix(s.d->socket));
      s.conns.back().mcp_handshake();
    }
    std::vector<line_conn*> all;
    for (auto& c : s.conns) all.push_back(&c);
    warm_up(all, "f__echo", s.id, std::min<std::size_t>(2000, n / 4));
  }
  // The audit log is written on a thread of its own (core/audit_writer): the event loop's CPU
  // is what a call waits for, the process's is what the machine pays.
  struct result {
    figures f;
    double loop_us = 0;
  };
  auto run = [&](side& s, std::size_t clients, std::size_t in_flight) {
    std::vector<line_conn*> cs;
    for (std::size_t i = 0; i < clients; ++i) cs.push_back(&s.conns[i]);
    const pid_t pid = s.d->proc.pid();
    const double before = cpu_ns_seconds(pid), loop_before = loop_cpu_seconds(pid);
    result r{run_calls("audit", cs, in_flight / clients, "f__echo", s.id, n)};
    const double dn = static_cast<double>(n);
    r.f.daemon_cpu_us = (cpu_ns_seconds(pid) - before) * 1e6 / dn;
    r.loop_us = (loop_cpu_seconds(pid) - loop_before) * 1e6 / dn;
    return r;
  };
  for (const auto& [clients, in_flight, what] :
       {std::tuple<std::size_t, std::size_t, const char*>{1, 1, "sequential"},
        {16, 16, "16 in flight, 16 clients"}}) {
    double cpu[2] = {1e9, 1e9}, loop[2] = {1e9, 1e9}, p50[2] = {1e9, 1e9}, p99[2] = {1e9, 1e9},
           rate[2] = {0, 0};
    for (int r = 0; r < std::max(3, e.reps); ++r)
      for (int i = 0; i < 2; ++i) {
        const auto x = run(sides[i], clients, in_flight);
        cpu[i] = std::min(cpu[i], *x.f.daemon_cpu_us);
        loop[i] = std::min(loop[i], x.loop_us);
        p50[i] = std::min(p50[i], x.f.p50_us);
        p99[i] = std::min(p99[i], x.f.p99_us);
        rate[i] = std::max(rate[i], x.f.calls_per_s);
      }
    row("audit", fmt::format("{}: mcpmuxd CPU µs/call, audit on / off", what),
        fmt::format("{:.1f}", cpu[0]), fmt::format("{:.1f}", cpu[1]),
        fmt::format("{:+.1f} µs", cpu[0] - cpu[1]));
    row("audit", fmt::format("{}: event loop CPU µs/call", what), fmt::format("{:.1f}", loop[0]),
        fmt::format("{:.1f}", loop[1]), fmt::format("{:+.1f} µs", loop[0] - loop[1]));
    row("audit", fmt::format("{}: p50 / p99", what),
        fmt::format("{:.1f} / {:.1f} µs", p50[0], p99[0]),
        fmt::format("{:.1f} / {:.1f} µs", p50[1], p99[1]),
        fmt::format("{:+.1f} / {:+.1f} µs", p50[0] - p50[1], p99[0] - p99[1]));
    row("audit", fmt::format("{}: calls/s", what), per_s(rate[0]), per_s(rate[1]),
        fmt::format("{:.0f} %", 100 * rate[0] / rate[1]));
  }
  const auto st =
      sides[0].conns[0].call(sides[0].id++, "mcpmux/history", json::object{{"limit", 1}});
  if (st.at("entries").as_array().empty()) fail("the audit log is empty after the calls");
}

void row_scale(const bench_env& e) {
  constexpr int servers = 100, tools = 100;
  const std::vector<std::string> fake_args = {"--tools", std::to_string(tools), "--no-builtins"};
  std::string servers_toml;
  for (int i = 0; i < servers; ++i)
    servers_toml += stdio_server(fmt::format("s{:03}", i), e.fake, fake_args);
  const std::string cfg_big = daemon_section("page_size = 100000") + servers_toml;
  const std::string cfg_paged = daemon_section() + servers_toml;  // default page_size 1000
  const fs::path cache = e.tmp / "cache-scale";
  const std::size_t want = static_cast<std::size_t>(servers) * tools;

  // Direct: 100 fakes spawned and initialized + listed concurrently, from exec to all listed.
  double direct_ready_ms = 0;
  {
    const auto t0 = clk::now();
    std::vector<std::unique_ptr<child>> kids;
    std::vector<std::unique_ptr<line_conn>> cs;
    std::vector<std::string> argv = {e.fake};
    argv.insert(argv.end(), fake_args.begin(), fake_args.end());
    for (int i = 0; i < servers; ++i) {
      kids.push_back(std::make_unique<child>());
      kids.back()->spawn(argv, true, "", "/dev/null");
      cs.push_back(
          std::make_unique<line_conn>(kids.back()->from_child(), kids.back()->to_child(), false));
    }
    const std::string init =
        R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}})"
        "\n"
        R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
        "\n"
        R"({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}})"
        "\n";
    for (auto& c : cs) c->write_all(init);
    for (auto& c : cs)
      while (scan_id(c->read_line()) != 1) {
      }
    direct_ready_ms = since_ms(t0);
  }

  // mux, cold (empty cache): exec to every server ready.
  double cold_ready_ms = 0;
  {
    daemon_handle d;
    const auto t0 = start_mux(d, e, "scale", cfg_big, cache);
    wait_ready(d, servers, e.tmp / "scale.log", 120);
    cold_ready_ms = since_ms(t0);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // let the cache be written
    d.proc.stop();
  }
  std::size_t cache_files = 0;
  for (const auto& f : fs::recursive_directory_iterator(cache)) cache_files += f.is_regular_file();

  // mux, warm cache: exec to the first tools/list answer holding all tools, as received (parsing
  // a 1 MiB answer here takes this process 10-20 ms that are not the daemon's). Five starts, the
  // daemon stopped in between; the last one goes on to the figures of a running daemon.
  constexpr int warm_starts = 5;
  std::vector<double> first_list, connect, init;
  double first_any_ms = 0, warm_ready_ms = 0;
  std::size_t first_count = 0;
  double list_ms = 0, list_direct_ms = 0;
  std::size_t list_bytes = 0, list_direct_bytes = 0;
  long rss_kib = 0, hwm_kib = 0;
  for (int run = 0; run < warm_starts; ++run) {
    // As systemd restarts a service: once the last instance's processes are gone (the 100
    // servers exit after the daemon).
    wait_gone(e.fake, std::chrono::seconds(10));
    daemon_handle d;
    const auto t0 = start_mux(d, e, "scale", cfg_big, cache);
    auto c = connect_retry(d.socket, std::chrono::seconds(20));
    connect.push_back(since_ms(t0));
    c.mcp_handshake();
    init.push_back(since_ms(t0));
    std::int64_t id = 10;
    for (;;) {
      const auto a = list_page(c, id++, "");
      const auto received_ms = std::chrono::duration<double, std::milli>(a.received - t0).count();
      if (run == 0 && first_any_ms == 0) first_any_ms = received_ms, first_count = a.tools;
      if (a.tools >= want) {
        first_list.push_back(received_ms);
        break;
      }
      if (since_ms(t0) > 120000) fail("tools/list never reached all tools");
    }
    wait_ready(d, servers, e.tmp / "scale.log", 120);
    if (run + 1 < warm_starts) {
      d.proc.stop();
      continue;
    }
    warm_ready_ms = since_ms(t0);
    std::vector<double> lat;
    for (int i = 0; i < 20; ++i) {
      const auto t = clk::now();
      list_bytes = list_page(c, id++, "").bytes;
      lat.push_back(since_ms(t));
    }
    list_ms = median(lat);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    rss_kib = status_kib(d.proc.pid(), "VmRSS:");
    hwm_kib = status_kib(d.proc.pid(), "VmHWM:");
    d.proc.stop();
  }
  const double first_list_max = *std::max_element(first_list.begin(), first_list.end());
  // Direct: one fake with all 10,000 tools, tools/list latency and size.
  {
    child fake;
    fake.spawn({e.fake, "--tools", std::to_string(want), "--no-builtins"}, true, "", "/dev/null");
    line_conn c(fake.from_child(), fake.to_child(), false);
    c.mcp_handshake();
    std::vector<double> lat;
    for (int i = 0; i < 20; ++i) {
      const auto t = clk::now();
      list_direct_bytes = list_page(c, 10 + i, "").bytes;
      lat.push_back(since_ms(t));
    }
    list_direct_ms = median(lat);
  }
  // Paged (page_size 1000): every page, after all ready.
  double paged_ms = 0;
  int pages = 0;
  std::size_t paged_tools = 0, paged_bytes = 0;
  {
    daemon_handle d;
    start_mux(d, e, "scale-paged", cfg_paged, cache);
    wait_ready(d, servers, e.tmp / "scale-paged.log", 120);
    auto c = connect_retry(d.socket, std::chrono::seconds(5));
    c.mcp_handshake();
    std::int64_t id = 10;
    std::vector<double> lat;
    for (int i = 0; i < 10; ++i) {
      const auto t = clk::now();
      std::tie(paged_tools, paged_bytes, pages) = list_all(c, id);
      lat.push_back(since_ms(t));
    }
    paged_ms = median(lat);
    d.proc.stop();
  }
  // Idle RSS with 10 servers (default fake, builtins).
  long idle_rss = 0, idle_hwm = 0;
  {
    daemon_handle d;
    std::string cfg = daemon_section();
    for (int i = 0; i < 10; ++i) cfg += stdio_server(fmt::format("f{}", i), e.fake);
    start_mux(d, e, "idle10", cfg, e.tmp / "cache-idle");
    wait_ready(d, 10, e.tmp / "idle10.log");
    std::this_thread::sleep_for(std::chrono::seconds(1));
    idle_rss = status_kib(d.proc.pid(), "VmRSS:");
    idle_hwm = status_kib(d.proc.pid(), "VmHWM:");
    d.proc.stop();
  }

  row("scale", "100×100 tools: start to all ready (cold cache)", ms(cold_ready_ms),
      ms(direct_ready_ms), "direct: 100 fakes listed");
  row("scale", "start to all ready (warm cache)", ms(warm_ready_ms), "-");
  row("scale", fmt::format("start to first tools/list with all 10,000, p50/max of {}", warm_starts),
      p50_max(first_list), "-", fmt::format("{} files in the cache and state dirs", cache_files));
  row("scale", "start to socket connected (warm cache), p50/max", p50_max(connect), "-");
  row("scale", "start to initialize answered (warm cache), p50/max", p50_max(init), "-");
  row("scale", "start to first tools/list answer (any)", ms(first_any_ms), "-",
      fmt::format("{} tools in it", first_count));
  row("scale", "tools/list 10,000 tools, one page: latency", ms(list_ms), ms(list_direct_ms),
      "direct: 1 fake");
  row("scale", "tools/list 10,000 tools, one page: size", mib(list_bytes / 1024.0),
      mib(list_direct_bytes / 1024.0));
  row("scale", fmt::format("tools/list paged (page_size 1000): {} pages", pages), ms(paged_ms), "-",
      fmt::format("{} tools, {}", paged_tools, mib(paged_bytes / 1024.0)));
  row("scale", "mcpmuxd RSS, 100 servers ready (VmRSS/VmHWM)",
      fmt::format("{:.1f}/{:.1f} MiB", rss_kib / 1024.0, hwm_kib / 1024.0), "-");
  row("scale", "mcpmuxd idle RSS, 10 servers (VmRSS/VmHWM)",
      fmt::format("{:.1f}/{:.1f} MiB", idle_rss / 1024.0, idle_hwm / 1024.0), "-");
  target("scale: cached tools served after start, every run", "<= 20 ms", ms(first_list_max),
         first_list_max <= 20);
  target("scale: RSS with 100 servers × 100 tools", "<= 64 MiB", mib(rss_kib),
         rss_kib <= 64 * 1024);
  target("scale: idle RSS with 10 servers", "<= 8 MiB", mib(idle_rss), idle_rss <= 8 * 1024);
}

// ---------------------------------------------------------------------------------------------
// Start: the first tools/list after launch with a typical configuration (10 servers, their tools
// cached by an earlier run), every run, two ways: mcpmuxd launched and a client on its socket
// as soon as it listens; and an agent starting with no daemon running, whose
// `mcpmux connect --spawn` starts mcpmuxd (launch of `mcpmux connect` to the answer). The daemon
// is stopped between runs.

// Stops the daemon on `socket` by the pid it reports (mcpmux/status) and waits until it is gone.
void stop_daemon_on(const std::string& socket) {
  auto c = line_conn::connect_unix(socket);
  const auto st = c.call(1, "mcpmux/status", json::object{});
  const auto pid = static_cast<pid_t>(st.at("pid").to_number<std::int64_t>());
  ::kill(pid, SIGTERM);
  const auto until = clk::now() + std::chrono::seconds(10);
  // Not always our child: gone when kill() finds nothing or a zombie not yet reaped.
  auto gone = [pid] {
    if (::kill(pid, 0) != 0) return true;
    std::ifstream f(fmt::format("/proc/{}/stat", pid));
    std::string line;
    std::getline(f, line);
    const auto paren = line.rfind(')');
    return paren == std::string::npos || line.substr(paren + 2, 1) == "Z";
  };
  while (!gone()) {
    if (clk::now() > until) fail("the daemon did not stop");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

void row_start(const bench_env& e) {
  if (e.mcpmux.empty()) {
    fmt::print("start     skipped: needs --mcpmux\n");
    return;
  }
  constexpr int servers = 10;
  const auto home = e.tmp / "start-home";
  std::string cfg_text = daemon_section();
  for (int i = 0; i < servers; ++i) cfg_text += stdio_server(fmt::format("s{}", i), e.fake);
  const auto cfg = e.tmp / "start.toml";
  std::ofstream(cfg) << cfg_text;
  const std::string hello =
      R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"agent","version":"1"}}})"
      "\n"
      R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
      "\n"
      R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})"
      "\n";
  std::size_t tools = 0;
  // Sends the agent's first lines on `c`; the time from t0 to the tools/list answer.
  auto first_list = [&](line_conn& c, clk::time_point t0) {
    c.write_all(hello);
    std::string_view line;
    while (scan_id(line = c.read_line()) != 1) {
    }
    const double took = since_ms(t0);
    tools = json::parse(line).at("result").at("tools").as_array().size();
    return took;
  };
  // mcpmuxd launched by us, a client on its socket.
  auto launched = [&] {
    wait_gone(e.fake, std::chrono::seconds(10));  // as systemd restarts a service (row_scale)
    daemon_handle d;
    const auto t0 = start_mux(d, e, "start", cfg_text, home);
    auto c = connect_retry(d.socket, std::chrono::seconds(10));
    const double took = first_list(c, t0);
    d.proc.stop();
    return took;
  };
  // An agent's mcpmux connect --spawn; `settle`: wait for every server to be ready (the cache
  // written) before stopping the daemon.
  const std::string socket = (e.tmp / "start-spawned.sock").string();
  auto spawned = [&](bool settle) {
    ::setenv("MCPMUX_CONFIG", cfg.c_str(), 1);
    ::setenv("XDG_CACHE_HOME", home.c_str(), 1);
    ::setenv("XDG_STATE_HOME", (home / "state").c_str(), 1);
    wait_gone(e.fake, std::chrono::seconds(10));
    child agent;
    const auto t0 = clk::now();
    agent.spawn({e.mcpmux, "--socket", socket, "connect", "--spawn"}, true, "",
                (e.tmp / "start-agent.err").string());
    line_conn c(agent.from_child(), agent.to_child(), false);
    const double took = first_list(c, t0);
    if (settle) {
      wait_ready(
          socket, [] { return true; }, servers, home / "state/mcpmux/mcpmuxd.log");
      std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the cache rows written
    }
    stop_daemon_on(socket);
    agent.stop();
    ::unsetenv("MCPMUX_CONFIG");
    return took;
  };
  const double cold = spawned(true);
  const std::size_t cold_tools = tools;
  std::vector<double> on_socket, through_connect;
  for (int i = 0; i < std::max(10, 2 * e.reps); ++i) {
    on_socket.push_back(launched());
    through_connect.push_back(spawned(false));
  }
  std::sort(on_socket.begin(), on_socket.end());
  std::sort(through_connect.begin(), through_connect.end());
  row("start",
      fmt::format("{} servers cached: first tools/list, p50/max of {}", servers, on_socket.size()),
      "", "", fmt::format("{} tools", tools));
  row("start", "mcpmuxd launched, a client on its socket", p50_max(on_socket), "-",
      fmt::format("min {:.1f} ms", on_socket.front()));
  row("start", "an agent's mcpmux connect --spawn, no daemon", p50_max(through_connect), "-",
      fmt::format("min {:.1f} ms", through_connect.front()));
  row("start", "the same, empty cache (servers' own lists)", ms(cold), "-",
      fmt::format("{} tools", cold_tools));
  target("start: first tools/list after launch, every run", "<= 20 ms", ms(on_socket.back()),
         on_socket.back() <= 20);
  target("start: an agent spawning the daemon, every run", "<= 20 ms", ms(through_connect.back()),
         through_connect.back() <= 20);
}

// ---------------------------------------------------------------------------------------------
// Row 4: big payloads

void row_payload(const bench_env& e) {
  constexpr std::size_t payload = std::size_t{10} << 20;
  const std::string text(payload, 'a');
  const std::string args_text = "{\"text\":\"" + text + "\"}";
  const std::string args_blob = "{\"blob\":\"" + text + "\"}";
  const int reps = std::max(3, e.reps);

  // f: echo and a generic tool with a small answer; g: a generic tool answering 10 MiB.
  const std::vector<std::string> f_args = {"--tools", "1"};
  const std::vector<std::string> g_args = {"--tools", "1", "--result-bytes",
                                           std::to_string(payload)};
  child fake, fake_g;
  fake.spawn({e.fake, f_args[0], f_args[1]}, true, "", "/dev/null");
  fake_g.spawn({e.fake, g_args[0], g_args[1], g_args[2], g_args[3]}, true, "", "/dev/null");
  line_conn direct(fake.from_child(), fake.to_child(), false);
  direct.mcp_handshake();
  line_conn direct_g(fake_g.from_child(), fake_g.to_child(), false);
  direct_g.mcp_handshake();

  daemon_handle d;
  start_mux(d, e, "payload",
            daemon_section("max_message_bytes = 67108864\nmax_client_queue_bytes = 268435456\n"
                           "max_result_bytes = 0") +
                stdio_server("f", e.fake, f_args) + stdio_server("g", e.fake, g_args),
            e.tmp / "cache-payload");
  wait_ready(d, 2, e.tmp / "payload.log");
  auto c = line_conn::connect_unix(d.socket);
  c.mcp_handshake();
  std::int64_t id = 1;
  // Warm both with one small call.
  run_calls("w", {&direct}, 1, "echo", id, 10);
  run_calls("w", {&c}, 1, "f__echo", id, 10);
  const long base_kib = status_kib(d.proc.pid(), "VmRSS:");

  struct res {
    double mux_ms = 0, direct_ms = 0;
    long hwm_kib = 0;
    std::size_t reply_bytes = 0;
  };
  auto measure = [&](line_conn& dconn, std::string_view tool_direct, std::string_view tool_mux,
                     const std::string& args) {
    res r;
    std::vector<double> mt, dt;
    for (int i = 0; i < reps; ++i) {
      auto t = clk::now();
      run_calls("p", {&dconn}, 1, tool_direct, id, 1, args);
      dt.push_back(since_ms(t));
      reset_hwm(d.proc.pid());
      t = clk::now();
      run_calls("p", {&c}, 1, tool_mux, id, 1, args);
      mt.push_back(since_ms(t));
      r.hwm_kib = std::max(r.hwm_kib, status_kib(d.proc.pid(), "VmHWM:"));
    }
    r.mux_ms = median(mt);
    r.direct_ms = median(dt);
    return r;
  };
  const res big_result = measure(direct_g, "tool_0", "g__tool_0", "{}");
  const res big_arg = measure(direct, "tool_0", "f__tool_0", args_blob);
  const res big_echo = measure(direct, "echo", "f__echo", args_text);
  const long after_kib = status_kib(d.proc.pid(), "VmRSS:");
  d.proc.stop();

  row("payload", "10 MiB result, small request: time", ms(big_result.mux_ms),
      ms(big_result.direct_ms),
      fmt::format("+{:.1f} ms", big_result.mux_ms - big_result.direct_ms));
  row("payload", "10 MiB result: mcpmuxd peak RSS (VmHWM)", mib(big_result.hwm_kib), "-",
      fmt::format("{:.1f}× payload", big_result.hwm_kib / 1024.0 / 10.0));
  row("payload", "10 MiB argument, small reply: time", ms(big_arg.mux_ms), ms(big_arg.direct_ms),
      fmt::format("+{:.1f} ms", big_arg.mux_ms - big_arg.direct_ms));
  row("payload", "10 MiB argument: mcpmuxd peak RSS (VmHWM)", mib(big_arg.hwm_kib), "-",
      fmt::format("{:.1f}× payload", big_arg.hwm_kib / 1024.0 / 10.0));
  row("payload", "echo 10 MiB in, ~20 MiB out: time", ms(big_echo.mux_ms), ms(big_echo.direct_ms),
      fmt::format("+{:.1f} ms", big_echo.mux_ms - big_echo.direct_ms));
  row("payload", "echo 10 MiB in, ~20 MiB out: peak RSS (VmHWM)", mib(big_echo.hwm_kib), "-",
      fmt::format("{:.1f}× its 30 MiB", big_echo.hwm_kib / 1024.0 / 30.0));
  row("payload", "mcpmuxd RSS before / after the big calls",
      fmt::format("{:.1f}/{:.1f} MiB", base_kib / 1024.0, after_kib / 1024.0), "-");
  target("payload: peak RSS, 10 MiB result", "<= 40 MiB", mib(big_result.hwm_kib),
         big_result.hwm_kib <= 40 * 1024);
  target("payload: peak RSS, 10 MiB argument", "<= 40 MiB", mib(big_arg.hwm_kib),
         big_arg.hwm_kib <= 40 * 1024);
}

// ---------------------------------------------------------------------------------------------
// Row 5: many clients

void row_clients(const bench_env& e) {
  constexpr std::size_t total = 500, active = 50;
  const std::size_t n = e.calls;
  child fake;
  fake.spawn({e.fake}, true, "", "/dev/null");
  line_conn direct(fake.from_child(), fake.to_child(), false);
  direct.mcp_handshake();
  std::int64_t did = 1;

  daemon_handle d;
  start_mux(d, e, "clients", daemon_section() + stdio_server("f", e.fake), e.tmp / "cache-clients");
  wait_ready(d, 1, e.tmp / "clients.log");
  std::int64_t mid = 1;
  {  // warm the daemon with one client that then leaves
    auto w = line_conn::connect_unix(d.socket);
    w.mcp_handshake();
    warm_up({&w}, "f__echo", mid, 2000);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const long rss0 = status_kib(d.proc.pid(), "VmRSS:");

  std::vector<line_conn> conns;
  conns.reserve(total);
  const double cpu0 = cpu_ns_seconds(d.proc.pid());
  const auto t0 = clk::now();
  const std::string init =
      R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}})"
      "\n"
      R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
      "\n";
  for (std::size_t i = 0; i < total; ++i) {
    conns.push_back(line_conn::connect_unix(d.socket));
    conns.back().write_all(init);
  }
  for (auto& c : conns)
    while (scan_id(c.read_line()) != 0) {
    }
  const double connect_ms = since_ms(t0);
  const double connect_cpu_us = (cpu_ns_seconds(d.proc.pid()) - cpu0) * 1e6 / total;
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const long rss500 = status_kib(d.proc.pid(), "VmRSS:");

  std::vector<line_conn*> act;
  for (std::size_t i = 0; i < active; ++i) act.push_back(&conns[i * (total / active)]);
  warm_up({&direct}, "echo", did, 2000);
  warm_up(act, "f__echo", mid, 2000);
  figures mb, db;
  for (int r = 0; r < e.reps; ++r) {
    figures df = run_calls("direct", {&direct}, active, "echo", did, n);
    const double before = cpu_ns_seconds(d.proc.pid());
    figures mf = run_calls("mux", act, 1, "f__echo", mid, n);
    mf.daemon_cpu_us = (cpu_ns_seconds(d.proc.pid()) - before) * 1e6 / static_cast<double>(n);
    if (r == 0 || df.calls_per_s > db.calls_per_s) db = df;
    if (r == 0 || mf.calls_per_s > mb.calls_per_s) mb = mf;
  }
  const long rss_busy = status_kib(d.proc.pid(), "VmRSS:");
  conns.clear();
  d.proc.stop();

  const double per_session_kib = static_cast<double>(rss500 - rss0) / total;
  row("clients", "500 sessions: connect + initialize all", ms(connect_ms), "-",
      fmt::format("mcpmuxd {:.0f} µs CPU/session", connect_cpu_us));
  row("clients", "mcpmuxd RSS with 0 / 500 idle sessions",
      fmt::format("{:.1f}/{:.1f} MiB", rss0 / 1024.0, rss500 / 1024.0), "-",
      fmt::format("{:.1f} KiB/session", per_session_kib));
  row("clients", "50 of 500 active (1 in flight each): calls/s", per_s(mb.calls_per_s),
      per_s(db.calls_per_s),
      fmt::format("{:.0f} % of direct", 100 * mb.calls_per_s / db.calls_per_s));
  row("clients", "50 active: p50 / p99 latency",
      fmt::format("{:.0f}/{:.0f} µs", mb.p50_us, mb.p99_us),
      fmt::format("{:.0f}/{:.0f} µs", db.p50_us, db.p99_us), "direct: 50 in flight");
  row("clients", "50 active: mcpmuxd CPU per call", us(*mb.daemon_cpu_us), "-");
  row("clients", "mcpmuxd RSS after the active phase", mib(rss_busy), "-");
}

// ---------------------------------------------------------------------------------------------
// Row 6: HTTP upstream (server-everything, streamableHttp)

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) fail_errno("bind");
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

// A minimal keep-alive HTTP/1.1 client for one MCP Streamable HTTP endpoint: POST a JSON-RPC
// message, read a JSON or SSE reply (Content-Length or chunked), keep Mcp-Session-Id.
class http_client {
 public:
  http_client(int port) : port_(port) { connect(); }
  ~http_client() {
    if (fd_ >= 0) ::close(fd_);
  }

  // POSTs `body`; returns the JSON-RPC message with `id` from the reply ("" for 202).
  // `answered` is set when the reply is complete: for an SSE body, as soon as the event carrying
  // `id` has arrived (like a streaming client, not at the end of the stream).
  std::string post(const std::string& body, std::optional<std::int64_t> id,
                   clk::time_point* answered = nullptr) {
    std::string req = fmt::format(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
        port_, body.size());
    if (!session_.empty())
      req += "Mcp-Session-Id: " + session_ + "\r\nMCP-Protocol-Version: 2025-11-25\r\n";
    req += "\r\n" + body;
    reconnect_if_closed();  // the server closes idle keep-alive connections (Node: after 5 s)
    write_all(req);
    // Headers.
    std::size_t hend;
    while ((hend = buf_.find("\r\n\r\n")) == std::string::npos) fill();
    const std::string head = buf_.substr(0, hend);
    buf_.erase(0, hend + 4);
    const int status = std::atoi(head.c_str() + 9);
    std::string lower = head;
    for (auto& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    auto header = [&](std::string_view name) -> std::string {
      const auto p = lower.find(std::string("\r\n") + std::string(name) + ":");
      if (p == std::string::npos) return "";
      auto b = p + 3 + name.size();
      while (b < head.size() && head[b] == ' ') ++b;
      return head.substr(b, head.find("\r\n", b) - b);
    };
    if (auto s = header("mcp-session-id"); !s.empty()) session_ = s;
    std::string body_out;
    bool have_answer = false;
    if (lower.find("transfer-encoding: chunked") != std::string::npos) {
      for (;;) {
        std::size_t le;
        while ((le = buf_.find("\r\n")) == std::string::npos) fill();
        const std::size_t sz = std::strtoul(buf_.c_str(), nullptr, 16);
        while (buf_.size() < le + 2 + sz + 2) fill();
        body_out.append(buf_, le + 2, sz);
        buf_.erase(0, le + 2 + sz + 2);
        if (answered && id && !have_answer && body_out.find("\n\n") != std::string::npos &&
            body_out.find(fmt::format("\"id\":{}", *id)) != std::string::npos) {
          *answered = clk::now();
          have_answer = true;
        }
        if (sz == 0) break;
      }
    } else {
      const std::size_t len = std::strtoul(header("content-length").c_str(), nullptr, 10);
      while (buf_.size() < len) fill();
      body_out = buf_.substr(0, len);
      buf_.erase(0, len);
    }
    if (answered && !have_answer) *answered = clk::now();
    if (status == 202) return "";
    if (status != 200) fail(fmt::format("HTTP {}: {}", status, body_out));
    if (!id) return body_out;
    if (header("content-type").find("text/event-stream") == std::string::npos) return body_out;
    // SSE: the data line carrying our id.
    std::size_t p = 0;
    while ((p = body_out.find("data:", p)) != std::string::npos) {
      p += 5;
      while (p < body_out.size() && body_out[p] == ' ') ++p;
      const auto e = body_out.find('\n', p);
      const std::string data = body_out.substr(p, e - p);
      if (scan_id(data) == *id) return data;
    }
    fail("no reply with id in the SSE body: " + body_out);
  }

 private:
  void reconnect_if_closed() {
    pollfd p{fd_, POLLIN | POLLRDHUP, 0};
    if (::poll(&p, 1, 0) <= 0) return;
    char c;
    if (::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT) > 0) return;
    ::close(fd_);
    buf_.clear();
    connect();
  }
  void connect() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port_));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) fail_errno("connect http");
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  void write_all(std::string_view d) {
    while (!d.empty()) {
      const ssize_t n = ::send(fd_, d.data(), d.size(), MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR) continue;
        fail_errno("send");
      }
      d.remove_prefix(static_cast<std::size_t>(n));
    }
  }
  void fill() {
    char tmp[65536];
    for (;;) {
      const ssize_t n = ::read(fd_, tmp, sizeof tmp);
      if (n > 0) return void(buf_.append(tmp, static_cast<std::size_t>(n)));
      if (n < 0 && errno == EINTR) continue;
      fail(n == 0 ? "http peer closed" : std::string("read: ") + std::strerror(errno));
    }
  }
  int port_;
  int fd_ = -1;
  std::string buf_;
  std::string session_;
};

figures stats(const std::string& name, std::vector<std::int64_t> lat_ns, double wall_s) {
  std::sort(lat_ns.begin(), lat_ns.end());
  const std::size_t n = lat_ns.size();
  auto pct = [&](double q) {
    return lat_ns[static_cast<std::size_t>(q * static_cast<double>(n - 1) + 0.5)] / 1000.0;
  };
  figures f;
  f.name = name;
  f.calls = n;
  f.p50_us = pct(0.5);
  f.p99_us = pct(0.99);
  f.mean_us = std::accumulate(lat_ns.begin(), lat_ns.end(), 0.0) / static_cast<double>(n) / 1000.0;
  f.calls_per_s = static_cast<double>(n) / wall_s;
  return f;
}

// Row 2b: the same calls against a real server: server-everything (Node) over stdio, direct and
// through mcpmuxd. With a server whose own work per call is real, the hop costs little.
void row_node(const bench_env& e) {
  if (e.node_entry.empty() || !fs::exists(e.node_entry)) {
    fmt::print("node      skipped: server-everything not found ({}); run npm ci in tests/node\n",
               e.node_entry.empty() ? "no --node-entry" : e.node_entry);
    return;
  }
  const std::vector<std::string> argv = {"/usr/bin/env", "node", e.node_entry, "stdio"};
  child node;
  node.spawn(argv, true, "", (e.tmp / "node-direct.log").string());
  line_conn direct(node.from_child(), node.to_child(), false);
  direct.mcp_handshake();

  daemon_handle d;
  std::string cfg = daemon_section() + "\n[servers.e]\ncommand = \"/usr/bin/env\"\nargs = [";
  for (std::size_t i = 1; i < argv.size(); ++i) cfg += (i > 1 ? ", " : "") + toml_string(argv[i]);
  cfg += "]\n";
  start_mux(d, e, "node", cfg, e.tmp / "cache-node");
  wait_ready(d, 1, e.tmp / "node.log", 60);
  std::vector<line_conn> conns;
  for (int i = 0; i < 4; ++i) {
    conns.push_back(line_conn::connect_unix(d.socket));
    conns.back().mcp_handshake();
  }
  const std::string args = R"({"message":"x"})";
  const std::size_t n = std::max<std::size_t>(500, e.calls / 4);
  std::int64_t did = 1, mid = 1;
  run_calls("w", {&direct}, 16, "echo", did, 1000, args);
  run_calls("w", {&conns[0]}, 16, "e__echo", mid, 1000, args);

  auto run_mux = [&](std::size_t clients, std::size_t in_flight) {
    std::vector<line_conn*> cs;
    for (std::size_t i = 0; i < clients; ++i) cs.push_back(&conns[i]);
    const double before = cpu_ns_seconds(d.proc.pid());
    figures f = run_calls("mux", cs, in_flight / clients, "e__echo", mid, n, args);
    f.daemon_cpu_us = (cpu_ns_seconds(d.proc.pid()) - before) * 1e6 / static_cast<double>(n);
    return f;
  };
  auto low_p50 = [](const figures& f) { return -f.p50_us; };
  auto high_rate = [](const figures& f) { return f.calls_per_s; };
  const int reps = std::max(3, e.reps);
  const figures ds = best_of(
      reps, [&] { return run_calls("d", {&direct}, 1, "echo", did, n, args); }, low_p50);
  const figures ms_ = best_of(
      reps, [&] { return run_mux(1, 1); }, low_p50);
  row("node", "server-everything stdio echo, sequential: p50", us(ms_.p50_us), us(ds.p50_us),
      fmt::format("+{:.1f} µs", ms_.p50_us - ds.p50_us));
  double worst = 1e9;
  for (std::size_t clients : {1, 4}) {
    const figures dt = best_of(
        reps, [&] { return run_calls("d", {&direct}, 16, "echo", did, n, args); }, high_rate);
    const figures mt = best_of(
        reps, [&] { return run_mux(clients, 16); }, high_rate);
    const double pct = 100 * mt.calls_per_s / dt.calls_per_s;
    worst = std::min(worst, pct);
    row("node", fmt::format("16 in flight, {} client(s): calls/s", clients), per_s(mt.calls_per_s),
        per_s(dt.calls_per_s), fmt::format("{:.0f} % of direct", pct));
    row("node", fmt::format("16 in flight, {} client(s): mcpmuxd CPU/call", clients),
        us(*mt.daemon_cpu_us), "-");
  }
  d.proc.stop();
  target("node: throughput at 16 in flight, server-everything", ">= 90 %",
         fmt::format("{:.0f} %", worst), worst >= 90);
}

void row_http(const bench_env& e) {
  if (e.node_entry.empty() || !fs::exists(e.node_entry)) {
    fmt::print("http      skipped: server-everything not found ({}); run npm ci in tests/node\n",
               e.node_entry.empty() ? "no --node-entry" : e.node_entry);
    return;
  }
  const int port = free_port();
  ::setenv("PORT", std::to_string(port).c_str(), 1);
  child node;
  node.spawn({"/usr/bin/env", "node", e.node_entry, "streamableHttp"}, false, "/dev/null",
             (e.tmp / "node.log").string());
  std::unique_ptr<http_client> h;
  for (auto until = clk::now() + std::chrono::seconds(30);;) {
    try {
      h = std::make_unique<http_client>(port);
      break;
    } catch (const std::exception&) {
      if (clk::now() > until || !node.alive())
        fail("server-everything did not listen:\n" + file_tail(e.tmp / "node.log"));
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  // The same protocol version as mcpmux negotiates upstream (its latest): server-everything
  // answers 2025-11-25 sessions about 1 ms slower per call than 2025-06-18 ones.
  h->post(
      R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}})",
      0);
  h->post(R"({"jsonrpc":"2.0","method":"notifications/initialized"})", std::nullopt);

  daemon_handle d;
  start_mux(
      d, e, "http",
      daemon_section() +
          fmt::format("\n[servers.e]\ntype = \"http\"\nurl = \"http://127.0.0.1:{}/mcp\"\n", port),
      e.tmp / "cache-http");
  wait_ready(d, 1, e.tmp / "http.log");
  auto c = line_conn::connect_unix(d.socket);
  c.mcp_handshake();

  const std::size_t n = std::max<std::size_t>(200, e.calls / 10);
  std::int64_t id = 1;
  auto direct_run = [&](std::size_t count) {
    std::vector<std::int64_t> lat;
    const auto t0 = clk::now();
    for (std::size_t i = 0; i < count; ++i, ++id) {
      const auto t = clk::now();
      clk::time_point done;
      const auto r = h->post(
          fmt::format(
              R"({{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"echo","arguments":{{"message":"x"}}}}}})",
              id),
          id, &done);
      lat.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(done - t).count());
      if (r.find("\"error\"") != std::string::npos) fail("direct echo failed: " + r);
    }
    return stats("direct", lat, std::chrono::duration<double>(clk::now() - t0).count());
  };
  auto mux_run = [&](std::size_t count) {
    const double before = cpu_ns_seconds(d.proc.pid());
    figures f = run_calls("mux", {&c}, 1, "e__echo", id, count, R"({"message":"x"})");
    f.daemon_cpu_us = (cpu_ns_seconds(d.proc.pid()) - before) * 1e6 / static_cast<double>(count);
    return f;
  };
  direct_run(200);
  mux_run(200);
  figures db, mb;
  for (int r = 0; r < e.reps; ++r) {
    figures df = direct_run(n), mf = mux_run(n);
    if (r == 0 || df.p50_us < db.p50_us) db = df;
    if (r == 0 || mf.p50_us < mb.p50_us) mb = mf;
  }
  d.proc.stop();
  row("http", "server-everything echo, sequential: p50", us(mb.p50_us), us(db.p50_us),
      fmt::format("+{:.1f} µs", mb.p50_us - db.p50_us));
  row("http", "server-everything echo, sequential: p99", us(mb.p99_us), us(db.p99_us),
      fmt::format("+{:.1f} µs", mb.p99_us - db.p99_us));
  row("http", "server-everything echo: calls/s", per_s(mb.calls_per_s), per_s(db.calls_per_s),
      fmt::format("{:.0f} % of direct", 100 * mb.calls_per_s / db.calls_per_s));
  row("http", "server-everything echo: mcpmuxd CPU per call", us(*mb.daemon_cpu_us), "-");
}

// ---------------------------------------------------------------------------------------------
// Row 7: the daemon's own HTTP endpoint (/mcp) against its Unix socket, same daemon, same upstream

void row_endpoint(const bench_env& e) {
  const int port = free_port();
  daemon_handle d;
  start_mux(d, e, "endpoint",
            daemon_section(fmt::format("http = \"127.0.0.1:{}\"\nhttp_auth = \"none\"", port)) +
                stdio_server("f", e.fake),
            e.tmp / "cache-endpoint");
  wait_ready(d, 1, e.tmp / "endpoint.log");
  auto sock = line_conn::connect_unix(d.socket);
  sock.mcp_handshake();
  http_client h(port);
  h.post(
      R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}})",
      0);
  h.post(R"({"jsonrpc":"2.0","method":"notifications/initialized"})", std::nullopt);

  const std::size_t n = std::max<std::size_t>(500, e.calls / 4);
  std::int64_t id = 1;
  auto http_run = [&](std::size_t count) {
    std::vector<std::int64_t> lat;
    const auto t0 = clk::now();
    for (std::size_t i = 0; i < count; ++i, ++id) {
      const auto t = clk::now();
      clk::time_point done;
      const auto r = h.post(
          fmt::format(
              R"({{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"f__echo","arguments":{{"text":"x"}}}}}})",
              id),
          id, &done);
      lat.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(done - t).count());
      if (r.find("\"error\"") != std::string::npos) fail("echo through /mcp failed: " + r);
    }
    return stats("http", lat, std::chrono::duration<double>(clk::now() - t0).count());
  };
  auto socket_run = [&](std::size_t count) {
    return run_calls("socket", {&sock}, 1, "f__echo", id, count, R"({"text":"x"})");
  };
  // The daemon's CPU per call on each path (best round): what the endpoint itself costs.
  auto daemon_cpu = [&](auto&& run) {
    const double before = cpu_seconds_fine(d.proc.pid());
    figures f = run(n);
    f.daemon_cpu_us = (cpu_seconds_fine(d.proc.pid()) - before) * 1e6 / static_cast<double>(n);
    return f;
  };
  http_run(200);
  socket_run(200);
  figures hb, sb;
  double h_cpu = 0, s_cpu = 0;
  for (int r = 0; r < e.reps; ++r) {
    figures hf = daemon_cpu(http_run), sf = daemon_cpu(socket_run);
    if (r == 0 || hf.p50_us < hb.p50_us) hb = hf;
    if (r == 0 || sf.p50_us < sb.p50_us) sb = sf;
    if (r == 0 || *hf.daemon_cpu_us < h_cpu) h_cpu = *hf.daemon_cpu_us;
    if (r == 0 || *sf.daemon_cpu_us < s_cpu) s_cpu = *sf.daemon_cpu_us;
  }
  d.proc.stop();
  row("endpoint", "tools/call echo through /mcp vs the socket: p50", us(hb.p50_us), us(sb.p50_us),
      fmt::format("+{:.1f} µs", hb.p50_us - sb.p50_us));
  row("endpoint", "the same: p99", us(hb.p99_us), us(sb.p99_us),
      fmt::format("+{:.1f} µs", hb.p99_us - sb.p99_us));
  row("endpoint", "the same: calls/s (1 in flight)", per_s(hb.calls_per_s), per_s(sb.calls_per_s),
      fmt::format("{:.0f} % of the socket", 100 * hb.calls_per_s / sb.calls_per_s));
  row("endpoint", "the same: mcpmuxd CPU per call", us(h_cpu), us(s_cpu),
      fmt::format("{:.2f}× the socket", h_cpu / s_cpu));
  target("endpoint: mcpmuxd CPU per /mcp call within 2× the socket's", "<= 2.00×",
         fmt::format("{:.2f}×", h_cpu / s_cpu), h_cpu <= 2 * s_cpu);
}

[[noreturn]] void usage(int code) {
  fmt::print(code ? stderr : stdout,
             "usage: bench_suite --mcpmuxd PATH --fake PATH [--mcpmux PATH --relay PATH] [--row "
             "floor|calls|audit|node|scale|start|payload|clients|http|endpoint|all]\n"
             "                   [--calls N (20000)] [--reps N (3)] [--node-entry "
             "server-everything/dist/index.js]\n"
             "Prints one table row per figure (mcpmux, direct, comparison) and 'target:' lines.\n");
  std::exit(code);
}

}  // namespace

int main(int argc, char** argv) {
  ::signal(SIGPIPE, SIG_IGN);
  bench_env e;
  std::string which = "all";
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--help" || a == "-h") usage(0);
    if (i + 1 >= argc) usage(2);
    const std::string v = argv[++i];
    if (a == "--mcpmuxd")
      e.mcpmuxd = fs::absolute(v).string();
    else if (a == "--fake")
      e.fake = fs::absolute(v).string();
    else if (a == "--mcpmux")
      e.mcpmux = fs::absolute(v).string();
    else if (a == "--relay")
      e.relay = fs::absolute(v).string();
    else if (a == "--node-entry")
      e.node_entry = fs::absolute(v).string();
    else if (a == "--row")
      which = v;
    else if (a == "--calls")
      e.calls = std::strtoul(v.c_str(), nullptr, 10);
    else if (a == "--reps")
      e.reps = std::max(1, std::atoi(v.c_str()));
    else
      usage(2);
  }
  if (e.mcpmuxd.empty() || e.fake.empty() || e.calls < 100) usage(2);
  // 500 clients need descriptors on both ends; the daemon inherits the limit.
  rlimit rl{};
  ::getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &rl);
  try {
    const temp_dir tmp;
    e.tmp = tmp.path();
    if (which == "floor" || which == "all") row_floor(e);
    if (which == "calls" || which == "all") row_calls(e);
    if (which == "audit" || which == "all") row_audit(e);
    if (which == "scale" || which == "all") row_scale(e);
    if (which == "start" || which == "all") row_start(e);
    if (which == "payload" || which == "all") row_payload(e);
    if (which == "clients" || which == "all") row_clients(e);
    if (which == "node" || which == "all") row_node(e);
    if (which == "http" || which == "all") row_http(e);
    if (which == "endpoint" || which == "all") row_endpoint(e);
  } catch (const std::exception& ex) {
    std::fflush(stdout);
    fmt::print(stderr, "bench_suite ({}): {}\n", which, ex.what());
    fmt::print("{:<9} FAILED: {}\n", which, std::string(ex.what()).substr(0, 300));
    return 1;
  }
  return 0;
}
