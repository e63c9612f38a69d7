// inotify-based config file watcher on the daemon's io_context.
#include "daemon/config_watch.hpp"

#include <sys/inotify.h>
#include <unistd.h>

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <filesystem>

namespace mcpmux {
namespace {

namespace asio = boost::asio;

class watch_impl final : public config_watch, public std::enable_shared_from_this<watch_impl> {
 public:
  watch_impl(asio::io_context& io, int fd, std::string name, std::chrono::milliseconds debounce,
             std::function<void()> on_change)
      : fd_(io, fd),
        timer_(io),
        name_(std::move(name)),
        debounce_(debounce),
        on_change_(std::move(on_change)) {}

  void read() {
    fd_.async_read_some(asio::buffer(buf_),
                        [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
                          if (ec) return;
                          self->scan(n);
                          self->read();
                        });
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
      if (ev->len > 0 && name_ == ev->name) hit = true;
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
  std::string name_;
  std::chrono::milliseconds debounce_;
  std::function<void()> on_change_;
  alignas(inotify_event) std::array<char, 4096> buf_{};
};

}  // namespace

std::shared_ptr<config_watch> watch_config(asio::io_context& io, const std::string& path,
                                           std::chrono::milliseconds debounce,
                                           std::function<void()> on_change) {
  const std::filesystem::path p(path);
  const auto dir = p.has_parent_path() ? p.parent_path().string() : std::string(".");
  int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) return nullptr;
  if (::inotify_add_watch(fd, dir.c_str(),
                          IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_MOVED_FROM) <
      0) {
    ::close(fd);
    return nullptr;
  }
  auto w =
      std::make_shared<watch_impl>(io, fd, p.filename().string(), debounce, std::move(on_change));
  w->read();
  return w;
}

}  // namespace mcpmux
