// The gRPC transport: one trainwatch.v1.Ingest/Write stream per connection.
#include <chrono>

#include <grpcpp/grpcpp.h>

#include "common/file_system.h"
#include "connection.h"
#include "tls_policy.h"
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

// TLS channel credentials: the CA bundle (else gRPC's default roots) and, for mutual TLS, the
// client certificate and key, read now so that renewed files are used by the next connection.
Result<std::shared_ptr<grpc::ChannelCredentials>> TlsCredentials(const ConnectOptions& options) {
  grpc::SslCredentialsOptions ssl;
  FileSystem& fs = PosixFileSystem();
  if (!options.tls_ca_file.empty()) {
    auto ca = fs.ReadFile(options.tls_ca_file);
    if (!ca.ok()) return ca.status().WithContext("reading the TLS CA bundle (tls_ca_file)");
    ssl.pem_root_certs = *std::move(ca);
  }
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return Status::InvalidArgument("tls_cert_file and tls_key_file go together: give both or neither");
  }
  if (!options.tls_cert_file.empty()) {
    auto cert = fs.ReadFile(options.tls_cert_file);
    if (!cert.ok()) return cert.status().WithContext("reading the TLS client certificate (tls_cert_file)");
    auto key = fs.ReadFile(options.tls_key_file);
    if (!key.ok()) return key.status().WithContext("reading the TLS client key (tls_key_file)");
    ssl.pem_cert_chain = *std::move(cert);
    ssl.pem_private_key = *std::move(key);
  }
  return grpc::SslCredentials(ssl);
}

}  // namespace

Result<std::unique_ptr<Connection>> ConnectGrpc(const ConnectOptions& options, const GrpcEndpoint& endpoint) {
  const std::string& target = endpoint.target;
  TW_RETURN_IF_ERROR(CheckKeyNotInClear(options.api_key, endpoint.tls, HostOfTarget(target), "gRPC at " + target));
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (endpoint.tls) {
    TW_ASSIGN_OR_RETURN(credentials, TlsCredentials(options));
  }
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, 64 << 20);
  args.SetInt(GRPC_ARG_MAX_SEND_MESSAGE_LENGTH, 64 << 20);
  // We run our own backoff; gRPC's must not delay the first attempt after a restart.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // Each connection attempt gets a channel of its own (no sharing of a broken subchannel).
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  auto channel = grpc::CreateCustomChannel(target, credentials, args);
  if (!channel->WaitForConnected(Deadline(options.connect_timeout_seconds))) {
    if (endpoint.tls) {
      return Status::Unavailable("cannot connect to the gRPC ingest at " + target +
                                 " over TLS (unreachable, or the TLS handshake failed: is its certificate signed by " +
                                 (options.tls_ca_file.empty() ? std::string("a CA this system trusts")
                                                              : "the CA in " + options.tls_ca_file) +
                                 ", for this host?)");
    }
    return Status::Unavailable("cannot connect to the gRPC ingest at " + target);
  }
  return std::unique_ptr<Connection>(new GrpcConnection(std::move(channel), options.api_key));
}

Result<std::unique_ptr<Connection>> Connect(const ConnectOptions& options) {
  if (options.transport == Transport::kHttp) return ConnectHttp(options);
  const bool https = IsHttpsUrl(options.server);
  GrpcEndpoint endpoint{options.grpc_target, https};
  if (endpoint.target.empty()) {
    TW_ASSIGN_OR_RETURN(endpoint, DiscoverGrpcEndpoint(options));
  }
  if (!endpoint.target.empty() && https && !endpoint.tls) {  // never a downgrade
    if (options.transport == Transport::kGrpc) {
      return Status::Unavailable("the server at " + options.server + " advertises plaintext gRPC at " +
                                 endpoint.target + ", which an https:// server URL never uses (start the "
                                 "server with --tls-cert and --tls-key, or use the HTTP transport)");
    }
    return ConnectHttp(options);
  }
  if (endpoint.target.empty()) {
    if (options.transport == Transport::kGrpc) {
      return Status::Unavailable("the server at " + options.server + " advertises no gRPC ingest");
    }
    return ConnectHttp(options);
  }
  auto grpc = ConnectGrpc(options, endpoint);
  if (grpc.ok() || options.transport == Transport::kGrpc) return grpc;
  return ConnectHttp(options);
}

}  // namespace trainwatch::sdk
