// Unix-socket listener with the contract's permissions and peer-uid check.
#include "transports/unix_listener.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/files.hpp"
#include "base/log.hpp"

namespace mcpmux {
namespace {

namespace asio = boost::asio;
using stream = asio::local::stream_protocol;

const logger& log() {
  static const logger l("listener");
  return l;
}

// True when something accepts connections at `path`.
bool live_socket(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  bool live = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return live;
}

class listener_impl final : public unix_listener,
                            public std::enable_shared_from_this<listener_impl> {
 public:
  listener_impl(asio::io_context& io, std::function<void(int)> on_accept)
      : acceptor_(io), retry_(io), on_accept_(std::move(on_accept)) {}

  result<> open(const std::string& path, int inherited_fd) {
    boost::system::error_code ec;
    if (inherited_fd >= 0) {
      acceptor_.assign(stream(), inherited_fd, ec);
      if (ec) return failure("cannot use the inherited socket: " + ec.message());
      return {};
    }
    if (path.size() >= sizeof(sockaddr_un::sun_path))
      return failure("socket path is too long: " + path);
    auto dir = std::filesystem::path(path).parent_path().string();
    // Ours and private, or made now; never a symlink followed, never another's mode changed.
    if (!dir.empty()) {
      if (auto made = make_private_dir(dir); !made) return made;
    }
    if (live_socket(path)) return failure("another mcpmuxd is already serving " + path);
    ::unlink(path.c_str());  // a stale socket from a daemon that died
    acceptor_.open(stream(), ec);
    if (!ec) {
      const mode_t old = ::umask(0177);  // the socket file is born 0600
      acceptor_.bind(stream::endpoint(path), ec);
      ::umask(old);
    }
    if (!ec) ::chmod(path.c_str(), 0600);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return failure("cannot listen on " + path + ": " + ec.message());
    path_ = path;
    return {};
  }

  void accept() {
    acceptor_.async_accept(
        [self = shared_from_this()](boost::system::error_code ec, stream::socket s) {
          if (ec == asio::error::operation_aborted || !self->acceptor_.is_open()) return;
          if (ec) {
            // Out of descriptors, most likely: wait a little instead of spinning.
            log().warn("accept failed: {}", ec.message());
            self->retry_.expires_after(std::chrono::milliseconds(100));
            self->retry_.async_wait([self](boost::system::error_code e) {
              if (!e) self->accept();
            });
            return;
          }
          self->admit(std::move(s));
          self->accept();
        });
  }

  void close() override {
    boost::system::error_code ignored;
    retry_.cancel();
    acceptor_.close(ignored);
    if (!path_.empty()) ::unlink(path_.c_str());
    path_.clear();
  }

 private:
  void admit(stream::socket s) {
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(s.native_handle(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
        cred.uid != ::getuid()) {
      log().warn("refused a connection from uid {} (pid {})", cred.uid, cred.pid);
      return;
    }
    log().debug("accepted a connection from pid {}", cred.pid);
    on_accept_(s.release());
  }

  stream::acceptor acceptor_;
  asio::steady_timer retry_;
  std::function<void(int)> on_accept_;
  std::string path_;
};

}  // namespace

result<std::shared_ptr<unix_listener>> listen_unix(asio::io_context& io, const std::string& path,
                                                   int inherited_fd,
                                                   std::function<void(int)> on_accept) {
  auto l = std::make_shared<listener_impl>(io, std::move(on_accept));
  if (auto opened = l->open(path, inherited_fd); !opened) return std::move(opened.error());
  l->accept();
  return std::shared_ptr<unix_listener>(std::move(l));
}

}  // namespace mcpmux
