// pch/common.hpp and the Asio and Beast headers of the libraries that run the event loop
// (transports, core, mcpmuxd): declarations only, Asio and Beast being compiled once in
// transports/asio_impl.cpp.

#include "pch/common.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
