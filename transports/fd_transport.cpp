// NDJSON transport over Unix sockets and pipes: one read loop, at most one write in flight.
#include "transports/fd_transport.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "core/protocol/error.hpp"
#include "core/protocol/ndjson.hpp"
#include "transports/reactor_fd.hpp"
#include "transports/stdio_handoff.hpp"

namespace mcpmux {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;

constexpr std::size_t read_chunk = 64 * 1024;
constexpr std::size_t max_gather = 64;  // messages per writev (up to 4 buffers each)

class fd_transport final : public transport, public std::enable_shared_from_this<fd_transport> {
 public:
  fd_transport(asio::io_context& io, int read_fd, int write_fd, fd_transport_options opt)
      : io_(io), rd_(io, read_fd), opt_(opt), framer_(opt.limits.max_message_bytes), linger_(io) {
    if (write_fd != read_fd) wr_own_.emplace(io, write_fd);
  }

  void start(transport_events& events) override {
    events_ = &events;
    if (opt_.accept_handoff)
      read_first();
    else
      read_more();
  }

  std::error_code send(std::string message) override {
    return send_spliced({std::move(message), nullptr, {}});
  }

  std::error_code send_spliced(spliced_text message) override {
    if (closing_ || write_failed_ || !wr().is_open()) return errc::transport_closed;
    if (queued_ + message.size() + 1 > opt_.limits.max_queue_bytes) return errc::queue_full;
    // The newline goes out as a buffer of its own: appending it could reallocate a big message.
    queued_ += message.size() + 1;
    queue_.push_back(std::move(message));
    if (writing_) return {};
    if (cork_depth() == 0) {
      write_more();
      return {};
    }
    if (!corked_) {
      corked_ = true;
      corked().push_back(shared_from_this());
    }
    if (final_line()) uncork();  // the read's last line: the batch goes now, this one with it
    return {};
  }

  void close() override {
    if (closing_) return;
    closing_ = true;
    events_ = nullptr;
    if (!writing_ && !queue_.empty()) write_more();  // corked: what was sent still goes
    if (!writing_) {
      finish_writes();
      return;
    }
    // Give queued bytes a bounded chance to drain (an error reply before hanging up).
    linger_.expires_after(opt_.flush_timeout);
    linger_.async_wait([self = shared_from_this()](error_code ec) {
      if (!ec) self->close_all();
    });
  }

  std::size_t queued_bytes() const override { return queued_; }

  void read_ready() override {
    while (!read_done_ && events_) {
      std::size_t n = 0;
      const error_code ec = read_some(n);
      if (ec == asio::error::would_block) return;
      if (n > 0) feed(std::string_view(shared_buffer(), n));
      if (ec) return on_read_end(ec);
    }
  }

 private:
  reactor_fd& wr() { return wr_own_ ? *wr_own_ : rd_; }
  bool same_fd() const { return !wr_own_; }

  // One read into the buffer shared by every transport of the thread: an idle connection holds
  // no read buffer at all. End of stream is asio::error::eof.
  error_code read_some(std::size_t& n) {
    ssize_t got;
    do got = ::read(rd_.native_handle(), shared_buffer(), read_chunk);
    while (got < 0 && errno == EINTR);
    n = got > 0 ? static_cast<std::size_t>(got) : 0;
    if (got > 0) return {};
    if (got == 0) return asio::error::eof;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return asio::error::would_block;
    return {errno, boost::system::system_category()};
  }

  // Waits for readability, then reads. The wait is edge-triggered (transports/reactor_fd.hpp):
  // it is made only after a read came up short or would block.
  void read_more() {
    rd_.async_readable([self = shared_from_this()](error_code ec) {
      if (ec) return self->on_read(ec, 0);
      self->read_now();
    });
  }

  void read_now() {
    std::size_t n = 0;
    const error_code ec = read_some(n);
    if (ec == asio::error::would_block) return read_more();
    on_read(ec, n);
  }

