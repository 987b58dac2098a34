#include "ingest_lanes.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "trainwatch/v1/ingest.grpc.pb.h"

namespace trainwatch::bench {

bool Pacer::Admit(uint64_t points_so_far) const {
  auto seconds = [](double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  };
  if (rate_ > 0) std::this_thread::sleep_until(start_ + seconds(points_so_far / rate_));
  return max_seconds_ <= 0 || Clock::now() - start_ < seconds(max_seconds_);
}

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& target, int lane, const std::string& tls_ca_file) {
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(-1);
  args.SetMaxReceiveMessageSize(-1);
  args.SetInt("trainwatch.bench.lane", lane);  // distinct args: one TCP connection per stream
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  if (tls_ca_file.empty()) return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
  std::ifstream in(tls_ca_file);
  std::stringstream pem;
  pem << in.rdbuf();
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = pem.str();
  return grpc::CreateCustomChannel(target, grpc::SslCredentials(ssl), args);
}

Span SpanOf(const Workload& w) {
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  double t_lo = INFINITY, t_hi = -INFINITY;
  for (const RunData& run : w.runs) {
    for (size_t i = 0; i < run.steps.size(); ++i) {
      lo = std::min(lo, run.steps[i]);
      hi = std::max(hi, run.steps[i]);
      t_lo = std::min(t_lo, run.times[i]);
      t_hi = std::max(t_hi, run.times[i]);
    }
  }
  if (lo > hi) return {};
  const int64_t steps = hi - lo + 1;
  return {steps, steps > 1 ? (t_hi - t_lo) * static_cast<double>(steps) / static_cast<double>(steps - 1) : 1};
}

namespace {

void ShiftBatch(v1::WriteRequest* request, const Span& span, uint64_t sequence_shift) {
  if (request->sequence() != 0) request->set_sequence(request->sequence() + sequence_shift);
  for (v1::RunBatch& batch : *request->mutable_runs()) {
    for (int64_t& step : *batch.mutable_steps()) step += span.steps;
    for (double& time : *batch.mutable_times()) time += span.seconds;
  }
}

}  // namespace

void RunGrpcLane(const std::shared_ptr<grpc::Channel>& channel, std::vector<ProtoBatch>& batches,
                 int inflight, const Pacer& pacer, const Span* loop, LaneResult* out) {
  auto stub = v1::Ingest::NewStub(channel);
  grpc::ClientContext context;
  auto stream = stub->Write(&context);
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Clock::time_point> sent;  // GUARDED_BY(mu): send times of unacknowledged batches
  std::thread reader([&] {
    v1::WriteAck ack;
    while (stream->Read(&ack)) {
      auto now = Clock::now();
      std::lock_guard lock(mu);
      if (!sent.empty()) {
        out->latencies.push_back(std::chrono::duration<double>(now - sent.front()).count());
        sent.pop_front();
      }
      out->points_accepted += ack.points_accepted();
      out->points_rejected += ack.points_rejected();
      if (ack.errors_size() > 0) {
        ++out->failed_requests;
        if (out->first_error.empty()) out->first_error = ack.errors(0);
      }
      cv.notify_all();
    }
  });
  bool more = !batches.empty();  // a lane with no runs has nothing to loop over
  for (int pass = 0; more; ++pass) {
    for (ProtoBatch& batch : batches) {
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return sent.size() < static_cast<size_t>(inflight); });
      }
      if (!pacer.Admit(out->points_sent)) {
        more = false;
        break;
      }
      if (pass > 0) ShiftBatch(&batch.request, *loop, batches.size());  // Write() copied it out
      {
        std::lock_guard lock(mu);
        sent.push_back(Clock::now());
      }
      if (!stream->Write(batch.request)) {  // the stream broke; Finish() says why
        more = false;
        break;
      }
      ++out->requests;
      out->points_sent += batch.points;
    }
    more = more && loop != nullptr;
  }
  stream->WritesDone();
  reader.join();
  grpc::Status status = stream->Finish();
  if (!status.ok()) {
    ++out->failed_requests;
    if (out->first_error.empty()) out->first_error = "stream: " + status.error_message();
  }
}

namespace {

// Reads "points_accepted":N (and rejected) from a trainwatch write response; 0 if absent.
uint64_t JsonCounter(const std::string& body, const std::string& key) {
  size_t at = body.find("\"" + key + "\":");
  return at == std::string::npos ? 0 : std::strtoull(body.c_str() + at + key.size() + 3, nullptr, 10);
}

}  // namespace

void RunHttpLane(const HttpLaneOptions& options, const std::vector<TextBody>& bodies,
                 const Pacer& pacer, HttpConnection& conn, LaneResult* out) {
  HttpReply reply;
  std::string error;
  for (const TextBody& b : bodies) {
    if (!pacer.Admit(out->points_sent)) break;
    auto t0 = Clock::now();
    if (!conn.Request("POST", options.path, options.content_type, b.body, &reply, &error)) {
      ++out->failed_requests;
      if (out->first_error.empty()) out->first_error = error;
      break;
    }
    out->latencies.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    ++out->requests;
    out->points_sent += b.points;
    if (reply.status / 100 != 2) {
      ++out->failed_requests;
      if (out->first_error.empty()) out->first_error = "HTTP " + std::to_string(reply.status) + ": " + reply.body.substr(0, 300);
    }
    if (options.trainwatch) {
      out->points_accepted += JsonCounter(reply.body, "points_accepted");
      out->points_rejected += JsonCounter(reply.body, "points_rejected");
    } else if (reply.status / 100 == 2) {
      out->points_accepted += b.points;  // InfluxDB answers 204 with no counts
    }
  }
}

std::vector<std::vector<TextBody>> LoadFileBodies(const std::string& dir, uint64_t total_points,
                                                  int lanes) {
  std::vector<std::filesystem::path> paths;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.is_regular_file()) paths.push_back(entry.path());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<std::vector<TextBody>> out(static_cast<size_t>(lanes));
  uint64_t total_bytes = 0;
  for (size_t i = 0; i < paths.size(); ++i) {
    std::ifstream in(paths[i], std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    auto& lane = out[i % static_cast<size_t>(lanes)];
    lane.push_back(TextBody{ss.str(), 0});
    total_bytes += lane.back().body.size();
  }
  uint64_t assigned = 0, bytes_seen = 0;
  for (size_t i = 0; i < paths.size(); ++i) {
    TextBody& b = out[i % static_cast<size_t>(lanes)][i / static_cast<size_t>(lanes)];
    bytes_seen += b.body.size();
    uint64_t upto = total_bytes ? total_points * bytes_seen / total_bytes : 0;
    b.points = upto - assigned;
    assigned = upto;
  }
  return out;
}

}  // namespace trainwatch::bench
