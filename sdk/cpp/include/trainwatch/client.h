// trainwatch C++ client: the SDK's public API.
//
//   trainwatch::Client client(trainwatch::ClientOptions{.server = "http://127.0.0.1:8080"});
//   std::unique_ptr<trainwatch::Run> run = client.StartRun({.project = "demo", .name = "mlp"});
//   for (int64_t step = 0; ...; ++step) run->Log(step, {{"loss", loss}, {"lr", lr}});
//   run->Finish();
//
// `Run::Log` is the hot path: it enqueues into a lock-free buffer and returns; it never blocks,
// never fails and never touches the network. A background batcher turns the buffer into batches;
// a transport thread sends them over the gRPC ingest stream (HTTP as fallback), retries with
// exponential backoff and jitter, and while the server is unreachable spools batches to a bounded
// directory. Every batch carries (writer id, sequence), so the server applies each exactly once, in
// order, however often it is resent. See docs/sdk.md.
//
// Thread-safety: every method of Client and Run is thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace trainwatch {

namespace sdk {
class ClientCore;
class RunState;
class SystemMetricsThread;
}  // namespace sdk

enum class Mode {
  kOnline,   // send to the server; spool only while it is unreachable
  kOffline,  // write the spool only; `trainwatch sync DIR` uploads it later
};

enum class Transport {
  kAuto,  // gRPC at the address the server advertises (GET /api/v1/info), else HTTP
  kGrpc,
  kHttp,
};

// What happens when the in-memory buffer is full (the batcher cannot keep up) or the spool has
// reached its size limit. Every dropped point is counted (ClientStats) and warned about.
enum class OverflowPolicy {
  kDropOldest,  // default: make room by dropping the oldest buffered data; log() never blocks
  kDropNewest,  // discard what does not fit
  kBlock,       // log() waits for room (only for users who prefer stalls to gaps)
};

// What a warning is about, so that callers can filter or deduplicate without parsing messages.
enum class WarningKind {
  kServerUnreachable,  // a connection attempt failed; once per outage
  kPointsDropped,      // the buffer or the spool was full, or a batch could not be queued
  kPointsRejected,     // the server refused part of a batch (invalid names or values)
  kLeftInSpool,        // Close() could not deliver everything; the message names the directory
  kSpool,              // the spool directory could not be used or read
};

struct ClientOptions {
  // The server's HTTP base URL; https:// for TLS (see docs/sdk.md, "TLS").
  std::string server = "http://127.0.0.1:8080";
  // gRPC target ("host:port"); empty: the address the server advertises, on the server's host.
  // With an https:// server it is spoken to over TLS.
  std::string grpc_target;
  // Sent as `Authorization: Bearer <key>`, and never in clear text to another machine: with an
  // http:// server URL (or a plaintext gRPC target) whose host is not loopback (127.0.0.0/8, ::1,
  // localhost) the client refuses to connect, and says to use https:// (a kServerUnreachable
  // warning; what is logged is spooled as during any outage).
  std::string api_key;
  // TLS, for https:// servers and gRPC over TLS: a PEM CA bundle to verify the server's certificate
  // with (empty: the system's CAs), and for mutual TLS a PEM client certificate chain and its key
  // (both or neither). Read at each connection attempt. An https:// server is never downgraded: if
  // it advertises plaintext gRPC, the HTTPS transport is used instead.
  std::string tls_ca_file;
  std::string tls_cert_file;
  std::string tls_key_file;
  // Config and tag keys whose values are masked ("***") before they leave the process, besides
  // password, passwd, secret, token, api_key, apikey, access_key, private_key, credential(s), auth.
  std::vector<std::string> secret_patterns;
  Mode mode = Mode::kOnline;
  Transport transport = Transport::kAuto;

  // Where batches are spooled: <spool_dir>/<writer id>/. Empty: $TRAINWATCH_SPOOL_DIR, else
  // $XDG_CACHE_HOME/trainwatch/spool, else ~/.cache/trainwatch/spool.
  std::string spool_dir;
  uint64_t spool_max_bytes = 1ull << 30;
  // Batches kept in memory awaiting delivery; beyond this they go to the spool.
  uint64_t memory_max_bytes = 32ull << 20;
  // Capacity of the lock-free buffer between Log() and the batcher, in records (a record holds
  // one step of one run, up to 6 metrics; more metrics take more records).
  size_t buffer_records = 1 << 16;
  OverflowPolicy overflow = OverflowPolicy::kDropOldest;