  // The first read of a client socket: recvmsg, so that descriptors passed with the first line
  // arrive. The handoff line with two of them hands the agent's stdio over; anything else is
  // an ordinary first read (passed descriptors closed).
  void read_first() {
    rd_.async_readable([self = shared_from_this()](error_code ec) {
      if (ec) return self->on_read(ec, 0);
      iovec iov{shared_buffer(), read_chunk};
      alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 2)];
      msghdr msg{};
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      ssize_t n;
      do n = ::recvmsg(self->rd_.native_handle(), &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
      while (n < 0 && errno == EINTR);  // again at once: the edge is not coming back
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return self->read_first();
      if (n < 0) return self->on_read(error_code(errno, boost::system::system_category()), 0);
      std::vector<int> fds;
      for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        const std::size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (std::size_t i = 0; i < k; ++i) {
          int fd;
          std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
          fds.push_back(fd);
        }
      }
      const std::string_view got(shared_buffer(), static_cast<std::size_t>(n));
      if (fds.size() == 2 && got.size() == handoff::request.size() + 1 &&
          got.starts_with(handoff::request) && got.back() == '\n' &&
          self->take_over(fds[0], fds[1]))
        return;
      for (int fd : fds) ::close(fd);
      if (n == 0) return self->on_read(asio::error::eof, 0);
      self->on_read({}, static_cast<std::size_t>(n));
    });
  }

  static bool is_stream(int fd) {
    struct stat st {};
    return ::fstat(fd, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
  }

  // From now on the agent's pipes carry the conversation; the socket only tells when the bridge
  // leaves. Only pipes and sockets are taken (epoll cannot wait on a file). Nothing was written
  // yet (the client spoke first), so the answer goes out at once. False: not taken, the line
  // goes to the session as an ordinary request.
  bool take_over(int in, int out) {
    if (!is_stream(in) || !is_stream(out)) return false;
    error_code ec;
    reactor_fd agent_in(io_), agent_out(io_);
    agent_in.assign(in, ec);
    if (!ec) agent_out.assign(out, ec);
    if (ec) {
      (void)agent_in.release();  // the caller closes both
      (void)agent_out.release();
      return false;
    }
    const std::string reply = std::string(handoff::accepted) + "\n";
    (void)::send(rd_.native_handle(), reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    bridge_.emplace(std::move(rd_));
    rd_ = std::move(agent_in);
    wr_own_.emplace(std::move(agent_out));
    watch_bridge();
    read_more();
    return true;
  }

  void watch_bridge() {
    bridge_->async_readable([self = shared_from_this()](error_code ec) {
      if (ec == asio::error::operation_aborted || !self->bridge_) return;
      // Nothing is expected but the end: whatever else comes is read away (all of it, since
      // the wait is edge-triggered) and ignored.
      ssize_t n = -1;
      char ignored[256];
      if (!ec) do
          n = ::recv(self->bridge_->native_handle(), ignored, sizeof ignored, MSG_DONTWAIT);
        while (n > 0 || (n < 0 && errno == EINTR));
      if (!ec && n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return self->watch_bridge();
      self->fail(errc::transport_closed, "mcpmux connect exited");
      self->rd_.cancel();  // stop reading the agent: nobody listens
    });
  }

  // Allocated at the thread's first read: as a thread-local array it was zeroed at the start of
  // every thread, the audit writer's included, and stayed in its memory.
  static char* shared_buffer() {  // of read_chunk bytes
    static thread_local std::unique_ptr<char[]> buf;
    if (!buf) buf.reset(new char[read_chunk]);
    return buf.get();
  }

  void on_read(error_code ec, std::size_t n) {
    if (read_done_) return;  // read_ready() already met the end
    if (n > 0) feed(std::string_view(shared_buffer(), n));
    if (ec) return on_read_end(ec);
    if (n < read_chunk) return read_more();
    // A full buffer: more may be waiting, and no new edge will say so. Read on after what
    // else the loop has to do.
    asio::post(io_, [self = shared_from_this()] {
      if (!self->read_done_) self->read_now();
    });
  }

  void on_read_end(error_code ec) {
    read_done_ = true;
    if (ec == asio::error::eof) {
      if (opt_.last_line_at_eof) feed("\n");  // a last line without its newline still counts
      fail(errc::transport_closed, "end of stream");
    } else if (ec != asio::error::operation_aborted) {
      fail(errc::transport_closed, "read failed: " + ec.message());
    }
    maybe_drained();
  }

  // What one read hands to the session is answered in one write per destination: messages sent
  // to any fd transport of the thread while a read is being fed wait (corked) until the read is
  // fed whole, then each destination writes its batch at once. Without it, the first message of
  // a batch went out alone and the rest after it.
  static int& cork_depth() {
    static thread_local int depth = 0;
    return depth;
  }
  static std::vector<std::shared_ptr<fd_transport>>& corked() {
    static thread_local std::vector<std::shared_ptr<fd_transport>> list;
    return list;
  }
  // Set while the read's last line is handled: its first message takes the whole batch out,
  // and what it sends after that is written at once. The work the session does after sending
  // (the audit, the histograms) then overlaps the peer's reading instead of delaying it.
  static bool& final_line() {
    static thread_local bool handling_last = false;
    return handling_last;
  }
  static void uncork() {
    auto& list = corked();
    for (std::size_t i = 0; i < list.size(); ++i) {  // a flush cannot add to it (depth is 0)
      auto& t = *list[i];
      t.corked_ = false;
      if (!t.writing_ && !t.queue_.empty() && !t.write_failed_) t.write_more();
    }
    list.clear();
  }

  void feed(std::string_view data) {
    ++cork_depth();
    feed_uncorked(data);
    if (--cork_depth() == 0) {
      final_line() = false;
      uncork();
    }
  }

  void feed_uncorked(std::string_view data) {
    if (events_) {
      framer_.feed(
          data,
          [this](std::string_view line, std::string* whole) {
            if (!events_) return;
            // Only the outermost read's last line: a read fed while another is being fed keeps
            // its batch until the outer one is done.
            if (cork_depth() == 1 && framer_.at_last_line()) final_line() = true;
            if (whole)
              events_->on_message_buffer(std::move(*whole));
            else
              events_->on_message(line);
          },
          [this](std::size_t bytes) {
            // Reported already when it went over the cap (below), unless it ended in this read.
            if (events_ && !oversize_reported_)
              events_->on_oversize_head(bytes, framer_.discarded_head());
            oversize_reported_ = false;
          });
      // A peer streaming an endless line hears of it now, not when (if ever) its newline comes.
      if (framer_.discarding() && !oversize_reported_ && events_) {
        oversize_reported_ = true;
        events_->on_oversize_head(framer_.discarded(), framer_.discarded_head());
      }
    }
  }

  // Writes the queue: at once while the descriptor takes it all, and only what it does not
  // take through the reactor, which waits for room and calls on_written. A write done at once
  // posts nothing: a posted completion cost the loop a non-blocking epoll_wait per message.
  void write_more() {
    writing_ = true;
    while (!queue_.empty()) {
      gather();
      iovec* iov = gather_.data();
      std::size_t count = gather_.size();
      if (!wr().write_now(iov, count))
        return wr().async_write_all(
            iov, count, [self = shared_from_this()](error_code ec) { self->on_written(ec); });
      pop_written();
    }
    writing_ = false;
  }

  // Lays the first messages of the queue out for one writev (in_flight_ of them).
  void gather() {
    gather_.clear();
    in_flight_ = std::min(queue_.size(), max_gather);
    static constexpr char newline = '\n';
    const auto add = [this](std::string_view s) {
      gather_.push_back({const_cast<char*>(s.data()), s.size()});
    };
    for (std::size_t i = 0; i < in_flight_; ++i) {
      const auto& m = queue_[i];
      if (!m.head.empty()) add(m.head);
      if (m.shared) add(*m.shared);
      if (!m.tail.empty()) add(m.tail);
      add({&newline, 1});
    }
  }

  void pop_written() {
    for (std::size_t i = 0; i < in_flight_; ++i) {
      queued_ -= queue_.front().size() + 1;
      queue_.pop_front();
    }
    in_flight_ = 0;
  }

  void on_written(error_code ec) {
    writing_ = false;
    pop_written();
    if (ec) {
      write_failed_ = true;
      queue_.clear();
      queued_ = 0;
      if (ec != asio::error::operation_aborted)
        fail(errc::transport_closed, "write failed: " + ec.message());
      if (closing_) close_all();
      return;
    }
    if (!queue_.empty()) write_more();
    if (!writing_ && closing_) finish_writes();
  }

  // All queued bytes are out (or abandoned): end the write direction.
  void finish_writes() {
    linger_.cancel();
    if (same_fd()) {
      if (opt_.half_close_on_flush && rd_.is_open()) ::shutdown(rd_.native_handle(), SHUT_WR);
      // Keep reading (and discarding) until the peer hangs up, bounded by the linger timer.
      linger_.expires_after(opt_.flush_timeout);
      linger_.async_wait([self = shared_from_this()](error_code ec) {
        if (!ec) self->close_all();
      });
      if (read_done_) close_all();
    } else {
      wr_own_->close();  // EOF on the child's stdin: the polite way to ask it to stop
      maybe_drained();
    }
  }

  void close_all() {
    linger_.cancel();
    rd_.close();
    if (wr_own_) wr_own_->close();
    if (bridge_) bridge_->close();
    read_done_ = true;
    maybe_drained();
  }

  void maybe_drained() {
    if (!closing_ || !read_done_) return;
    if (same_fd() || !wr_own_->is_open()) {
      linger_.cancel();
      rd_.close();
      if (bridge_) bridge_->close();  // the bridge sees the end and exits
    }
  }

  void fail(std::error_code ec, std::string reason) {
    if (auto* ev = std::exchange(events_, nullptr)) ev->on_closed(ec, std::move(reason));
  }

  asio::io_context& io_;
  reactor_fd rd_;
  std::optional<reactor_fd> wr_own_;
  std::optional<reactor_fd> bridge_;  ///< after a stdio handoff: the socket of mcpmux connect
  fd_transport_options opt_;
  ndjson_framer framer_;
  asio::steady_timer linger_;
  transport_events* events_ = nullptr;
  std::deque<spliced_text> queue_;
  std::vector<iovec> gather_;
  std::size_t in_flight_ = 0;
  std::size_t queued_ = 0;
  bool writing_ = false;
  bool corked_ = false;  ///< in corked(), its queue written when the read being fed is done
  bool write_failed_ = false;
  bool closing_ = false;
  bool read_done_ = false;
  bool oversize_reported_ = false;  ///< the line being skipped was reported when it crossed the cap
};

}  // namespace

std::shared_ptr<transport> make_fd_transport(asio::io_context& io, int read_fd, int write_fd,
                                             fd_transport_options options) {
  return std::make_shared<fd_transport>(io, read_fd, write_fd, options);
}

}  // namespace mcpmux
