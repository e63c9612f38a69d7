// The counted budget (issue 44, point 7): instructions mcpmuxd executes per sequential
// `tools/call`, counted by valgrind's callgrind, the event loop's thread and the audit writer's
// apart. Counts, not times: they do not move with the host's load, so `--max-total` makes a
// guard that fails when a change makes the hop much dearer (tests/meson.build runs it so).
//
// The daemon runs under callgrind with one stdio server (the C++ fake), the audit log on (the
// default), result redaction off (the terms: `redact_results = "off"` on the server) and
// paging at its default 100 KB. One client on the Unix socket makes a warm-up, then the counted
// calls, one at a time, each an echo of {"text":"x"}. Only those calls are counted: the
// counters are zeroed before them and dumped after (callgrind_control), and around each of the
// two a `mcpmux/history` hands the audit buffer to the writer and waits until the store has it,
// so the window holds the audit rows of exactly the counted calls. (That history asks for rows
// newer than any, so it reads no batch: the two cost a few thousand instructions in all. A read
// of the newest row would parse its whole batch, ~180,000.) The warm-up is followed by a pause of
// two seconds, so that the start's one-off jobs (the catalogue snapshot, a second after the
// servers are ready) are not counted as the calls'; its two halves are each settled so, so that
// the audit buffer writes its rows into the slots of batches written before
// (core/audit_buffer.hpp), as a busy daemon's does after its first two batches.
#include "bench_common.hpp"

namespace {

struct options {
  std::string mcpmuxd, fake, valgrind = "valgrind", callgrind_control = "callgrind_control";
  std::size_t calls = 3000, warm = 2000;
  double max_total = 0;  ///< fail above this many instructions per call (0: no limit)
  std::string keep;      ///< copy the counted window's callgrind files into this directory
};

[[noreturn]] void usage(int code) {
  fmt::print(code ? stderr : stdout,
             "usage: call_instructions --mcpmuxd PATH --fake PATH [--calls N (default 3000)]\n"
             "         [--warm N (default 2000)] [--max-total INSTRUCTIONS_PER_CALL]\n"
             "         [--keep DIR (the callgrind files, for callgrind_annotate)]\n"
             "         [--valgrind PATH] [--callgrind-control PATH]\n");
  std::exit(code);
}

// `name` as found on $PATH (posix_spawn does not search it); `name` itself when not found.
std::string on_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  std::string_view path = std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin";
  while (!path.empty()) {
    const auto colon = path.find(':');
    const auto candidate = fs::path(path.substr(0, colon)) / name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    path.remove_prefix(colon == std::string_view::npos ? path.size() : colon + 1);
  }
  return name;
}

options parse_args(int argc, char** argv) {
  options o;
  read_flags(argc, argv, usage, [&](std::string_view a, const std::string& v) {
    const auto count = [&] { return std::strtoul(v.c_str(), nullptr, 10); };
    if (a == "--mcpmuxd")
      o.mcpmuxd = v;
    else if (a == "--fake")
      o.fake = v;
    else if (a == "--calls")
      o.calls = count();
    else if (a == "--warm")
      o.warm = count();
    else if (a == "--max-total")
      o.max_total = std::strtod(v.c_str(), nullptr);
    else if (a == "--keep")
      o.keep = v;
    else if (a == "--valgrind")
      o.valgrind = v;
    else if (a == "--callgrind-control")
      o.callgrind_control = v;
    else
      return false;
    return true;
  });
  if (o.mcpmuxd.empty() || o.fake.empty() || o.calls < 1) usage(2);
  o.mcpmuxd = fs::absolute(o.mcpmuxd).string();
  o.fake = fs::absolute(o.fake).string();
  o.valgrind = on_path(o.valgrind);
  o.callgrind_control = on_path(o.callgrind_control);
  return o;
}

