// inotify-based watcher of the config file and its includes, on the daemon's io_context.
#include "daemon/config_watch.hpp"

#include <sys/inotify.h>
#include <unistd.h>

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <filesystem>
#include <map>
#include <set>

namespace mcpmux {
namespace {

namespace asio = boost::asio;

constexpr std::uint32_t watched_events =
    IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_MOVED_FROM;

class watch_impl final : public config_watch, public std::enable_shared_from_this<watch_impl> {
 public:
  watch_impl(asio::io_context& io, int fd, std::chrono::milliseconds debounce,
             std::function<void()> on_change)
      : fd_(io, fd), timer_(io), debounce_(debounce), on_change_(std::move(on_change)) {}

  void read() {
    fd_.async_read_some(asio::buffer(buf_),
                        [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
                          if (ec) return;
                          self->scan(n);
                          self->read();
                        });
  }

  bool watch(const std::vector<std::string>& paths) override {
    // Directory → the names watched in it; inotify watches directories, so that an editor's
    // rename over a file is seen as well as a write to it.
    std::map<std::string, std::set<std::string>> wanted;
    for (const auto& path : paths) {
      const std::filesystem::path p(path);
      wanted[p.has_parent_path() ? p.parent_path().string() : std::string(".")].insert(
          p.filename().string());
    }
    const int fd = fd_.native_handle();
    for (auto it = dirs_.begin(); it != dirs_.end();) {
      if (wanted.count(it->first)) {
        ++it;
        continue;
      }
      ::inotify_rm_watch(fd, it->second);
      names_.erase(it->second);
      it = dirs_.erase(it);
    }
    for (auto& [dir, names] : wanted) {
      const int wd = ::inotify_add_watch(fd, dir.c_str(), watched_events);  // same wd if known
      if (wd < 0) continue;
      dirs_[dir] = wd;
      names_[wd] = std::move(names);
    }
    return !dirs_.empty();
  }

  void close() override {
    boost::system::error_code ignored;
    timer_.cancel();
    fd_.close(ignored);
  }

 private:
  void scan(std::size_t n) {
    bool hit = false;
    for (std::size_t off = 0; off + sizeof(inotify_event) <= n;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buf_.data() + off);
      if (auto it = names_.find(ev->wd); ev->len > 0 && it != names_.end())
        hit = hit || it->second.count(ev->name) != 0;
      off += sizeof(inotify_event) + ev->len;
    }
    if (!hit) return;
    // Editors write in several steps (truncate, write, rename): wait for quiet.
    timer_.expires_after(debounce_);
    timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (!ec) self->on_change_();
    });
  }

  asio::posix::stream_descriptor fd_;
  asio::steady_timer timer_;
  std::chrono::milliseconds debounce_;
  std::function<void()> on_change_;
  std::map<std::string, int> dirs_;             ///< watched directory → watch descriptor
  std::map<int, std::set<std::string>> names_;  ///< watch descriptor → file names in it
  alignas(inotify_event) std::array<char, 4096> buf_{};
};

}  // namespace

std::shared_ptr<config_watch> watch_config(asio::io_context& io,
                                           const std::vector<std::string>& paths,
                                           std::chrono::milliseconds debounce,
                                           std::function<void()> on_change) {
  int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) return nullptr;
  auto w = std::make_shared<watch_impl>(io, fd, debounce, std::move(on_change));
  if (!w->watch(paths)) {
    w->close();
    return nullptr;
  }
  w->read();
  return w;
}

}  // namespace mcpmux
