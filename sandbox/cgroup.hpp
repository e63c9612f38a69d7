// Where a stdio server's limits are held: a cgroup per start, v2 where one is delegated to the
// daemon, else the writable v1 hierarchies; found once by probe_cgroups() when the daemon starts.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/result.hpp"
#include "sandbox/limits.hpp"

namespace mcpmux {

/// Which cgroup interface holds a controller.
enum class cgroup_kind {
  none,  ///< not usable here: its limit is not enforced
  v1,    ///< a hierarchy of its own (or shared with a few), files named per controller
  v2,    ///< the unified hierarchy, delegated to the daemon
};

/// The controllers a server's limits need.
enum class cgroup_controller { memory, pids, cpu };
inline constexpr std::array<cgroup_controller, 3> all_cgroup_controllers = {
    cgroup_controller::memory, cgroup_controller::pids, cgroup_controller::cpu};
/// The controller's kernel name: "memory", "pids", "cpu".
std::string_view controller_name(cgroup_controller c);

/// Where one controller can be used.
struct cgroup_place {
  cgroup_kind kind = cgroup_kind::none;
  std::string parent;   ///< the `mcpmux` directory the servers' groups are made in
  std::string problem;  ///< why it cannot be used, for people; "" when it can
};

/// The cgroups this daemon may use, per controller.
struct cgroup_host {
  std::array<cgroup_place, 3> places;  ///< indexed by cgroup_controller
  std::string problem;  ///< why no limit but files_max can be enforced; "" when one can
  const cgroup_place& at(cgroup_controller c) const { return places[static_cast<std::size_t>(c)]; }
  /// Whether at least one controller is usable.
  bool usable() const { return problem.empty(); }
};

/// Finds the cgroups the daemon may use: a delegated v2 cgroup (its own, from /proc/self/cgroup,
/// writable, the controllers enabled or enable-able for its children; a daemon alone in its
/// cgroup moves itself into a leaf `mcpmux-daemon` beside them, as v2 allows no process in a
/// cgroup that hands controllers down), else each controller's v1 hierarchy at the daemon's own
/// cgroup in it, writable. Makes the `mcpmux` parents, and removes empty groups left there by a
/// daemon that is gone.
cgroup_host probe_cgroups();

/// The limits with what enforces each, for people: "memory 512 MiB (cgroup v1), cpu: no limit
/// (no cpu controller), tasks 1024 (cgroup v1), files 8192 (rlimit)". Limits that are 0 are left
/// out; none at all reads "no limits".
std::string describe(const cgroup_host& host, const resource_limits& limits);

/// One start of one server: a cgroup (one directory per v1 hierarchy, or one v2 directory) with
/// its limits written, which the server's first process joins before it execs anything.
class server_group {
 public:
  server_group(server_group&& other) noexcept;
  server_group& operator=(server_group&& other) noexcept;
  server_group(const server_group&) = delete;
  server_group& operator=(const server_group&) = delete;
  /// Removes the group; processes still in it are killed first (bounded to a few ms).
  ~server_group();

  /// The `cgroup.procs` files a process writes its pid to ("0": itself) to join, one per
  /// hierarchy. Empty when no controller is usable.
  const std::vector<std::string>& procs_files() const { return procs_files_; }
  /// The limits this group was made with.
  const resource_limits& limits() const { return limits_; }
  /// The limits with what enforces each (see describe(cgroup_host, …)).
  const std::string& description() const { return description_; }

  /// After the server exited: "memory limit 512 MiB" when the OOM killer killed in this group,
  /// else "".
  std::string kill_reason() const;
  /// The limits the server ran into so far, for status: "tasks limit 1024 reached 3 times,
  /// memory limit 512 MiB: 1 process killed"; "" when none.
  std::string limits_reached() const;
  /// Kills every process in the group (v2 `cgroup.kill`, else SIGKILL to each pid in
  /// `cgroup.procs`, repeated until it is empty or `max_wait_ms` passed). True when empty.
  bool kill_all(int max_wait_ms = 100);
  /// Whether no process is left in the group.
  bool empty() const;
  /// Removes the group's directories (they must be empty). True when they are all gone.
  bool remove();

 private:
  friend result<server_group> create_group(const cgroup_host&, std::string_view,
                                           const resource_limits&);
  /// One directory of the group and the controllers it holds.
  struct directory {
    cgroup_kind kind = cgroup_kind::none;
    std::string path;
    std::vector<cgroup_controller> controllers;
    bool holds(cgroup_controller c) const;
  };
  server_group() = default;
  const directory* holding(cgroup_controller c) const;
  static std::vector<pid_t> members(const directory& d);
  static bool is_empty(const directory& d);
  std::uint64_t oom_kills() const;

  std::vector<directory> dirs_;
  std::vector<std::string> procs_files_;
  resource_limits limits_;
  std::string description_;
};

/// Makes a uniquely named group for one start of `server_name` (`NAME-PID-N`: the name with
/// anything but letters, digits, '_', '-' and '.' replaced, the daemon's pid, a counter) in each
/// usable place, and writes the limits that are set (v2: memory.max with memory.swap.max 0,
/// pids.max, cpu.max; v1: memory.limit_in_bytes and memory.memsw.limit_in_bytes, pids.max,
/// cpu.cfs_quota_us over a 100 ms period). A controller whose limit is 0 is not joined, except
/// pids, which also finds every process of the server for kill_all().
result<server_group> create_group(const cgroup_host& host, std::string_view server_name,
                                  const resource_limits& limits);

namespace cgroup_detail {
/// A line of /proc/self/cgroup: "4:memory:/a/b" → {"memory"}, "/a/b"; "0::/a" → {}, "/a".
struct membership {
  std::vector<std::string> controllers;  ///< empty for the v2 line
  std::string path;
};
std::vector<membership> parse_proc_cgroup(std::string_view text);
/// A cgroup mount from /proc/self/mountinfo.
struct mount {
  std::string root;                  ///< the hierarchy's directory mounted (usually "/")
  std::string point;                 ///< where it is mounted
  bool v2 = false;                   ///< cgroup2
  std::vector<std::string> options;  ///< super options: the v1 controllers among them
};
std::vector<mount> parse_cgroup_mounts(std::string_view mountinfo);
/// The value of `key` in a flat keyed file ("oom_kill 3\nmax 0\n"); 0 when it is not there.
std::uint64_t keyed_value(std::string_view text, std::string_view key, bool* found = nullptr);
/// `name` as a cgroup directory name: letters, digits, '_', '-' and '.' kept, the rest '_',
/// at most 48 bytes, never starting with '.'.
std::string sanitise_name(std::string_view name);
}  // namespace cgroup_detail

}  // namespace mcpmux
