// Cgroups for the servers' limits. The kernel's files are the whole interface: a group is a
// directory, a limit is a number written into a file of it, a process joins by writing its pid.
// Nothing here runs on the daemon's loop for long: a few small reads and writes per start.
#include "sandbox/cgroup.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>
#include <utility>

#include "base/files.hpp"
#include "base/text.hpp"

namespace mcpmux {
namespace {

using cgroup_detail::keyed_value;

constexpr std::size_t max_cgroup_file = 1 << 20;  // cgroup.procs of a large group included
constexpr std::uint64_t cfs_period_us = 100000;   // the kernel's default period: 100 ms
constexpr std::uint64_t cfs_min_quota_us = 1000;  // the smallest quota the kernel takes

std::string read_or_empty(const std::string& path) {
  auto text = read_text_file(path, max_cgroup_file);
  return text ? std::move(*text) : std::string();
}

bool exists(const std::string& path) {
  return ::access(path.c_str(), F_OK) == 0;
}

// Writes `text` into a cgroup file; "" on success, else what failed. One write(): the kernel
// takes a cgroup value whole or not at all.
std::string write_value(const std::string& path, std::string_view text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return fmt::format("cannot open {}: {}", path, std::strerror(errno));
  const ssize_t n = ::write(fd, text.data(), text.size());
  const int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(text.size()))
    return fmt::format("cannot write '{}' to {}: {}", text, path,
                       n < 0 ? std::strerror(err) : "short write");
  return {};
}

// The directory of hierarchy path `path` under mount `m`; "" when the mount does not show it
// (a bind mount of another part of the hierarchy).
std::string directory_in(const cgroup_detail::mount& m, const std::string& path) {
  if (m.root == "/") return path == "/" ? m.point : m.point + path;
  if (path == m.root) return m.point;
  if (path.starts_with(m.root + "/")) return m.point + path.substr(m.root.size());
  return {};
}

// A directory made if missing; "" on success.
std::string make_dir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST) return {};
  return fmt::format("cannot create {}: {}", dir, std::strerror(errno));
}

// The pids listed in a cgroup.procs file.
std::vector<pid_t> pids_in(const std::string& procs_file) {
  std::vector<pid_t> pids;
  const std::string text = read_or_empty(procs_file);  // outlives the views split_lines returns
  for (std::string_view line : split_lines(text)) {
    pid_t pid = 0;
    if (std::from_chars(line.data(), line.data() + line.size(), pid).ec == std::errc() && pid > 0)
      pids.push_back(pid);
  }
  return pids;
}

// Groups are named NAME-PID-N; the PID of one whose daemon is gone, else 0.
pid_t dead_owner(std::string_view group) {
  const auto last = group.rfind('-');
  if (last == std::string_view::npos || last == 0) return 0;
  const auto before = group.rfind('-', last - 1);
  if (before == std::string_view::npos) return 0;
  const std::string_view digits = group.substr(before + 1, last - before - 1);
  pid_t pid = 0;
  if (std::from_chars(digits.data(), digits.data() + digits.size(), pid).ec != std::errc() ||
      pid <= 0 || pid == ::getpid())
    return 0;
  return ::kill(pid, 0) != 0 && errno == ESRCH ? pid : 0;
}

// Removes the empty groups a daemon that was killed left in `parent`. A group still holding
// processes stays: they are not ours to kill.
void remove_stale_groups(const std::string& parent) {
  DIR* dir = ::opendir(parent.c_str());
  if (!dir) return;
  std::vector<std::string> stale;
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_type == DT_DIR && e->d_name[0] != '.' && dead_owner(e->d_name))
      stale.push_back(parent + "/" + e->d_name);
  }
  ::closedir(dir);
  for (const auto& group : stale) ::rmdir(group.c_str());
}

bool listed(std::string_view words, std::string_view word) {
  std::size_t start = 0;
  while (start < words.size()) {
    auto end = words.find_first_of(" \n", start);
    if (end == std::string_view::npos) end = words.size();
    if (words.substr(start, end - start) == word) return true;
    start = end + 1;
  }
  return false;
}

