#include "common/loopback.h"

#include <gtest/gtest.h>

namespace trainwatch {
namespace {

TEST(IsLoopbackHost, AddressesAndNames) {
  for (const char* host : {"127.0.0.1", "127.8.9.10", "::1", "[::1]", "::ffff:127.0.0.1", "localhost"}) {
    EXPECT_TRUE(IsLoopbackHost(host)) << host;
  }
  for (const char* host : {"10.0.0.5", "128.0.0.1", "0.0.0.0", "::", "[::]", "fe80::1", "::ffff:10.1.2.3",
                           "example.com", "localhost.example.com", "127.0.0.1.nip.io", "", "[::1"}) {
    EXPECT_FALSE(IsLoopbackHost(host)) << host;
  }
}

}  // namespace
}  // namespace trainwatch
