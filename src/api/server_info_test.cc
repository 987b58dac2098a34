#include "api/server_info.h"

#include <gtest/gtest.h>

namespace trainwatch::api {
namespace {

TEST(AdvertisedGrpcAddress, LoopbackAddressOnlyToLoopbackClients) {
  ServerInfo info{"1.0", "127.0.0.1:8081", false};
  EXPECT_EQ(AdvertisedGrpcAddress(info, "127.0.0.1"), "127.0.0.1:8081");
  EXPECT_EQ(AdvertisedGrpcAddress(info, "::ffff:127.0.0.1"), "127.0.0.1:8081");
  EXPECT_EQ(AdvertisedGrpcAddress(info, "10.1.2.3"), "");
  EXPECT_EQ(AdvertisedGrpcAddress(info, "2001:db8::7"), "");
  EXPECT_EQ(AdvertisedGrpcAddress(info, ""), "");  // unknown: not known to be local
  info.grpc_address = "[::1]:8081";
  EXPECT_EQ(AdvertisedGrpcAddress(info, "::1"), "[::1]:8081");
  EXPECT_EQ(AdvertisedGrpcAddress(info, "192.168.1.9"), "");
  info.grpc_address = "localhost:8081";
  EXPECT_EQ(AdvertisedGrpcAddress(info, "192.168.1.9"), "");
}

TEST(AdvertisedGrpcAddress, WildcardAndRoutableHostsToEveryone) {
  for (const char* address : {"0.0.0.0:8081", "[::]:8081", "10.0.0.5:8081", "[2001:db8::1]:8081", "ingest.lan:8081"}) {
    ServerInfo info{"1.0", address, true};
    EXPECT_EQ(AdvertisedGrpcAddress(info, "10.1.2.3"), address);
    EXPECT_EQ(AdvertisedGrpcAddress(info, "127.0.0.1"), address);
  }
}

}  // namespace
}  // namespace trainwatch::api
