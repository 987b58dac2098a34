// The SDK's rules for what a link may carry: no API key in clear text to another machine, no
// plaintext gRPC for an https:// server. Refusals happen before any connection is attempted, so
// the non-loopback addresses here (TEST-NET, 192.0.2.0/24) are never contacted.
#include "tls_policy.h"

#include <mutex>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/testing/temp_dir.h"
#include "connection.h"
#include "trainwatch/client.h"

namespace trainwatch::sdk {
namespace {

using ::testing::HasSubstr;

TEST(TlsPolicy, HostsOfUrlsAndTargets) {
  EXPECT_TRUE(IsHttpsUrl("https://a:1"));
  EXPECT_TRUE(IsHttpsUrl("HTTPS://a"));
  EXPECT_FALSE(IsHttpsUrl("http://a"));
  EXPECT_FALSE(IsHttpsUrl("a:443"));
  EXPECT_EQ(HostOfUrl("http://10.0.0.5:8080/x"), "10.0.0.5");
  EXPECT_EQ(HostOfUrl("https://user@[::1]:8080"), "[::1]");
  EXPECT_EQ(HostOfUrl("localhost:8080"), "localhost");
  EXPECT_EQ(HostOfTarget("10.0.0.5:8081"), "10.0.0.5");
  EXPECT_EQ(HostOfTarget("[::1]:8081"), "[::1]");
  EXPECT_EQ(HostOfTarget("dns:///ingest.example:8081"), "ingest.example");
  EXPECT_EQ(HostOfTarget("dns://8.8.8.8/ingest.example:8081"), "ingest.example");
  EXPECT_EQ(HostOfTarget("ipv4:127.0.0.1:1,10.0.0.1:2"), "127.0.0.1");
  EXPECT_EQ(HostOfTarget("unix:/run/tw.sock"), "localhost");
  EXPECT_EQ(HostOfTarget("ingest.example"), "ingest.example");
}

TEST(TlsPolicy, KeyNeverInClearBeyondLoopback) {
  EXPECT_TRUE(CheckKeyNotInClear("k", false, "127.0.0.1", "x").ok());
  EXPECT_TRUE(CheckKeyNotInClear("k", false, "[::1]", "x").ok());
  EXPECT_TRUE(CheckKeyNotInClear("k", false, "localhost", "x").ok());
  EXPECT_TRUE(CheckKeyNotInClear("k", true, "10.0.0.5", "x").ok());
  EXPECT_TRUE(CheckKeyNotInClear("", false, "10.0.0.5", "x").ok());  // no key, nothing to leak
  Status s = CheckKeyNotInClear("k", false, "10.0.0.5", "http://10.0.0.5:8080");
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_THAT(s.message(), HasSubstr("clear text to http://10.0.0.5:8080"));
  EXPECT_THAT(s.message(), HasSubstr("https://"));
  EXPECT_FALSE(CheckKeyNotInClear("k", false, "127.0.0.1.example", "x").ok());
}

TEST(TlsPolicy, ConnectRefusesAKeyOverPlainHttpToAnotherMachine) {
  for (Transport transport : {Transport::kAuto, Transport::kHttp, Transport::kGrpc}) {
    ConnectOptions options;
    options.server = "http://192.0.2.1:8080";
    options.api_key = "secret";
    options.transport = transport;
    auto connection = Connect(options);
    ASSERT_FALSE(connection.ok());
    EXPECT_EQ(connection.status().code(), StatusCode::kPermissionDenied) << connection.status().ToString();
    EXPECT_THAT(connection.status().message(), HasSubstr("use an https:// server URL"));
  }
}

TEST(TlsPolicy, ConnectRefusesAKeyOverPlaintextGrpcToAnotherMachine) {
  ConnectOptions options;
  options.server = "http://127.0.0.1:1";
  options.grpc_target = "192.0.2.1:8081";
  options.api_key = "secret";
  options.transport = Transport::kGrpc;
  auto connection = Connect(options);
  ASSERT_FALSE(connection.ok());
  EXPECT_EQ(connection.status().code(), StatusCode::kPermissionDenied);
  EXPECT_THAT(connection.status().message(), HasSubstr("gRPC at 192.0.2.1:8081"));
}

// The whole client: log() goes on, nothing is sent, the refusal is the warning and last error, and
// the points are kept in the spool as during an outage.
TEST(TlsPolicy, ClientWithAKeyAndAPlainRemoteUrlWarnsAndSpools) {
  test::TempDir dir;
  std::mutex mu;
  std::vector<std::string> warnings;
  ClientOptions o;
  o.server = "http://192.0.2.1:8080";
  o.api_key = "secret";
  o.spool_dir = dir.Join("spool");
  o.flush_timeout_seconds = 5;
  o.heartbeat_interval_seconds = 0;
  o.on_warning = [&](WarningKind kind, const std::string& w) {
    std::lock_guard lock(mu);
    if (kind == WarningKind::kServerUnreachable) warnings.push_back(w);
  };
  {
    Client client(o);
    RunOptions r;
    r.id = "r";
    r.system_metrics_interval_seconds = 0;
    auto run = client.StartRun(r);
    for (int64_t step = 0; step < 100; ++step) run->Log(step, {{"loss", 1.0}});
    run->Finish();
    client.Close();
    ClientStats stats = client.Stats();
    EXPECT_EQ(stats.points_acked, 0u);
    EXPECT_EQ(stats.points_logged, 100u);
    EXPECT_THAT(stats.last_error, HasSubstr("refusing to send the API key in clear text"));
  }
  std::lock_guard lock(mu);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("use an https:// server URL"));
}

}  // namespace
}  // namespace trainwatch::sdk