// Enables the controllers `wanted` for the children of `dir` (v2); those that could not be are
// left out of the returned list, with the last error in `error`.
std::vector<cgroup_controller> enable_for_children(const std::string& dir,
                                                   const std::vector<cgroup_controller>& wanted,
                                                   std::string& error, int& last_errno) {
  std::vector<cgroup_controller> enabled;
  const std::string subtree = dir + "/cgroup.subtree_control";
  const std::string now = read_or_empty(subtree);
  for (auto c : wanted) {
    if (listed(now, controller_name(c))) {
      enabled.push_back(c);
      continue;
    }
    const std::string name = "+" + std::string(controller_name(c));
    const int fd = ::open(subtree.c_str(), O_WRONLY | O_CLOEXEC);
    const bool ok =
        fd >= 0 && ::write(fd, name.data(), name.size()) == static_cast<ssize_t>(name.size());
    last_errno = ok ? 0 : errno;
    if (fd >= 0) ::close(fd);
    if (ok) {
      enabled.push_back(c);
    } else {
      error = fmt::format("cannot enable {} in {}: {}", controller_name(c), subtree,
                          std::strerror(last_errno));
    }
  }
  return enabled;
}

// The v2 part of the probe: which controllers the delegated cgroup gives; their places set.
void probe_v2(const std::vector<cgroup_detail::mount>& mounts,
              const std::vector<cgroup_detail::membership>& members, cgroup_host& host) {
  const auto m = std::find_if(mounts.begin(), mounts.end(), [](auto& x) { return x.v2; });
  const auto own =
      std::find_if(members.begin(), members.end(), [](auto& x) { return x.controllers.empty(); });
  if (m == mounts.end() || own == members.end()) return;
  const std::string dir = directory_in(*m, own->path);
  if (dir.empty() || ::access(dir.c_str(), W_OK) != 0) return;
  const std::string offered = read_or_empty(dir + "/cgroup.controllers");
  std::vector<cgroup_controller> wanted;
  for (auto c : all_cgroup_controllers)
    if (listed(offered, controller_name(c))) wanted.push_back(c);
  if (wanted.empty()) return;  // a hybrid host: the controllers are in v1
  std::string error;
  int err = 0;
  auto enabled = enable_for_children(dir, wanted, error, err);
  if (enabled.size() < wanted.size() && err == EBUSY) {
    // A v2 cgroup with processes cannot hand controllers down: the daemon moves into a leaf of
    // its own beside its servers' groups. When other processes share the cgroup, this fails and
    // the daemon goes back.
    const std::string leaf = dir + "/mcpmux-daemon";
    if (make_dir(leaf).empty() && write_value(leaf + "/cgroup.procs", "0").empty()) {
      enabled = enable_for_children(dir, wanted, error, err);
      if (enabled.size() < wanted.size()) {
        (void)write_value(dir + "/cgroup.procs", "0");
        ::rmdir(leaf.c_str());
        enabled = enable_for_children(dir, wanted, error, err);
      }
    }
  }
  const std::string parent = dir + "/mcpmux";
  if (enabled.empty()) return;
  if (std::string e = make_dir(parent); !e.empty()) return;
  std::string ignored;
  enabled = enable_for_children(parent, enabled, ignored, err);
  for (auto c : enabled) host.places[static_cast<std::size_t>(c)] = {cgroup_kind::v2, parent, {}};
  remove_stale_groups(parent);
}

// The v1 part of the probe, for each controller v2 did not give.
void probe_v1(const std::vector<cgroup_detail::mount>& mounts,
              const std::vector<cgroup_detail::membership>& members, cgroup_host& host) {
  for (auto c : all_cgroup_controllers) {
    auto& place = host.places[static_cast<std::size_t>(c)];
    if (place.kind != cgroup_kind::none) continue;
    const std::string name(controller_name(c));
    const auto has = [&](const std::vector<std::string>& v) {
      return std::find(v.begin(), v.end(), name) != v.end();
    };
    const auto m = std::find_if(mounts.begin(), mounts.end(),
                                [&](auto& x) { return !x.v2 && has(x.options); });
    const auto own =
        std::find_if(members.begin(), members.end(), [&](auto& x) { return has(x.controllers); });
    if (m == mounts.end() || own == members.end()) {
      place.problem = fmt::format("no {} controller", name);
      continue;
    }
    const std::string dir = directory_in(*m, own->path);
    if (dir.empty()) {
      place.problem = fmt::format("the daemon's {} cgroup {} is not mounted", name, own->path);
      continue;
    }
    const std::string parent = dir + "/mcpmux";
    if (std::string e = make_dir(parent); !e.empty()) {
      place.problem = fmt::format("cgroup v1 {} not writable: {}", name, e);
      continue;
    }
    place = {cgroup_kind::v1, parent, {}};
    remove_stale_groups(parent);
  }
}

