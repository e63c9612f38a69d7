// Benchmark: tools/call latency and throughput, direct vs. through mcpmuxd, and idle RSS.
// (The wider suite is bench_suite.cpp; both share bench_common.hpp.)
#include "bench_common.hpp"

namespace {
// ---------------------------------------------------------------------------------------------
// Output

void print_header() {
  fmt::print("{:<38} {:>8} {:>9} {:>9} {:>9} {:>9} {:>11} {:>11}\n", "measurement", "calls",
             "p50 µs", "p99 µs", "mean µs", "calls/s", "client CPU", "mcpmuxd CPU");
  fmt::print("{:<38} {:>8} {:>9} {:>9} {:>9} {:>9} {:>11} {:>11}\n", "", "", "", "", "", "",
             "µs/call", "µs/call");
  fmt::print("{}\n", std::string(112, '-'));
}

void print_row(const figures& f) {
  fmt::print("{:<38} {:>8} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.0f} {:>11.1f} {:>11}\n", f.name, f.calls,
             f.p50_us, f.p99_us, f.mean_us, f.calls_per_s, f.client_cpu_us,
             f.daemon_cpu_us ? fmt::format("{:.1f}", *f.daemon_cpu_us) : std::string("-"));
  std::fflush(stdout);
}

struct options {
  std::string mcpmuxd, fake;
  std::size_t calls = 20000;
  double idle_seconds = 1.0;
};

[[noreturn]] void usage(int code) {
  fmt::print(code ? stderr : stdout,
             "usage: bench_calls --mcpmuxd PATH --fake PATH [--calls N (default 20000)] "
             "[--seconds-idle S (default 1)]\n");
  std::exit(code);
}

options parse_args(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--help" || a == "-h") usage(0);
    if (i + 1 >= argc) usage(2);
    const std::string v = argv[++i];
    if (a == "--mcpmuxd") {
      o.mcpmuxd = v;
    } else if (a == "--fake") {
      o.fake = v;
    } else if (a == "--calls") {
      o.calls = std::strtoul(v.c_str(), nullptr, 10);
    } else if (a == "--seconds-idle") {
      o.idle_seconds = std::strtod(v.c_str(), nullptr);
    } else {
      usage(2);
    }
  }
  if (o.mcpmuxd.empty() || o.fake.empty() || o.calls < 100) usage(2);
  o.mcpmuxd = fs::absolute(o.mcpmuxd).string();
  o.fake = fs::absolute(o.fake).string();
  return o;
}

int run(const options& o) {
  const temp_dir tmp;
  const std::size_t n = o.calls;
  const std::size_t warm = std::min<std::size_t>(2000, n / 4);

  fmt::print("bench_calls: {} calls per measurement, tool echo {{\"text\":\"x\"}}\n", n);
  fmt::print("  mcpmuxd {}\n  fake    {}\n\n", o.mcpmuxd, o.fake);
  print_header();

  // 1. Direct: the fake server as our own child over pipes.
  figures d_seq, d_16;
  {
    child fake;
    fake.spawn({o.fake}, true, "", "/dev/null");
    line_conn c(fake.from_child(), fake.to_child(), false);
    c.mcp_handshake();
    std::int64_t id = 1;
    warm_up({&c}, "echo", id, warm);
    d_seq = run_calls("direct   sequential (1 in flight)", {&c}, 1, "echo", id, n);
    print_row(d_seq);
    d_16 = run_calls("direct   16 in flight", {&c}, 16, "echo", id, n);
    print_row(d_16);
  }

  // 2. Through the mux: one server "f" = the fake.
  figures m_seq, m_16, m_16x4;
  double cpu_total = 0;
  {
    daemon_handle d;
    start_daemon(d, o.mcpmuxd, o.fake, tmp.path(), "mux1", {"f"});
    wait_ready(d, 1, tmp.path() / "mux1.log");
    std::vector<line_conn> conns;
    for (int i = 0; i < 4; ++i) {
      conns.push_back(line_conn::connect_unix(d.socket));
      conns.back().mcp_handshake();
    }
    std::int64_t id = 1;
    warm_up({&conns[0], &conns[1], &conns[2], &conns[3]}, "f__echo", id, warm);
    auto measured = [&](figures& f, const char* name, std::vector<line_conn*> cs,
                        std::size_t depth) {
      const double before = cpu_seconds(d.proc.pid());
      f = run_calls(name, std::move(cs), depth, "f__echo", id, n);
      const double cpu = cpu_seconds(d.proc.pid()) - before;
      cpu_total += cpu;
      f.daemon_cpu_us = cpu * 1e6 / static_cast<double>(n);
      print_row(f);
    };
    measured(m_seq, "mux      sequential (1 in flight)", {&conns[0]}, 1);
    measured(m_16, "mux      16 in flight", {&conns[0]}, 16);
    measured(m_16x4, "mux      16 in flight, 4 connections",
             {&conns[0], &conns[1], &conns[2], &conns[3]}, 4);
    conns.clear();
    d.proc.stop();
  }

  // 4. Idle RSS with ten servers.
  long rss_kib = 0, hwm_kib = 0;
  {
    daemon_handle d;
    std::vector<std::string> names;
    for (int i = 0; i < 10; ++i) names.push_back(fmt::format("f{}", i));
    start_daemon(d, o.mcpmuxd, o.fake, tmp.path(), "mux10", names);
    wait_ready(d, names.size(), tmp.path() / "mux10.log");
    std::this_thread::sleep_for(std::chrono::duration<double>(o.idle_seconds));
    rss_kib = status_kib(d.proc.pid(), "VmRSS:");
    hwm_kib = status_kib(d.proc.pid(), "VmHWM:");
    d.proc.stop();
  }

  const double over_p50 = m_seq.p50_us - d_seq.p50_us;
  const double over_p99 = m_seq.p99_us - d_seq.p99_us;
  const double ratio = m_16.calls_per_s / d_16.calls_per_s;
  const double ratio4 = m_16x4.calls_per_s / d_16.calls_per_s;
  const double rss_mib = static_cast<double>(rss_kib) / 1024.0;
  const double hwm_mib = static_cast<double>(hwm_kib) / 1024.0;

  fmt::print("\nmux overhead per call (sequential)   p50 {:+.1f} µs   p99 {:+.1f} µs\n", over_p50,
             over_p99);
  fmt::print("throughput mux/direct, 16 in flight  1 connection {:.2f}   4 connections {:.2f}\n",
             ratio, ratio4);
  fmt::print("mcpmuxd CPU per call                 {:.1f} µs over {} calls (clock tick {} Hz)\n",
             cpu_total * 1e6 / static_cast<double>(3 * n), 3 * n, ::sysconf(_SC_CLK_TCK));
  fmt::print("mcpmuxd idle, 10 servers ready       VmRSS {:.1f} MiB   VmHWM {:.1f} MiB\n", rss_mib,
             hwm_mib);

  fmt::print("\ntargets:\n");
  fmt::print("  overhead p50 <= 50 µs     {:>8.1f} µs   {}\n", over_p50,
             over_p50 <= 50 ? "met" : "MISSED");
  fmt::print("  idle RSS     <= 16 MiB    {:>8.1f} MiB  {}\n", rss_mib,
             rss_mib <= 16 ? "met" : "MISSED");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  ::signal(SIGPIPE, SIG_IGN);
  const options o = parse_args(argc, argv);
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    fmt::print(stderr, "bench_calls: {}\n", e.what());
    return 1;
  }
}
