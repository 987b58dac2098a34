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
  std::ofstream(dir.Join("tw.yaml")) << "data_dir: /from/yaml\nlisten: 127.0.0.1:7000\nlog_level: debug\n";
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


}  // namespace
}  // namespace trainwatch::server
