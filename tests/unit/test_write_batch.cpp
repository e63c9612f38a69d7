// The loop's write batch: members joined while it is held write at the outermost release, or
// at once from the last line on; a flush leaves it empty.
#include "transports/write_batch.hpp"

#include <gtest/gtest.h>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mcpmux {
namespace {

struct recorded : write_batch::member {
  recorded(std::vector<std::string>& log, std::string name) : log(log), name(std::move(name)) {}
  void flush_batched() override { log.push_back(name); }
  std::vector<std::string>& log;
  std::string name;
};

// A member whose write runs `write` (which may join or flush the batch again).
struct acting : write_batch::member {
  explicit acting(std::function<void()> write) : write(std::move(write)) {}
  void flush_batched() override { write(); }
  std::function<void()> write;
};

TEST(write_batch, MembersWriteAtTheOutermostReleaseInTheOrderTheyJoined) {
  std::vector<std::string> log;
  write_batch b;
  EXPECT_FALSE(b.held());
  b.hold();
  b.join(std::make_shared<recorded>(log, "a"));
  b.hold();  // a read fed inside the first
  b.join(std::make_shared<recorded>(log, "b"));
  b.release();
  EXPECT_TRUE(log.empty());
  EXPECT_TRUE(b.held());
  b.release();
  EXPECT_EQ(log, (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(b.held());
  b.flush();  // emptied by the flush: nobody writes twice
  EXPECT_EQ(log.size(), 2u);
}

TEST(write_batch, OnlyTheOutermostReadsLastLineCountsAndItEndsWithTheRelease) {
  write_batch b;
  b.hold();
  b.hold();
  b.at_last_line();  // the inner read's last line
  EXPECT_FALSE(b.last_line());
  b.release();
  b.at_last_line();
  EXPECT_TRUE(b.last_line());
  b.release();
  EXPECT_FALSE(b.last_line());
}

TEST(write_batch, AMemberMayJoinAgainWhileTheBatchFlushes) {
  std::vector<std::string> log;
  write_batch b;
  b.hold();
  b.join(std::make_shared<acting>([&] {
    log.push_back("flushed");
    if (log.size() == 1) b.join(std::make_shared<recorded>(log, "next"));
  }));
  b.release();
  EXPECT_EQ(log, std::vector<std::string>{"flushed"});
  b.flush();  // what joined during the flush waits for the next one
  EXPECT_EQ(log, (std::vector<std::string>{"flushed", "next"}));
}

// Batch after batch (the list's storage kept between them), and a flush inside a member's write:
// each member writes once per batch it joined, and none is kept alive by the batch after.
TEST(write_batch, BatchAfterBatchEachMemberWritesOnceAndIsLetGo) {
  std::vector<std::string> log;
  write_batch b;
  std::vector<std::weak_ptr<write_batch::member>> joined;
  for (int round = 0; round < 3; ++round) {
    b.hold();
    auto m = std::make_shared<recorded>(log, "r" + std::to_string(round));
    joined.push_back(m);
    b.join(std::move(m));
    b.release();
  }
  auto outer = std::make_shared<acting>([&] {
    log.push_back("outer");
    b.join(std::make_shared<recorded>(log, "inner"));
    b.flush();  // a handler that runs a read of its own, fed and released at once
  });
  joined.push_back(outer);
  b.hold();
  b.join(std::move(outer));
  b.release();
  b.flush();  // nothing left: nobody writes twice
  EXPECT_EQ(log, (std::vector<std::string>{"r0", "r1", "r2", "outer", "inner"}));
  for (const auto& w : joined) EXPECT_TRUE(w.expired());
}

}  // namespace
}  // namespace mcpmux