std::string limit_text(cgroup_controller c, const resource_limits& limits) {
  switch (c) {
    case cgroup_controller::memory:
      return "memory " + format_bytes(limits.memory_max);
    case cgroup_controller::pids:
      return fmt::format("tasks {}", limits.tasks_max);
    case cgroup_controller::cpu:
      return "cpu " + format_cpus(limits.cpu_max);
  }
  return {};
}

bool is_set(cgroup_controller c, const resource_limits& limits) {
  switch (c) {
    case cgroup_controller::memory:
      return limits.memory_max != 0;
    case cgroup_controller::pids:
      return limits.tasks_max != 0;
    case cgroup_controller::cpu:
      return limits.cpu_max > 0;
  }
  return false;
}

// Writes the limit of controller `c` into group directory `dir`; "" on success.
std::string write_limit(cgroup_kind kind, const std::string& dir, cgroup_controller c,
                        const resource_limits& limits) {
  const bool v2 = kind == cgroup_kind::v2;
  switch (c) {
    case cgroup_controller::memory: {
      const std::string bytes = std::to_string(limits.memory_max);
      if (v2) {
        if (auto e = write_value(dir + "/memory.max", bytes); !e.empty()) return e;
        // No swap: a limit that spills into swap only slows the machine down. The whole group
        // is killed together, so no half of a server is left behind.
        if (exists(dir + "/memory.swap.max")) (void)write_value(dir + "/memory.swap.max", "0");
        (void)write_value(dir + "/memory.oom.group", "1");
        return {};
      }
      if (auto e = write_value(dir + "/memory.limit_in_bytes", bytes); !e.empty()) return e;
      // memory+swap, at the same figure: no swap (present only with swap accounting).
      if (exists(dir + "/memory.memsw.limit_in_bytes"))
        return write_value(dir + "/memory.memsw.limit_in_bytes", bytes);
      return {};
    }
    case cgroup_controller::pids:
      return write_value(dir + "/pids.max", std::to_string(limits.tasks_max));
    case cgroup_controller::cpu: {
      const auto quota = std::max<std::uint64_t>(
          cfs_min_quota_us,
          static_cast<std::uint64_t>(std::llround(limits.cpu_max * cfs_period_us)));
      if (v2) return write_value(dir + "/cpu.max", fmt::format("{} {}", quota, cfs_period_us));
      if (auto e = write_value(dir + "/cpu.cfs_period_us", std::to_string(cfs_period_us));
          !e.empty())
        return e;
      return write_value(dir + "/cpu.cfs_quota_us", std::to_string(quota));
    }
  }
  return {};
}

}  // namespace

std::string_view controller_name(cgroup_controller c) {
  switch (c) {
    case cgroup_controller::memory:
      return "memory";
    case cgroup_controller::pids:
      return "pids";
    case cgroup_controller::cpu:
      return "cpu";
  }
  return "?";
}

