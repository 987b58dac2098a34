#include "common/cidr.h"

#include <gtest/gtest.h>

namespace trainwatch {
namespace {

TEST(CidrList, MatchesNetworksOfBothFamilies) {
  auto list = CidrList::Parse("10.0.0.0/8, 192.168.1.7,fd00::/8");
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_TRUE(list->Contains("10.200.3.4"));
  EXPECT_TRUE(list->Contains("::ffff:10.1.2.3"));  // a dual-stack socket's view of an IPv4 client
  EXPECT_TRUE(list->Contains("192.168.1.7"));
  EXPECT_FALSE(list->Contains("192.168.1.8"));
  EXPECT_TRUE(list->Contains("fd12:3456::1"));
  EXPECT_FALSE(list->Contains("fe80::1"));
  EXPECT_FALSE(list->Contains("11.0.0.1"));
  EXPECT_FALSE(list->Contains("not an address"));
}

TEST(CidrList, OddPrefixesAndErrors) {
  auto list = CidrList::Parse("172.16.0.0/12");
  EXPECT_TRUE(list->Contains("172.31.255.255"));
  EXPECT_FALSE(list->Contains("172.32.0.0"));
  EXPECT_TRUE(CidrList::Parse("0.0.0.0/0")->Contains("8.8.8.8"));
  EXPECT_FALSE(CidrList::Parse("10.0.0.0/33").ok());
  EXPECT_FALSE(CidrList::Parse("10.0.0/8").ok());
  EXPECT_EQ(CidrList::Parse("bogus").status().message(), "'bogus' is not an IP address or network");
}

}  // namespace
}  // namespace trainwatch
