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
  for (const char* address :
       {"0.0.0.0:8081", "[::]:8081", "10.0.0.5:8081", "[2001:db8::1]:8081", "ingest.lan:8081"}) {
    ServerInfo info{"1.0", address, true};
    EXPECT_EQ(AdvertisedGrpcAddress(info, "10.1.2.3"), address);
    EXPECT_EQ(AdvertisedGrpcAddress(info, "127.0.0.1"), address);
  }
}

TEST(ClusterInfoJson, UnknownOwnersAndLeaderAreNullAndLagIsNeverNegative) {
  ClusterInfo info;
  info.node = "tw1";
  info.partitions = 3;
  info.members = {"tw0", "tw1"};
  info.owned = {1};
  info.owners = {"tw0", "tw1", ""};
  info.stream = "TRAINWATCH_INGEST";
  info.stream_last_sequence = 10;
  info.applied_sequence = 7;
  info.nats_connected = true;
  info.refreshed_unix = 1767225600.5;
  EXPECT_EQ(ClusterInfoJson(info),
            "{\"node\":\"tw1\",\"partitions\":3,\"members\":[\"tw0\",\"tw1\"],"
            "\"owned_partitions\":[1],\"owners\":[\"tw0\",\"tw1\",null],"
            "\"stream\":\"TRAINWATCH_INGEST\",\"stream_leader\":null,\"stream_last_sequence\":10,"
            "\"applied_sequence\":7,\"consumer_lag\":3,\"nats_connected\":true,"
            "\"refreshed_at\":1767225600.5}");
  info.applied_sequence = 12;  // applied past a stale last sequence
  info.refreshed_unix = 0;
  const std::string json = ClusterInfoJson(info);
  EXPECT_NE(json.find("\"consumer_lag\":0,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"refreshed_at\":null}"), std::string::npos) << json;
}

}  // namespace
}  // namespace trainwatch::api
