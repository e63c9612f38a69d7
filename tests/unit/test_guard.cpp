// The loop's edge: a handler that throws costs itself, not the loop.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/log.hpp"
#include "core/guard.hpp"

namespace mcpmux {
namespace {

TEST(LoopGuard, AHandlerThatThrowsIsLoggedAndTheNextOnesStillRun) {
  std::vector<std::string> errors;
  set_log_sink([&](log_level l, std::string_view, std::string_view msg) {
    if (l == log_level::error) errors.emplace_back(msg);
  });
  boost::asio::io_context io;
  int ran = 0;
  boost::asio::post(io, [] { throw std::runtime_error("search index: disk I/O error"); });
  boost::asio::post(io, [&] { ++ran; });
  boost::asio::post(io, [] { throw 42; });
  boost::asio::post(io, [&] { ++ran; });
  while (!io.stopped() && guarded([&] { return io.run(); }) > 0) {
  }
  set_log_sink({});
  EXPECT_EQ(ran, 2);
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_NE(errors[0].find("search index: disk I/O error"), std::string::npos);
  EXPECT_NE(errors[1].find("not a std::exception"), std::string::npos);
}

TEST(LoopGuard, AStepThatDoesNotThrowReturnsItsCount) {
  EXPECT_EQ(guarded([] { return std::size_t(3); }), 3u);
  EXPECT_EQ(guarded([] { return std::size_t(0); }), 0u);
}

}  // namespace
}  // namespace mcpmux