  // A batch is cut once it holds this many points or its oldest point waited this long.
  size_t batch_max_points = 20000;
  double batch_max_delay_seconds = 0.2;
  // ... or once its images, histograms and other per-run messages hold this many bytes, so that a
  // burst of images never makes a request the server refuses as too large (its --max-body-bytes,
  // 64 MiB by default; one image is at most --max-image-bytes, 16 MiB, and always goes alone).
  size_t batch_max_bytes = 8u << 20;
  double heartbeat_interval_seconds = 10;  // 0 disables heartbeats
  double backoff_initial_seconds = 0.1;
  double backoff_max_seconds = 5;
  // A batch unacknowledged for this long means the server is stuck: the connection is dropped and
  // re-established (meanwhile new batches spool).
  double ack_timeout_seconds = 10;
  // Close() (and the destructor) waits at most this long for the server to take everything; what
  // is left stays in the spool, and a warning says where.
  double flush_timeout_seconds = 30;
  // Warnings (server unreachable, points dropped, points rejected by the server, data left in the
  // spool at exit) go here; when empty they go to stderr. Called from the SDK's threads and also
  // from Log() (buffer full), Close() and the Client constructor: keep it short and non-blocking.
  std::function<void(WarningKind, const std::string&)> on_warning;
};

// Which rank of a distributed job (torch.distributed, ...) writes a run: docs/distributed.md. Every
// rank of the job starts the run with the same id and its own RankOptions; each batch the client
// sends for the run (rows, system samples, histograms, images, texts, metadata, heartbeats) carries
// them as RunBatch.rank, so the server keeps the ranks' points apart under one run.
struct RankOptions {
  int rank = -1;  // torch.distributed's global rank, 0 .. world_size-1; < 0: not distributed
  uint32_t world_size = 0;  // 0: unknown
  uint32_t local_rank = 0;  // the rank's index on its host
  std::string host;         // empty: this machine's host name
};

struct RunOptions {
  std::string project;  // empty: "default"
  std::string id;       // the run's id; empty: a new unique id
  std::string name;     // display name; empty: the id
  std::string group;
  std::vector<std::string> tags;
  std::string config_json;  // a JSON object, or empty
  bool resume = false;      // true: do not reset status/start time of an existing run with this id
  // A sampler thread logs system/... series (CPU, memory, RSS, disk and network I/O, and per GPU
  // through NVML when present) at this interval; 0 disables it.
  double system_metrics_interval_seconds = 1;
  // Loaded with dlopen; absent means no GPU series and no error.
  std::string nvml_library = "libnvidia-ml.so.1";
  // What the sampler logs. Series of this process (system/process_*) always; the machine's (CPU,
  // memory, disk, network) when `machine_metrics`: in a distributed job one rank per host
  // (local rank 0) logs them. GPUs when `gpu_metrics`: with gpu_index < 0 every GPU NVML reports,
  // as system/gpu/<i>/<name>; with gpu_index >= 0 only that NVML device, as system/gpu/<name> (a
  // rank's own GPU: one series name across the ranks of a job).
  bool machine_metrics = true;
  bool gpu_metrics = true;
  int gpu_index = -1;

  // Set for a run written by one rank of a distributed job. A rank other than 0 sends none of the
  // run's metadata (name, group, tags, config, graph, start time: SetConfig, SetTags and SetGraph
  // do nothing there), only its own status: "running" at the start, Finish()'s at the end; the
  // server applies those to the rank, rank 0's to the run.
  RankOptions rank;
};

struct Metric {
  std::string_view name;
  double value;
};

// One histogram: counts[i] values fell in [edges[i], edges[i+1]).
struct HistogramBuckets {
  std::vector<double> edges;  // counts.size() + 1, strictly increasing
  std::vector<double> counts;
};

