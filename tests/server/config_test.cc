#include "server/config.h"

#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

#include "common/testing/temp_dir.h"

namespace trainwatch::server {
namespace {

TEST(ConfigTest, DefaultsAreLoopback) {
  auto c = LoadServerConfig({});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->listen.host, "127.0.0.1");
  EXPECT_EQ(c->listen.port, 8080);
  EXPECT_EQ(c->grpc_listen.port, 8081);
  EXPECT_EQ(c->data_dir, "./data");
}

TEST(ConfigTest, FlagBeatsEnvironmentBeatsYaml) {
  test::TempDir dir;
  std::ofstream(dir.Join("tw.yaml"))
      << "data_dir: /from/yaml\nlisten: 127.0.0.1:7000\nlog_level: debug\n";
  setenv("TRAINWATCH_LISTEN", "127.0.0.1:7001", 1);
  auto c = LoadServerConfig({"--config", dir.Join("tw.yaml"), "--listen=127.0.0.1:7002"});
  unsetenv("TRAINWATCH_LISTEN");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->data_dir, "/from/yaml");
  EXPECT_EQ(c->listen.port, 7002);
  EXPECT_EQ(c->log_level, LogLevel::kDebug);
}

TEST(ConfigTest, ErrorsNameTheirSource) {
  test::TempDir dir;
  std::ofstream(dir.Join("bad.yaml")) << "data_dir: x\nlisten_typo: 1\n";
  auto c = LoadServerConfig({"--config", dir.Join("bad.yaml")});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("line 2"), std::string::npos) << c.status().message();
  EXPECT_NE(c.status().message().find("listen_typo"), std::string::npos);

  auto flag = LoadServerConfig({"--listen", "nonsense"});
  ASSERT_FALSE(flag.ok());
  EXPECT_NE(flag.status().message().find("--listen"), std::string::npos) << flag.status().message();
}

TEST(ConfigTest, ClusterFlags) {
  auto alone = LoadServerConfig({});
  ASSERT_TRUE(alone.ok());
  EXPECT_FALSE(alone->cluster()) << "single-node is the default";

  auto c = LoadServerConfig({"--nats", "nats://127.0.0.1:4222,127.0.0.1:4223", "--node-name",
                             "tw-1", "--partitions", "8", "--cluster-lease", "3s"});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->cluster());
  EXPECT_EQ(c->nats_servers,
            (std::vector<std::string>{"nats://127.0.0.1:4222", "nats://127.0.0.1:4223"}));
  EXPECT_EQ(c->node_name, "tw-1");
  EXPECT_EQ(c->partitions, 8u);
  EXPECT_EQ(c->cluster_lease_seconds, 3);

  auto nameless = LoadServerConfig({"--nats", "nats://127.0.0.1:4222"});
  ASSERT_FALSE(nameless.ok());
  EXPECT_NE(nameless.status().message().find("--node-name"), std::string::npos);
  auto bad_name = LoadServerConfig({"--nats", "127.0.0.1:4222", "--node-name", "a.b"});
  ASSERT_FALSE(bad_name.ok());
  EXPECT_NE(bad_name.status().message().find("node_name"), std::string::npos);
  auto no_cluster = LoadServerConfig({"--node-name", "tw-1"});
  ASSERT_FALSE(no_cluster.ok());
  EXPECT_NE(no_cluster.status().message().find("--nats"), std::string::npos);
  auto bad_url = LoadServerConfig({"--nats", "http://x:1", "--node-name", "a"});
  ASSERT_FALSE(bad_url.ok());
  EXPECT_NE(bad_url.status().message().find("nats://"), std::string::npos);
  EXPECT_FALSE(LoadServerConfig({"--partitions", "0"}).ok());

  // Bounded rebuild: defaults, durations, 0 (for ever / only when asked), refusals.
  EXPECT_EQ(alone->cluster_stream_max_age_seconds, 7 * 86400);
  EXPECT_EQ(alone->cluster_snapshot_interval_seconds, 3600);
  auto bounded =
      LoadServerConfig({"--cluster-stream-max-age", "2d", "--cluster-snapshot-interval", "30m"});
  ASSERT_TRUE(bounded.ok()) << bounded.status().ToString();
  EXPECT_EQ(bounded->cluster_stream_max_age_seconds, 2 * 86400);
  EXPECT_EQ(bounded->cluster_snapshot_interval_seconds, 1800);
  auto zero =
      LoadServerConfig({"--cluster-stream-max-age", "0", "--cluster-snapshot-interval", "0"});
  ASSERT_TRUE(zero.ok()) << zero.status().ToString();
  EXPECT_EQ(zero->cluster_stream_max_age_seconds, 0);
  EXPECT_EQ(zero->cluster_snapshot_interval_seconds, 0);
  auto tiny = LoadServerConfig({"--cluster-stream-max-age", "500ms"});
  ASSERT_FALSE(tiny.ok());
  EXPECT_NE(tiny.status().message().find("cluster_stream_max_age"), std::string::npos);
  EXPECT_FALSE(LoadServerConfig({"--cluster-snapshot-interval", "soon"}).ok());
}

}  // namespace
}  // namespace trainwatch::server
