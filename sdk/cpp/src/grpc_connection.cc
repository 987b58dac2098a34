// The gRPC transport: one trainwatch.v1.Ingest/Write stream per connection.
#include <chrono>

#include <grpcpp/grpcpp.h>

#include "connection.h"
#include "trainwatch/v1/ingest.grpc.pb.h"

namespace trainwatch::sdk {
namespace {

std::chrono::system_clock::time_point Deadline(double seconds) {
  return std::chrono::system_clock::now() +
         std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
}

class GrpcConnection final : public Connection {
 public:
  GrpcConnection(std::shared_ptr<grpc::Channel> channel, const std::string& api_key)
      : stub_(v1::Ingest::NewStub(channel)) {
    if (!api_key.empty()) context_.AddMetadata("authorization", "Bearer " + api_key);
    stream_ = stub_->Write(&context_);
  }
  ~GrpcConnection() override {
    context_.TryCancel();
    (void)Finish();
  }

  const char* name() const override { return "grpc"; }

  bool Send(const std::string& bytes, uint64_t /*sequence: inside the request*/) override {
    v1::WriteRequest request;
    if (!request.ParseFromString(bytes)) return false;
    return stream_->Write(request);
  }

  bool ReadAck(v1::WriteAck* ack) override { return stream_->Read(ack); }

  void CloseSend() override { stream_->WritesDone(); }

  void Cancel() override { context_.TryCancel(); }

  std::string Error() override {
    grpc::Status status = Finish();
    if (status.ok()) return "the server closed the stream";
    return "gRPC " + std::to_string(status.error_code()) + ": " + status.error_message();
  }

 private:
  grpc::Status Finish() {
    if (!finished_) {
      finish_status_ = stream_->Finish();
      finished_ = true;
    }
    return finish_status_;
  }

  std::unique_ptr<v1::Ingest::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::WriteRequest, v1::WriteAck>> stream_;
  bool finished_ = false;
  grpc::Status finish_status_;
};

}  // namespace

Result<std::unique_ptr<Connection>> ConnectGrpc(const ConnectOptions& options, const std::string& target) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, 64 << 20);
  args.SetInt(GRPC_ARG_MAX_SEND_MESSAGE_LENGTH, 64 << 20);
  // We run our own backoff; gRPC's must not delay the first attempt after a restart.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // Each connection attempt gets a channel of its own (no sharing of a broken subchannel).
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  auto channel = grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
  if (!channel->WaitForConnected(Deadline(options.connect_timeout_seconds))) {
    return Status::Unavailable("cannot connect to the gRPC ingest at " + target);
  }
  return std::unique_ptr<Connection>(new GrpcConnection(std::move(channel), options.api_key));
}

Result<std::unique_ptr<Connection>> Connect(const ConnectOptions& options) {
  if (options.transport == Transport::kHttp) return ConnectHttp(options);
  std::string target = options.grpc_target;
  if (target.empty()) {
    TW_ASSIGN_OR_RETURN(target, DiscoverGrpcTarget(options));
  }
  if (target.empty()) {
    if (options.transport == Transport::kGrpc) {
      return Status::Unavailable("the server at " + options.server + " advertises no gRPC ingest");
    }
    return ConnectHttp(options);
  }
  auto grpc = ConnectGrpc(options, target);
  if (grpc.ok() || options.transport == Transport::kGrpc) return grpc;
  return ConnectHttp(options);
}

}  // namespace trainwatch::sdk
