// A descriptor registered with the io_context's epoll reactor directly, for fd_transport's reads
// and writes. Only for .cpp files that compile Asio's headers anyway.
//
// Why not asio::posix::stream_descriptor: waiting for readability with it (async_wait) costs an
// epoll_ctl every time, because Asio re-registers the descriptor before each wait it cannot
// satisfy at once; reading with async_read_some into a buffer instead costs a failed read per
// message (its descriptor reads always try once before they wait). Socket receives avoid both by
// telling the reactor when a short read has emptied the descriptor. Here a wait for readability
// does the same for pipes and sockets alike: the descriptor stays registered edge-triggered, and
// a wait is queued without a system call unless an edge came while nobody waited. The contract
// that follows is the caller's: wait only after a read came up short (or would block).
#pragma once

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstddef>
#include <utility>

#include <boost/asio/detail/reactor.hpp>
#include <boost/asio/detail/reactor_op.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/recycling_allocator.hpp>
#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>

namespace mcpmux {

class reactor_fd {
  using reactor = boost::asio::detail::reactor;
  using op_base = boost::asio::detail::reactor_op;
  using error_code = boost::system::error_code;

 public:
  explicit reactor_fd(boost::asio::io_context& io)
      : reactor_(&boost::asio::use_service<reactor>(io)) {
    reactor_->init_task();
  }
  /// Takes `fd`, makes it non-blocking and registers it; throws boost::system::system_error
  /// if it cannot (then `fd` is the caller's still), as asio::posix::stream_descriptor does.
  reactor_fd(boost::asio::io_context& io, int fd) : reactor_fd(io) {
    error_code ec;
    assign(fd, ec);
    if (ec) throw boost::system::system_error(ec, "reactor_fd");
  }
  reactor_fd(const reactor_fd&) = delete;
  reactor_fd& operator=(const reactor_fd&) = delete;
  reactor_fd(reactor_fd&& o) noexcept
      : reactor_(o.reactor_), fd_(std::exchange(o.fd_, -1)), data_(std::exchange(o.data_, {})) {}
  reactor_fd& operator=(reactor_fd&& o) noexcept {
    if (this != &o) {
      close();
      reactor_ = o.reactor_;
      fd_ = std::exchange(o.fd_, -1);
      data_ = std::exchange(o.data_, {});
    }
    return *this;
  }
  ~reactor_fd() { close(); }

  /// Registers `fd` (owned from now on), non-blocking.
  void assign(int fd, error_code& ec) {
    ec = {};
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
      ec.assign(errno, boost::system::system_category());
      return;
    }
    if (const int err = reactor_->register_descriptor(fd, data_)) {
      ec.assign(err, boost::system::system_category());
      return;
    }
    fd_ = fd;
  }

  bool is_open() const { return fd_ >= 0; }
  int native_handle() const { return fd_; }

  /// Completes what waits with operation_aborted.
  void cancel() {
    if (is_open()) reactor_->cancel_ops(fd_, data_);
  }

  /// Deregisters and gives the descriptor back, open. What waits completes aborted.
  int release() {
    if (!is_open()) return -1;
    unregister();
    return std::exchange(fd_, -1);
  }

  void close() {
    if (!is_open()) return;
    unregister();
    ::close(std::exchange(fd_, -1));
  }

  /// Calls `handler(error_code)` once the descriptor may be read (or has failed or hung up).
  /// Edge-triggered: call it only after a read came up short or would block. After a read that
  /// filled its buffer, read again instead.
  template <class Handler>
  void async_readable(Handler&& handler) {
    start(reactor::read_op, new_op<readable_op<std::decay_t<Handler>>>(std::move(handler)));
  }

  /// Writes what the descriptor takes of `iov[0..count)` now, with no wait and no handler; true
  /// when all of it went. Otherwise `iov` and `count` are left at what remains (an error is
  /// left for async_write_all to meet again and report).
  bool write_now(iovec*& iov, std::size_t& count) {
    return write_gather(fd_, iov, count) == 0 && count == 0;
  }

