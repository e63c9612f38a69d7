// NDJSON transport over Unix sockets and pipes: one read loop, at most one write in flight.
//
// Built on Asio's public descriptor: a read is async_read_some, which tries the descriptor at
// once and waits (edge-triggered, no epoll_ctl) only when it would block; a write is tried at once
// with a non-blocking write_some, and only what the descriptor does not take waits with
// async_write_some. (async_wait is not used on the hot path: Asio re-registers the descriptor with
// epoll_ctl before each wait it cannot satisfy at once.) What waits for the loop is a small buffer
// per transport; what a read that fills it leaves is read at once into a bigger one, held only
// while the read lasts, so an idle connection keeps 1 KiB.
#include "transports/fd_transport.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "protocol/error.hpp"
#include "protocol/ndjson.hpp"
#include "transports/stdio_handoff.hpp"
#include "transports/write_batch.hpp"

namespace mcpmux {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;
using descriptor = asio::posix::stream_descriptor;

constexpr std::size_t first_chunk = 1024;      // what waits for the loop: most lines fit
constexpr std::size_t read_chunk = 64 * 1024;  // what the rest of a long read goes into
constexpr std::size_t chunks_per_turn = 16;    // then the loop's other work comes first
constexpr std::size_t max_gather = 64;         // messages per write (up to 4 buffers each)

// A descriptor of ours, non-blocking, so that synchronous reads and writes tell would_block.
descriptor open_descriptor(asio::io_context& io, int fd) {
  descriptor d(io, fd);
  d.non_blocking(true);
  return d;
}

// Closing fails only for a descriptor already gone: nothing to do about it.
void close_quietly(descriptor& d) {
  error_code ignored;
  d.close(ignored);
}

bool would_block(const error_code& ec) {
  return ec == asio::error::would_block || ec == asio::error::try_again;
}

// The buffers a message goes out as, each to `add`: its parts that are not empty, then the
// newline (a buffer of its own: appending it could reallocate a big message).
template <class Add>
void message_buffers(const spliced_text& m, Add&& add) {
  static constexpr char newline = '\n';
  const auto part = [&](std::string_view p) {
    if (!p.empty()) add(asio::const_buffer(p.data(), p.size()));
  };
  part(m.head);
  part(m.middle());
  part(m.tail);
  add(asio::const_buffer(&newline, 1));
}

class fd_transport final : public transport,
                           public write_batch::member,
                           public std::enable_shared_from_this<fd_transport> {
 public:
  fd_transport(asio::io_context& io, int read_fd, int write_fd, fd_transport_options opt)
      : io_(io),
        rd_(open_descriptor(io, read_fd)),
        opt_(std::move(opt)),
        framer_(opt_.limits.max_message_bytes),
        linger_(io) {
    if (write_fd != read_fd) wr_own_.emplace(open_descriptor(io, write_fd));
  }

  void start(transport_events& events) override {
    events_ = &events;
    if (opt_.accept_handoff)
      read_first();
    else
      read_more();
  }

  std::error_code send(std::string message) override {
    return send_text(message, [&] { return std::move(message); });
  }

  std::error_code send_copy(std::string_view message) override {
    return send_text(message, [&] { return std::string(message); });
  }

  std::error_code send_spliced(spliced_text message) override {
    if (auto refused = refuses(message.size())) return refused;
    // Nothing waits before it and it would go now: it is written from where it is, and queued
    // only if the descriptor does not take it all.
    if (!goes_now()) return enqueue(std::move(message));
    write_alone(message);
    return after_alone();
  }

  void flush_batched() override {
    batched_ = false;
    if (!writing_ && !queue_.empty() && !write_failed_) write_more();
  }

  void close() override {
    if (closing_) return;
    closing_ = true;
    events_ = nullptr;
    if (!writing_ && !queue_.empty()) write_more();  // batched: what was sent still goes
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

  // The writer is gone: what the descriptor holds is all there will be (the pending read, if
  // any, then meets the end or is cancelled).
  void read_ready() override {
    while (!read_done_ && events_ && read_now() == read_status::more) {
    }
  }

 private:
  descriptor& wr() { return wr_own_ ? *wr_own_ : rd_; }
  bool wr_open() const { return wr_own_ ? wr_own_->is_open() : rd_.is_open(); }
  bool same_fd() const { return !wr_own_; }

  // Reads into the small buffer: at once when the descriptor has something, else when it has.
  void read_more() {
    rd_.async_read_some(
        asio::buffer(first_),
        [self = shared_from_this()](error_code ec, std::size_t n) { self->on_read(ec, n); });
  }

  void on_read(error_code ec, std::size_t n) {
    if (read_done_) return;  // read_ready() already met the end
    if (n > 0) feed(std::string_view(first_.data(), n));
    if (ec) return on_read_end(ec);
    if (n < first_.size()) return read_more();
    read_on();  // the small buffer filled: more may be waiting
  }

  // Reads on at once after a read that filled its buffer, for at most chunks_per_turn reads;
  // then after what else the loop has to do.
  void read_on() {
    for (std::size_t i = 0; i < chunks_per_turn; ++i) {
      switch (read_now()) {
        case read_status::more:
          continue;
        case read_status::empty:
          return read_more();
        case read_status::ended:
          return;
      }
    }
    asio::post(io_, [self = shared_from_this()] {
      if (!self->read_done_ && self->events_) self->read_on();
    });
  }

  enum class read_status { more, empty, ended };

  // One read into the big buffer, which is held only while reads fill it: more (it filled),
  // empty (it came up short or would block) or ended (the end, a failure, or nobody listens).
  read_status read_now() {
    if (read_done_ || !events_) return read_status::ended;
    if (!big_) big_.reset(new char[read_chunk]);
    error_code ec;
    const std::size_t n = rd_.read_some(asio::buffer(big_.get(), read_chunk), ec);
    if (n > 0) feed(std::string_view(big_.get(), n));
    if (ec && !would_block(ec)) {
      on_read_end(ec);
      return read_status::ended;
    }
    if (!ec && n == read_chunk)
      return read_done_ || !events_ ? read_status::ended : read_status::more;
    big_.reset();
    return read_done_ || !events_ ? read_status::ended : read_status::empty;
  }

  // The first read of a client socket: recvmsg, so that descriptors passed with the first line
  // arrive. The handoff line with two of them hands the agent's stdio over; anything else is
  // an ordinary first read (passed descriptors closed). Once per connection, so the wait's
  // epoll_ctl does not count.
  void read_first() {
    rd_.async_wait(descriptor::wait_read, [self = shared_from_this()](error_code ec) {
      if (ec) return self->on_read(ec, 0);
      iovec iov{self->first_.data(), self->first_.size()};
      alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 2)];
      msghdr msg{};
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      ssize_t n;
      do n = ::recvmsg(self->rd_.native_handle(), &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
      while (n < 0 && errno == EINTR);
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
      const std::string_view got(self->first_.data(), static_cast<std::size_t>(n));
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
    descriptor agent_in(io_), agent_out(io_);
    agent_in.assign(in, ec);
    if (!ec) agent_out.assign(out, ec);
    if (!ec) agent_in.non_blocking(true, ec);
    if (!ec) agent_out.non_blocking(true, ec);
    if (ec) {
      if (agent_in.is_open()) (void)agent_in.release();  // the caller closes both
      if (agent_out.is_open()) (void)agent_out.release();
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
    // Nothing but the end is expected, so the wait's epoll_ctl is paid about once.
    bridge_->async_wait(descriptor::wait_read, [self = shared_from_this()](error_code ec) {
      if (ec == asio::error::operation_aborted || !self->bridge_) return;
      // Whatever else comes is read away and ignored.
      ssize_t n = -1;
      char ignored[256];
      if (!ec) do
          n = ::recv(self->bridge_->native_handle(), ignored, sizeof ignored, MSG_DONTWAIT);
        while (n > 0 || (n < 0 && errno == EINTR));
      if (!ec && n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return self->watch_bridge();
      self->fail(errc::transport_closed, "mcpmux connect exited");
      error_code not_open;
      self->rd_.cancel(not_open);  // stop reading the agent: nobody listens
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

  // What one read hands to the owner is answered in one write per destination: the loop's
  // write batch is held while the read is fed (transports/write_batch.hpp).
  void feed(std::string_view data) {
    auto batch = opt_.batch.get();
    if (!batch) return feed_lines(data);
    batch->hold();
    feed_lines(data);
    batch->release();
  }

  void feed_lines(std::string_view data) {
    if (events_) {
      framer_.feed(
          data,
          [this](std::string_view line, std::string* whole) {
            if (!events_) return;
            // Only the outermost read's last line: a read fed while another is being fed keeps
            // its batch until the outer one is done.
            if (opt_.batch && framer_.at_last_line()) opt_.batch->at_last_line();
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
  // take waits for room. A write done at once posts nothing: a posted completion cost the loop
  // a non-blocking epoll_wait per message.
  void write_more() {
    writing_ = true;
    while (!queue_.empty()) {
      gather();
      error_code ec;
      do consume(wr().write_some(gather_, ec));  // Asio writes 64 buffers at most at a time
      while (!ec && !gather_.empty());
      // A failure is met again by the wait, which reports it from the loop, not from send().
      if (ec) return wait_writable();
      pop_written();
    }
    writing_ = false;
  }

  // One message with an empty queue, written at once (from where it is: taken only when queued).
  // What the descriptor does not take is queued and waits for room, as write_more leaves it; a
  // failure is met again by the wait.
  void write_alone(spliced_text& message) {
    std::array<asio::const_buffer, 4> buffers;
    std::size_t count = 0;
    message_buffers(message, [&](asio::const_buffer b) { buffers[count++] = b; });
    if (const auto n = write_now(std::span(buffers.data(), count)); n != message.size() + 1)
      queue_unwritten(std::move(message), n);
  }

  // A message in one run (send, send_copy): written from `text` when it goes now; `own()` makes
  // the message's own string only when some of it has to wait.
  template <class Own>
  std::error_code send_text(std::string_view text, Own&& own) {
    if (auto refused = refuses(text.size())) return refused;
    if (!goes_now()) return enqueue({own(), nullptr, {}});
    if (const auto n = write_line(text); n != text.size() + 1)
      queue_unwritten({own(), nullptr, {}}, n);
    return after_alone();
  }

  // A message behind others, or held for the loop's batch: queued, and written when its turn
  // comes (at once when nothing is being written and no batch holds it).
  std::error_code enqueue(spliced_text&& message) {
    auto* batch = opt_.batch.get();
    // (With its newline: see message_buffers.)
    queued_ += message.size() + 1;
    queue_.push_back(std::move(message));
    if (writing_) return {};
    if (!batch || !batch->held()) {
      write_more();
      return {};
    }
    if (!batched_) {
      batched_ = true;
      batch->join(shared_from_this());
    }
    if (batch->last_line()) batch->flush();  // the read's last line: the batch goes now
    return {};
  }

  // One message and its newline, written at once from where it is.
  std::size_t write_line(std::string_view message) {
    static constexpr char newline = '\n';
    const std::array buffers{asio::const_buffer(message.data(), message.size()),
                             asio::const_buffer(&newline, 1)};
    return write_now(buffers);
  }

  // One write of `buffers`: the bytes the descriptor took (a failure is met again by the wait of
  // what is left).
  std::size_t write_now(std::span<const asio::const_buffer> buffers) {
    error_code ec;
    const std::size_t n = wr().write_some(buffers, ec);
    return ec ? 0 : n;
  }

  // A message written alone of which the descriptor took `n` bytes: queued, and the rest waits.
  void queue_unwritten(spliced_text&& message, std::size_t n) {
    queued_ += message.size() + 1;
    queue_.push_back(std::move(message));
    writing_ = true;
    gather();
    consume(n);
    wait_writable();
  }

  // Why a message of `bytes` cannot be sent (closed, or the queue full); nothing when it can.
  std::error_code refuses(std::size_t bytes) const {
    if (closing_ || write_failed_ || !wr_open()) return errc::transport_closed;
    if (queued_ + bytes + 1 > opt_.limits.max_queue_bytes) return errc::queue_full;
    return {};
  }

  // True when nothing waits before a message and it would go now (not held for the loop's
  // batch, or the read's last line, whose message lets the batch go).
  bool goes_now() const {
    const auto* batch = opt_.batch.get();
    return queue_.empty() && !writing_ && (!batch || !batch->held() || batch->last_line());
  }

  // After a message that went now: the messages the read's earlier lines caused go with it.
  std::error_code after_alone() {
    if (auto* batch = opt_.batch.get(); batch && batch->last_line()) batch->flush();
    return {};
  }

  // What is left of the gather goes when the descriptor has room: async_write_some tries at
  // once, then waits (registering for writability once per descriptor).
  void wait_writable() {
    wr().async_write_some(gather_, [self = shared_from_this()](error_code ec, std::size_t n) {
      self->on_written(ec, n);
    });
  }

  // Lays the first messages of the queue out for one write (in_flight_ of them).
  void gather() {
    gather_.clear();
    in_flight_ = std::min(queue_.size(), max_gather);
    for (std::size_t i = 0; i < in_flight_; ++i)
      message_buffers(queue_[i], [this](asio::const_buffer b) { gather_.push_back(b); });
  }

  // Drops the `n` bytes written from the front of the gather.
  void consume(std::size_t n) {
    auto it = gather_.begin();
    while (it != gather_.end() && n >= it->size()) n -= (it++)->size();
    if (it != gather_.end()) *it += n;
    gather_.erase(gather_.begin(), it);
  }

  void pop_written() {
    for (std::size_t i = 0; i < in_flight_; ++i) {
      queued_ -= queue_.front().size() + 1;
      queue_.pop_front();
    }
    in_flight_ = 0;
  }

  void on_written(error_code ec, std::size_t n) {
    consume(n);
    if (!ec && !gather_.empty()) return wait_writable();
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
      close_quietly(*wr_own_);  // EOF on the child's stdin: the polite way to ask it to stop
      maybe_drained();
    }
  }

  void close_all() {
    linger_.cancel();
    close_quietly(rd_);
    if (wr_own_) close_quietly(*wr_own_);
    if (bridge_) close_quietly(*bridge_);
    read_done_ = true;
    maybe_drained();
  }

  void maybe_drained() {
    if (!closing_ || !read_done_) return;
    if (same_fd() || !wr_own_->is_open()) {
      linger_.cancel();
      close_quietly(rd_);
      if (bridge_) close_quietly(*bridge_);  // the bridge sees the end and exits
    }
  }

  void fail(std::error_code ec, std::string reason) {
    if (auto* ev = std::exchange(events_, nullptr)) ev->on_closed(ec, std::move(reason));
  }

  asio::io_context& io_;
  descriptor rd_;
  std::optional<descriptor> wr_own_;
  std::optional<descriptor> bridge_;  ///< after a stdio handoff: the socket of mcpmux connect
  fd_transport_options opt_;
  ndjson_framer framer_;
  asio::steady_timer linger_;
  transport_events* events_ = nullptr;
  std::deque<spliced_text> queue_;
  std::array<char, first_chunk> first_;  ///< what the pending read reads into
  std::unique_ptr<char[]> big_;          ///< read_chunk bytes while reads fill their buffer
  std::vector<asio::const_buffer> gather_;
  std::size_t in_flight_ = 0;
  std::size_t queued_ = 0;
  bool writing_ = false;
  bool batched_ = false;  ///< in the loop's batch, its queue written when the batch is flushed
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