// Runs `argv` to its end with stdout and stderr into `log`; fails unless it exits 0.
void run_tool(const std::vector<std::string>& argv, const fs::path& log) {
  child c;
  c.spawn(argv, false, log.string(), log.string());
  int status = 0;
  if (::waitpid(c.pid(), &status, 0) != c.pid() || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fail(fmt::format("{} failed; its output:\n{}", argv[0], file_tail(log)));
}

// Sends `callgrind_control ARG` to the daemon (through vgdb).
void control(const options& o, pid_t pid, const std::string& arg, const fs::path& log) {
  run_tool({o.callgrind_control, arg, std::to_string(pid)}, log);
}

// Hands the daemon's audit buffer to its writer and waits until the store has it (a history of
// the rows from a time far ahead: none, so no batch is read).
void settle_audit(line_conn& c, std::int64_t& id) {
  const auto r = c.call(id++, "mcpmux/history", json::object{{"since_ms", 1LL << 62}});
  if (!r.at("entries").as_array().empty()) fail("a history from a time far ahead found rows");
}

// One thread's file of a dump: its "totals:" (or "summary:") and whether it ran the audit writer.
struct thread_count {
  std::string file;
  double instructions = 0;
  bool audit = false;
};

thread_count read_dump(const fs::path& p) {
  thread_count t;
  t.file = p.filename().string();
  std::ifstream f(p);
  for (std::string line; std::getline(f, line);) {
    if (line.rfind("totals:", 0) == 0 || line.rfind("summary:", 0) == 0)
      t.instructions = std::strtod(line.c_str() + line.find(':') + 1, nullptr);
    else if (line.find("audit_writer::run") != std::string::npos)
      t.audit = true;
  }
  return t;
}

int run(const options& o) {
  const temp_dir tmp;
  const auto home = tmp.path() / "home";
  fs::create_directories(home / "state");
  ::setenv("XDG_CACHE_HOME", home.c_str(), 1);
  ::setenv("XDG_STATE_HOME", (home / "state").c_str(), 1);
  const auto cfg = tmp.path() / "mux.toml";
  {
    // The defaults otherwise: the audit log on, no profile, paging at 100 KB.
    std::ofstream f(cfg);
    f << "[daemon]\nlog_level = \"warn\"\ntimeout_ms = 120000\naudit = true\n"
      << "\n[servers.f]\ncommand = " << toml_string(o.fake) << "\nredact_results = \"off\"\n";
    if (!f) fail("cannot write " + cfg.string());
  }
  const auto out = tmp.path() / "callgrind.out";
  const auto log = tmp.path() / "mux.log";
  daemon_handle d;
  d.socket = (tmp.path() / "mux.sock").string();
  d.proc.spawn({o.valgrind, "--tool=callgrind", "--separate-threads=yes", "--dump-instr=no",
                "--callgrind-out-file=" + out.string(), o.mcpmuxd, "--config", cfg.string(),
                "--socket", d.socket},
               false, log.string(), log.string());
  wait_ready(d, 1, log, 180);

  figures r;
  {
    auto c = line_conn::connect_unix(d.socket);
    c.mcp_handshake();
    std::int64_t id = 1;
    // In two halves, each settled: the audit buffer then fills the slots of a batch written
    // before, as a busy daemon's does after its first two batches.
    warm_up({&c}, "f__echo", id, o.warm / 2);
    settle_audit(c, id);
    warm_up({&c}, "f__echo", id, o.warm - o.warm / 2);
    // The start's one-off work is done before the count: the catalogue snapshot is kept a second
    // after the servers are ready (start_scheduler's keep_later), ~430,000 instructions once.
    std::this_thread::sleep_for(std::chrono::seconds(2));
    settle_audit(c, id);
    const auto ctl_log = tmp.path() / "control.log";
    control(o, d.proc.pid(), "--zero", ctl_log);
    r = run_calls("counted", {&c}, 1, "f__echo", id, o.calls);
    settle_audit(c, id);
    control(o, d.proc.pid(), "--dump", ctl_log);
  }

  // The dump writes one file per thread: callgrind.out.1-01 (the loop, the main thread), ...
  std::vector<thread_count> threads;
  for (const auto& e : fs::directory_iterator(tmp.path()))
    if (e.path().filename().string().rfind("callgrind.out.1-", 0) == 0)
      threads.push_back(read_dump(e.path()));
  if (threads.empty()) fail("callgrind wrote no dump; its log:\n" + file_tail(log));
  std::sort(threads.begin(), threads.end(),
            [](const auto& a, const auto& b) { return a.file < b.file; });
  if (!o.keep.empty()) {
    fs::create_directories(o.keep);
    for (const auto& t : threads)
      fs::copy_file(tmp.path() / t.file, fs::path(o.keep) / t.file,
                    fs::copy_options::overwrite_existing);
  }
  d.proc.stop();

  const auto n = static_cast<double>(o.calls);
  double loop = 0, audit = 0, other = 0;
  for (const auto& t : threads) {
    if (t.file.ends_with("-01"))
      loop += t.instructions;
    else if (t.audit)
      audit += t.instructions;
    else
      other += t.instructions;
  }
  const double total = loop + audit + other;
  fmt::print(
      "mcpmuxd instructions per sequential tools/call (callgrind, {} calls after {} "
      "warm-up, audit on, redaction off)\n",
      o.calls, o.warm);
  fmt::print("  event loop thread   {:>8.0f}\n", loop / n);
  fmt::print("  audit writer thread {:>8.0f}\n", audit / n);
  if (other > 0) fmt::print("  other threads       {:>8.0f}\n", other / n);
  fmt::print("  all threads         {:>8.0f}\n", total / n);
  fmt::print("  (p50 under callgrind {:.0f} µs)\n", r.p50_us);
  if (o.max_total > 0 && total / n > o.max_total) {
    fmt::print(stderr, "FAIL: {:.0f} instructions per call, above the guard's {:.0f}\n", total / n,
               o.max_total);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  ::signal(SIGPIPE, SIG_IGN);
  const options o = parse_args(argc, argv);
  if (std::getenv("MCPMUX_SANITIZED")) {
    fmt::print("call_instructions: skipped (valgrind cannot run a sanitized daemon)\n");
    return 77;  // meson's "skipped"
  }
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    fmt::print(stderr, "call_instructions: {}\n", e.what());
    return 1;
  }
}