struct ClientStats {
  uint64_t points_logged = 0;   // accepted by Log()
  uint64_t points_acked = 0;    // acknowledged by the server (durable there)
  uint64_t points_dropped = 0;  // lost to the overflow policy
  uint64_t points_spooled = 0;  // written to the spool (perhaps sent later)
  uint64_t batches_sent = 0;    // including resends
  uint64_t batches_acked = 0;
  uint64_t batches_duplicate = 0;  // acked as already applied (a resend after a lost ack)
  uint64_t reconnects = 0;
  uint64_t spool_bytes = 0;   // now on disk
  uint64_t memory_bytes = 0;  // batches now held in memory
  bool connected = false;
  std::string transport;  // "grpc", "http" or "" while unconnected
  std::string last_error;
};

class Run;

// One process's connection to a server. Owns the background threads; runs it starts share them.
class Client {
 public:
  explicit Client(ClientOptions options = {});
  // Close(), then stops the threads.
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Starts (or with options.resume, continues) a run. Never fails: problems surface as warnings.
  std::unique_ptr<Run> StartRun(const RunOptions& options);

  // Waits until everything logged so far is acknowledged (or spooled, offline) or `timeout_seconds`
  // passed. Returns true if everything was delivered.
  bool Flush(double timeout_seconds);
  // Flushes with options.flush_timeout_seconds (but gives up after one more failed connection
  // attempt when the server is unreachable), then stops sending; what is left stays spooled.
  // Later Log() calls are ignored. Idempotent.
  void Close();

  ClientStats Stats() const;
  const std::string& writer_id() const;
  std::string spool_path() const;  // <spool_dir>/<writer id>

 private:
  std::shared_ptr<sdk::ClientCore> core_;
};

class Run {
 public:
  ~Run();  // does not finish the run: a run dropped without Finish() shows as crashed
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  const std::string& project() const;
  const std::string& id() const;

  // Logs metrics at `step` with the current time (or `unix_time`, in seconds). Lock-free; metric
  // names are interned per run on first use (that first call takes a lock).
  void Log(int64_t step, std::initializer_list<Metric> metrics);
  void Log(int64_t step, std::span<const Metric> metrics);
  void Log(int64_t step, std::span<const Metric> metrics, double unix_time);
  // Samples of the machine (system/...): indexed by sample number, outside the step clock.
  void LogSampled(int64_t sample, std::span<const Metric> metrics, double unix_time);
  void LogHistogram(int64_t step, std::string_view name, HistogramBuckets histogram);
  void LogHistogram(int64_t step, std::string_view name, HistogramBuckets histogram,
                    double unix_time);
  // An encoded image (PNG, JPEG, GIF or WebP bytes) of tag `name` at `step`; `index` tells apart
  // several images of one tag and step. The server refuses images over its size limit (a warning).
  void LogImage(int64_t step, std::string_view name, std::string encoded,
                std::string_view caption = {}, uint32_t index = 0);
  void LogImage(int64_t step, std::string_view name, std::string encoded, std::string_view caption,
                uint32_t index, double unix_time);
  void LogText(int64_t step, std::string_view name, std::string_view text);
  void LogText(int64_t step, std::string_view name, std::string_view text, double unix_time);
  // Merges a JSON object into the run's config.
  void SetConfig(std::string_view config_json);
  void SetTags(std::vector<std::string> tags, bool replace = false);
  // The model graph as JSON (see docs/sdk.md); replaces the previous one.
  void SetGraph(std::string graph_json);
  // Marks the run finished ("finished", or "crashed" for a failed run); later logs are ignored.
  void Finish(std::string_view status = "finished");

 private:
  friend class Client;
  Run(std::shared_ptr<sdk::ClientCore> core, std::shared_ptr<sdk::RunState> state);
  void Enqueue(int64_t step, std::span<const Metric> metrics, double unix_time, bool sampled);

  std::shared_ptr<sdk::ClientCore> core_;
  std::shared_ptr<sdk::RunState> state_;
  std::unique_ptr<sdk::SystemMetricsThread> system_metrics_;
};

}  // namespace trainwatch
