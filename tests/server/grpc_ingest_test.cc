// The gRPC ingest stream against a real in-process server: acks in order, durable, exactly once.
#include <grpcpp/grpcpp.h>

#include <gtest/gtest.h>

#include "common/testing/temp_dir.h"
#include "server/server.h"
#include "trainwatch/v1/ingest.grpc.pb.h"

namespace trainwatch::server {
namespace {

class GrpcIngestTest : public ::testing::Test {
 protected:
  void StartServer(const std::string& api_key = "") {
    server_.reset();
    ServerConfig config;
    config.data_dir = dir_.Join("data");
    config.listen = {"127.0.0.1", 0};
    config.grpc_listen = {"127.0.0.1", 0};
    config.log_level = LogLevel::kWarn;
    config.api_key = api_key;
    auto server = Server::Start(config);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(server).value();
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->grpc_port()),
                                   grpc::InsecureChannelCredentials());
    stub_ = v1::Ingest::NewStub(channel_);
  }

  static v1::WriteRequest Batch(uint64_t seq, int64_t first_step, int rows) {
    v1::WriteRequest request;
    request.set_writer_id("writer-1");
    request.set_sequence(seq);
    v1::RunBatch* batch = request.add_runs();
    batch->set_project("p");
    batch->set_run("r");
    v1::MetricColumn* loss = batch->add_metrics();
    loss->set_name("loss");
    for (int i = 0; i < rows; ++i) {
      batch->add_steps(first_step + i);
      batch->add_times(1767225600.0 + first_step + i);
      loss->add_values(1.0 / (first_step + i + 1));
    }
    return request;
  }

  test::TempDir dir_;
  std::unique_ptr<Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Ingest::Stub> stub_;
};

TEST_F(GrpcIngestTest, AcksEveryBatchInOrderAndAppliesRetriesOnce) {
  StartServer();
  grpc::ClientContext context;
  auto stream = stub_->Write(&context);
  // 20 batches in flight, then batches 5..9 again (a reconnecting client replaying its spool).
  for (uint64_t seq = 1; seq <= 20; ++seq) ASSERT_TRUE(stream->Write(Batch(seq, (seq - 1) * 100, 100)));
  for (uint64_t seq = 5; seq <= 9; ++seq) ASSERT_TRUE(stream->Write(Batch(seq, (seq - 1) * 100, 100)));
  stream->WritesDone();
  std::vector<v1::WriteAck> acks;
  v1::WriteAck ack;
  while (stream->Read(&ack)) acks.push_back(ack);
  ASSERT_TRUE(stream->Finish().ok());
  ASSERT_EQ(acks.size(), 25u);
  for (size_t i = 0; i < 20; ++i) {
    EXPECT_EQ(acks[i].sequence(), i + 1);
    EXPECT_FALSE(acks[i].duplicate());
    EXPECT_EQ(acks[i].points_accepted(), 100u);
  }
  for (size_t i = 20; i < 25; ++i) {
    EXPECT_EQ(acks[i].sequence(), i - 15);
    EXPECT_TRUE(acks[i].duplicate()) << "sequence " << acks[i].sequence();
    EXPECT_EQ(acks[i].points_accepted(), 0u);
  }

  // Restart: the writer's sequences survive, so a replay after the restart is still a duplicate.
  StartServer();
  grpc::ClientContext again;
  auto stream2 = stub_->Write(&again);
  ASSERT_TRUE(stream2->Write(Batch(20, 1900, 100)));
  ASSERT_TRUE(stream2->Write(Batch(21, 2000, 100)));
  stream2->WritesDone();
  ASSERT_TRUE(stream2->Read(&ack));
  EXPECT_TRUE(ack.duplicate());
  ASSERT_TRUE(stream2->Read(&ack));
  EXPECT_FALSE(ack.duplicate());
  EXPECT_EQ(ack.points_accepted(), 100u);
  ASSERT_TRUE(stream2->Finish().ok());
}

TEST_F(GrpcIngestTest, InvalidBatchIsRejectedWithAReasonAndTheStreamGoesOn) {
  StartServer();
  grpc::ClientContext context;
  auto stream = stub_->Write(&context);
  v1::WriteRequest bad = Batch(1, 0, 3);
  bad.mutable_runs(0)->set_steps(1, -5);
  ASSERT_TRUE(stream->Write(bad));
  ASSERT_TRUE(stream->Write(Batch(2, 0, 3)));
  stream->WritesDone();
  v1::WriteAck ack;
  ASSERT_TRUE(stream->Read(&ack));
  EXPECT_EQ(ack.points_accepted(), 0u);
  EXPECT_EQ(ack.points_rejected(), 3u);
  ASSERT_EQ(ack.errors_size(), 1);
  EXPECT_NE(ack.errors(0).find("steps[1] is negative"), std::string::npos) << ack.errors(0);
  ASSERT_TRUE(stream->Read(&ack));
  EXPECT_EQ(ack.points_accepted(), 3u);
  ASSERT_TRUE(stream->Finish().ok());
}

TEST_F(GrpcIngestTest, RequiresTheApiKeyWhenOneIsSet) {
  StartServer("s3cret");
  {
    grpc::ClientContext context;
    auto stream = stub_->Write(&context);
    stream->WritesDone();
    EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
  grpc::ClientContext context;
  context.AddMetadata("authorization", "Bearer s3cret");
  auto stream = stub_->Write(&context);
  ASSERT_TRUE(stream->Write(Batch(1, 0, 2)));
  stream->WritesDone();
  v1::WriteAck ack;
  ASSERT_TRUE(stream->Read(&ack));
  EXPECT_EQ(ack.points_accepted(), 2u);
  EXPECT_TRUE(stream->Finish().ok());
}

// Keys may be in the data directory (trainwatch keys create) rather than on the command line, so
// the server, not the flag parser, decides whether a public address has one.
TEST_F(GrpcIngestTest, RefusesAPublicAddressWithoutAnyKey) {
  ServerConfig config;
  config.data_dir = dir_.Join("public");
  config.listen = {"0.0.0.0", 0};
  config.grpc_listen = {"127.0.0.1", 0};
  config.log_level = LogLevel::kWarn;
  auto refused = Server::Start(config);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("without an API key"), std::string::npos) << refused.status().ToString();
  config.api_key = "k";
  EXPECT_TRUE(Server::Start(config).ok());
}

TEST_F(GrpcIngestTest, SecondServerOnTheSameDataDirIsRefused) {
  StartServer();
  ServerConfig config;
  config.data_dir = dir_.Join("data");
  config.listen = {"127.0.0.1", 0};
  config.grpc_listen = {"127.0.0.1", 0};
  auto second = Server::Start(config);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("in use by another trainwatch server"), std::string::npos)
      << second.status().ToString();
}

}  // namespace
}  // namespace trainwatch::server
