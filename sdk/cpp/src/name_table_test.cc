#include "name_table.h"

#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace trainwatch::sdk {
namespace {

TEST(NameTableTest, SameNameSameId) {
  NameTable t;
  uint32_t loss = t.Intern("loss");
  uint32_t lr = t.Intern("lr");
  EXPECT_NE(loss, lr);
  EXPECT_EQ(t.Intern(std::string("lo") + "ss"), loss);
  EXPECT_EQ(t.Name(loss), "loss");
  EXPECT_EQ(t.Name(lr), "lr");
  EXPECT_EQ(t.size(), 2u);
}

TEST(NameTableTest, ConcurrentInterningAgreesOnIds) {
  NameTable t;
  constexpr int kThreads = 4, kNames = 300;
  std::vector<std::vector<uint32_t>> ids(kThreads, std::vector<uint32_t>(kNames));
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      for (int n = 0; n < kNames; ++n) ids[i][n] = t.Intern("metric/" + std::to_string(n));
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(t.size(), size_t(kNames));
  for (int n = 0; n < kNames; ++n) {
    for (int i = 1; i < kThreads; ++i) EXPECT_EQ(ids[i][n], ids[0][n]);
    EXPECT_EQ(t.Name(ids[0][n]), "metric/" + std::to_string(n));
  }
}

}  // namespace
}  // namespace trainwatch::sdk
