// The lanes of ingest_bench: each lane is one gRPC stream or one HTTP connection, driven by its own
// thread, sending a list of prebuilt requests and recording what the server acknowledged.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "http_client.h"
#include "workload.h"

namespace trainwatch::bench {

using Clock = std::chrono::steady_clock;

// What one lane did.
struct LaneResult {
  uint64_t requests = 0;
  uint64_t points_sent = 0;
  uint64_t points_accepted = 0;
  uint64_t points_rejected = 0;
  uint64_t failed_requests = 0;
  std::string first_error;
  std::vector<double> latencies;  // seconds from a request sent to its (durable) acknowledgement
};

// Paces one lane to `rate` points/s (0: no pacing) and stops it after `max_seconds` (0: never).
class Pacer {
 public:
  Pacer(Clock::time_point start, double rate, double max_seconds)
      : start_(start), rate_(rate), max_seconds_(max_seconds) {}
  // Waits until `points_so_far` may be sent; false once the time limit has passed.
  bool Admit(uint64_t points_so_far) const;

 private:
  Clock::time_point start_;
  double rate_, max_seconds_;
};

// How far one pass over a workload reaches in steps and seconds. A looping lane shifts every later
// pass by this much, so that it continues each series instead of rewriting it.
struct Span {
  int64_t steps = 0;
  double seconds = 0;
};
Span SpanOf(const Workload& workload);

// A channel with its own TCP connection (channels are otherwise shared), no message size limits.
// One channel per lane; over TLS when `tls_ca_file` (PEM, the CA the server's certificate chains
// to) is given.
std::shared_ptr<grpc::Channel> MakeChannel(const std::string& target, int lane, const std::string& tls_ca_file = "");

// One trainwatch.v1.Ingest/Write stream keeping up to `inflight` batches unacknowledged. With
// `loop` set, it resends `batches` (shifted by *loop each pass) until the pacer says stop.
void RunGrpcLane(const std::shared_ptr<grpc::Channel>& channel, std::vector<ProtoBatch>& batches,
                 int inflight, const Pacer& pacer, const Span* loop, LaneResult* out);

struct HttpLaneOptions {
  std::string path;          // request target of every POST
  std::string content_type;
  bool trainwatch = true;    // read points_accepted from trainwatch's answer; else count 2xx bodies
};

// POSTs `bodies` one after another over `conn` (keep-alive).
void RunHttpLane(const HttpLaneOptions& options, const std::vector<TextBody>& bodies,
                 const Pacer& pacer, HttpConnection& conn, LaneResult* out);

// Every file of `dir` (sorted by name) as one body, dealt round-robin to `lanes` lanes;
// `total_points` is spread over the bodies by their share of the bytes.
std::vector<std::vector<TextBody>> LoadFileBodies(const std::string& dir, uint64_t total_points,
                                                  int lanes);

}  // namespace trainwatch::bench