namespace cgroup_detail {

namespace {
// The non-empty pieces of `text` between `sep`s.
std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> pieces;
  for (std::size_t start = 0; start < text.size();) {
    auto end = text.find(sep, start);
    if (end == std::string_view::npos) end = text.size();
    if (end > start) pieces.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return pieces;
}
}  // namespace

std::vector<membership> parse_proc_cgroup(std::string_view text) {
  std::vector<membership> out;
  for (std::string_view line : split_lines(text)) {
    const auto first = line.find(':');
    const auto second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    membership m;
    for (auto name : split(line.substr(first + 1, second - first - 1), ','))
      m.controllers.emplace_back(name);
    m.path = std::string(line.substr(second + 1));
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<mount> parse_cgroup_mounts(std::string_view mountinfo) {
  // "ID PARENT MAJ:MIN ROOT POINT OPTIONS [TAGS...] - FSTYPE SOURCE SUPER_OPTIONS"
  std::vector<mount> out;
  for (std::string_view line : split_lines(mountinfo)) {
    const auto fields = split(line, ' ');
    const auto dash = std::find(fields.begin(), fields.end(), "-");
    if (fields.size() < 5 || dash == fields.end() || fields.end() - dash < 4) continue;
    const std::string_view type = dash[1];
    if (type != "cgroup" && type != "cgroup2") continue;
    mount m;
    m.root = std::string(fields[3]);
    m.point = std::string(fields[4]);
    m.v2 = type == "cgroup2";
    for (auto option : split(dash[3], ',')) m.options.emplace_back(option);
    out.push_back(std::move(m));
  }
  return out;
}

std::uint64_t keyed_value(std::string_view text, std::string_view key, bool* found) {
  if (found) *found = false;
  for (std::string_view line : split_lines(text)) {
    if (!line.starts_with(key) || line.size() <= key.size() || line[key.size()] != ' ') continue;
    std::string_view digits = line.substr(key.size() + 1);
    std::uint64_t value = 0;
    if (std::from_chars(digits.data(), digits.data() + digits.size(), value).ec != std::errc())
      continue;
    if (found) *found = true;
    return value;
  }
  return 0;
}

std::string sanitise_name(std::string_view name) {
  std::string out;
  for (char ch : name.substr(0, 48)) {
    const bool keep = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                      (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' || ch == '.';
    out += keep ? ch : '_';
  }
  if (out.empty() || out[0] == '.') out.insert(out.begin(), '_');
  return out;
}

}  // namespace cgroup_detail

cgroup_host probe_cgroups() {
  cgroup_host host;
  const auto mounts = cgroup_detail::parse_cgroup_mounts(read_or_empty("/proc/self/mountinfo"));
  const auto members = cgroup_detail::parse_proc_cgroup(read_or_empty("/proc/self/cgroup"));
  probe_v2(mounts, members, host);
  probe_v1(mounts, members, host);
  std::vector<std::string> problems;
  for (auto c : all_cgroup_controllers) {
    const auto& place = host.at(c);
    if (place.kind != cgroup_kind::none) return host;
    problems.push_back(place.problem);
  }
  host.problem = fmt::format("no cgroup can be used ({}): memory, cpu and tasks are not limited",
                             fmt::join(problems, "; "));
  return host;
}

std::string describe(const cgroup_host& host, const resource_limits& limits) {
  std::vector<std::string> parts;
  const auto add = [&](cgroup_controller c) {
    if (!is_set(c, limits)) return;
    const auto& place = host.at(c);
    const std::string what = limit_text(c, limits);
    if (place.kind == cgroup_kind::none) {
      parts.push_back(
          fmt::format("{}: no limit ({})", what.substr(0, what.find(' ')), place.problem));
    } else {
      parts.push_back(
          fmt::format("{} (cgroup {})", what, place.kind == cgroup_kind::v2 ? "v2" : "v1"));
    }
  };
  add(cgroup_controller::memory);
  add(cgroup_controller::cpu);
  add(cgroup_controller::pids);
  if (limits.files_max) parts.push_back(fmt::format("files {} (rlimit)", limits.files_max));
  return parts.empty() ? "no limits" : fmt::format("{}", fmt::join(parts, ", "));
}

bool server_group::directory::holds(cgroup_controller c) const {
  return std::find(controllers.begin(), controllers.end(), c) != controllers.end();
}

server_group::server_group(server_group&& other) noexcept
    : dirs_(std::exchange(other.dirs_, {})),
      procs_files_(std::exchange(other.procs_files_, {})),
      limits_(other.limits_),
      description_(std::move(other.description_)) {}

server_group& server_group::operator=(server_group&& other) noexcept {
  if (this != &other) {
    this->~server_group();
    new (this) server_group(std::move(other));
  }
  return *this;
}

server_group::~server_group() {
  if (dirs_.empty() || remove()) return;
  // A process left behind (the server's own child that outlived it) must not keep the group.
  // (A killed process leaves its group when it has exited: 20 ms was too short on a loaded
  // machine, and the group stayed behind.)
  kill_all(250);
  remove();
}

const server_group::directory* server_group::holding(cgroup_controller c) const {
  for (const auto& d : dirs_)
    if (d.holds(c)) return &d;
  return nullptr;
}

std::uint64_t server_group::oom_kills() const {
  const directory* d = holding(cgroup_controller::memory);
  if (!d) return 0;
  if (d->kind == cgroup_kind::v2)
    return keyed_value(read_or_empty(d->path + "/memory.events"), "oom_kill");
  bool found = false;
  const auto kills =
      keyed_value(read_or_empty(d->path + "/memory.oom_control"), "oom_kill", &found);
  if (found) return kills;
  // Before Linux 4.13 v1 counts no kills: that the limit was hit is the nearest sign.
  std::uint64_t failures = 0;
  const std::string text = read_or_empty(d->path + "/memory.failcnt");
  std::from_chars(text.data(), text.data() + text.size(), failures);
  return failures;
}

std::string server_group::kill_reason() const {
  return oom_kills() ? "memory limit " + format_bytes(limits_.memory_max) : "";
}

std::string server_group::limits_reached() const {
  std::vector<std::string> parts;
  if (const directory* d = holding(cgroup_controller::pids); d && limits_.tasks_max) {
    if (auto n = keyed_value(read_or_empty(d->path + "/pids.events"), "max"))
      parts.push_back(
          fmt::format("tasks limit {} reached {} time{}", limits_.tasks_max, n, n == 1 ? "" : "s"));
  }
  if (auto n = oom_kills())
    parts.push_back(fmt::format("memory limit {}: {} process{} killed",
                                format_bytes(limits_.memory_max), n, n == 1 ? "" : "es"));
  if (const directory* d = holding(cgroup_controller::cpu)) {
    if (auto n = keyed_value(read_or_empty(d->path + "/cpu.stat"), "nr_throttled"))
      parts.push_back(fmt::format("cpu limit {}: throttled in {} period{}",
                                  format_cpus(limits_.cpu_max), n, n == 1 ? "" : "s"));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

// The processes of one directory, to kill: v1's `tasks` lists every thread until it has left
// the group, where `cgroup.procs` already hides a leader that is exiting; v2's group is empty
// only when `populated` says so.
std::vector<pid_t> server_group::members(const directory& d) {
  return pids_in(d.path + (d.kind == cgroup_kind::v2 ? "/cgroup.procs" : "/tasks"));
}

bool server_group::is_empty(const directory& d) {
  if (d.kind == cgroup_kind::v2)
    return keyed_value(read_or_empty(d.path + "/cgroup.events"), "populated") == 0;
  return members(d).empty();
}

bool server_group::empty() const {
  return std::all_of(dirs_.begin(), dirs_.end(), [](const directory& d) { return is_empty(d); });
}

bool server_group::kill_all(int max_wait_ms) {
  for (const auto& d : dirs_)
    if (d.kind == cgroup_kind::v2 && exists(d.path + "/cgroup.kill"))
      (void)write_value(d.path + "/cgroup.kill", "1");
  // Without cgroup.kill a process may fork between the read and the kill: read again until
  // nothing is left.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(max_wait_ms);
  for (;;) {
    for (const auto& d : dirs_)
      for (pid_t pid : members(d)) ::kill(pid, SIGKILL);
    if (empty()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

bool server_group::remove() {
  std::erase_if(dirs_,
                [](const directory& d) { return ::rmdir(d.path.c_str()) == 0 || errno == ENOENT; });
  return dirs_.empty();
}

result<server_group> create_group(const cgroup_host& host, std::string_view server_name,
                                  const resource_limits& limits) {
  static std::atomic<unsigned> counter{0};
  const std::string name =
      fmt::format("{}-{}-{}", cgroup_detail::sanitise_name(server_name), ::getpid(), ++counter);
  server_group group;
  group.limits_ = limits;
  group.description_ = describe(host, limits);
  // One directory per parent: the v1 hierarchies each, or the one v2 group.
  for (auto c : all_cgroup_controllers) {
    const auto& place = host.at(c);
    if (place.kind == cgroup_kind::none) continue;
    if (!is_set(c, limits) && c != cgroup_controller::pids) continue;
    const std::string path = place.parent + "/" + name;
    auto same = std::find_if(group.dirs_.begin(), group.dirs_.end(),
                             [&](auto& d) { return d.path == path; });
    if (same == group.dirs_.end()) {
      if (::mkdir(path.c_str(), 0755) != 0)
        return failure(fmt::format("cannot create the cgroup {}: {}", path, std::strerror(errno)));
      group.dirs_.push_back({place.kind, path, {}});
      group.procs_files_.push_back(path + "/cgroup.procs");
      same = group.dirs_.end() - 1;
    }
    same->controllers.push_back(c);
  }
  for (const auto& d : group.dirs_) {
    for (auto c : d.controllers) {
      if (!is_set(c, limits)) continue;
      if (auto e = write_limit(d.kind, d.path, c, limits); !e.empty())
        return failure(fmt::format("cannot set the {} limit: {}", controller_name(c), e));
    }
  }
  return group;
}

}  // namespace mcpmux
