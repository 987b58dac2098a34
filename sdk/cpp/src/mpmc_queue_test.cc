#include "mpmc_queue.h"

#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace trainwatch::sdk {
namespace {

TEST(MpmcQueueTest, FifoUntilFullThenRefuses) {
  MpmcQueue<int> q(5);
  EXPECT_EQ(q.capacity(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(q.TryPush(i));
  EXPECT_FALSE(q.TryPush(99));
  EXPECT_EQ(q.SizeApprox(), 8u);
  int v;
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(q.TryPop(&v));
    EXPECT_EQ(v, i);
  }
  EXPECT_FALSE(q.TryPop(&v));
  EXPECT_TRUE(q.TryPush(42));  // wraps around
  ASSERT_TRUE(q.TryPop(&v));
  EXPECT_EQ(v, 42);
}

TEST(MpmcQueueTest, ConcurrentProducersAndConsumersDeliverEachValueOnce) {
  constexpr int kProducers = 4, kPerProducer = 100000, kConsumers = 2;
  MpmcQueue<uint64_t> q(1024);
  std::vector<std::vector<uint64_t>> got(kConsumers);
  std::atomic<int> producers_left{kProducers};
  std::vector<std::thread> threads;
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p] {
      for (uint64_t i = 0; i < kPerProducer; ++i) {
        while (!q.TryPush((uint64_t(p) << 32) | i)) std::this_thread::yield();
      }
      --producers_left;
    });
  }
  for (int c = 0; c < kConsumers; ++c) {
    threads.emplace_back([&, c] {
      uint64_t v;
      for (;;) {
        if (q.TryPop(&v)) {
          got[c].push_back(v);
        } else if (producers_left == 0 && q.SizeApprox() == 0) {
          return;
        } else {
          std::this_thread::yield();
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  std::vector<std::vector<bool>> seen(kProducers, std::vector<bool>(kPerProducer));
  size_t total = 0;
  for (const auto& values : got) {
    std::vector<int64_t> last(kProducers, -1);
    for (uint64_t v : values) {
      int p = int(v >> 32);
      int64_t i = int64_t(v & 0xffffffff);
      ASSERT_FALSE(seen[p][i]) << "value delivered twice";
      seen[p][i] = true;
      EXPECT_GT(i, last[p]) << "one producer's values out of order for one consumer";
      last[p] = i;
      ++total;
    }
  }
  EXPECT_EQ(total, size_t(kProducers) * kPerProducer);
}

}  // namespace
}  // namespace trainwatch::sdk