  /// Writes all of `iov[0..count)` (which must stay valid and may be changed until the handler
  /// runs), then calls `handler(error_code)`. The first attempt is made at once; the handler
  /// always runs later, from the loop.
  template <class Handler>
  void async_write_all(iovec* iov, std::size_t count, Handler&& handler) {
    using op = write_op<std::decay_t<Handler>>;
    start(reactor::write_op, new_op<op>(fd_, iov, count, std::move(handler)));
  }

 private:
  template <class Op>
  using allocator = boost::asio::recycling_allocator<Op>;

  template <class Op, class... Args>
  static Op* new_op(Args&&... args) {
    Op* p = allocator<Op>().allocate(1);
    return new (p) Op(std::forward<Args>(args)...);
  }

  template <class Op>
  static void delete_op(Op* op) {
    op->~Op();
    allocator<Op>().deallocate(op, 1);
  }

  // Runs the handler of a finished operation: the memory goes back first, so that the handler's
  // next operation reuses it. `owner` is null when the io_context is destroying what is left.
  template <class Op>
  static void finish(void* owner, boost::asio::detail::scheduler_operation* base, const error_code&,
                     std::size_t) {
    auto* op = static_cast<Op*>(base);
    auto handler = std::move(op->handler);
    const error_code ec = op->ec_;
    delete_op(op);
    if (owner) handler(ec);
  }

  template <class Handler>
  struct readable_op : op_base {
    explicit readable_op(Handler&& h)
        : op_base(error_code(), &perform, &reactor_fd::finish<readable_op>),
          handler(std::move(h)) {}
    // Readiness is all it waits for, and it reports the edge used up: the reactor queues the
    // next wait without trying it first.
    static status perform(op_base*) { return done_and_exhausted; }
    Handler handler;
  };

  template <class Handler>
  struct write_op : op_base {
    write_op(int fd, iovec* iov, std::size_t count, Handler&& h)
        : op_base(error_code(), &perform, &reactor_fd::finish<write_op>),
          handler(std::move(h)),
          fd(fd),
          iov(iov),
          count(count) {}

    static status perform(op_base* base) {
      auto* o = static_cast<write_op*>(base);
      const int err = write_gather(o->fd, o->iov, o->count);
      if (err == EAGAIN) return not_done;
      if (err) o->ec_.assign(err, boost::system::system_category());
      return done;
    }

    Handler handler;
    int fd;
    iovec* iov;
    std::size_t count;
  };

  // Writes until `iov[0..count)` is all out (0), the descriptor is full (EAGAIN) or fails (its
  // errno); `iov` and `count` follow what was written.
  static int write_gather(int fd, iovec*& iov, std::size_t& count) {
    while (count > 0) {
      const ssize_t n = ::writev(fd, iov, static_cast<int>(std::min<std::size_t>(count, IOV_MAX)));
      if (n < 0) {
        if (errno == EINTR) continue;
        return errno == EWOULDBLOCK ? EAGAIN : errno;
      }
      auto left = static_cast<std::size_t>(n);
      while (count > 0 && left >= iov->iov_len) {
        left -= iov->iov_len;
        ++iov;
        --count;
      }
      if (count > 0) {
        iov->iov_base = static_cast<char*>(iov->iov_base) + left;
        iov->iov_len -= left;
      }
    }
    return 0;
  }

  void start(int op_type, op_base* op) {
    if (!is_open()) {
      op->ec_ = boost::asio::error::bad_descriptor;
      reactor_->post_immediate_completion(op, false);
      return;
    }
    reactor_->start_op(op_type, fd_, data_, op, false, true);
  }

  // As Asio does for a descriptor that may have been duplicated (a child forked before exec
  // holds it for a moment): removed from epoll explicitly, since closing it might not.
  void unregister() {
    reactor_->deregister_descriptor(fd_, data_, false);
    reactor_->cleanup_descriptor_data(data_);
  }

  reactor* reactor_;
  int fd_ = -1;
  reactor::per_descriptor_data data_{};
};

}  // namespace mcpmux
