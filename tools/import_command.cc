#include "import_command.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "common/duration.h"
#include "common/mutex.h"
#include "import_export_http.h"
#include "import_logdir.h"
#include "import_options.h"
#include "import_run_sink.h"

namespace trainwatch::tools {
namespace {

constexpr const char* kImportDescription =
    "Imports TensorBoard event files: every directory under LOGDIR holding files whose name\n"
    "contains 'tfevents' becomes a run whose id is its path relative to LOGDIR (LOGDIR itself:\n"
    "its name). Scalars, histograms, images, text and graphs are imported (docs/tensorboard.md);\n"
    "the runs are marked finished, with the first and last event's times as start and end.\n"
    "A distributed job's logdir with one directory per rank (rank_0/, rank-1/, rank2/, worker_3/\n"
    "... under one parent) is imported as ONE run, the parent's, with ranks; --ranks makes every\n"
    "run under LOGDIR a rank of one run named after LOGDIR.\n"
    "Corrupt records are reported with file and offset and skipped; an incomplete last record (a\n"
    "file still being written) is left for `trainwatch watch`. Exits 1 if the server did not\n"
    "acknowledge everything.\n";

constexpr size_t kMaxPrintedMessages = 50;

struct RunReport {
  std::string id;
  uint32_t ranks = 0;  // of a distributed run
  ImportCounts counts;
  double first_wall_time = 0;
  double last_wall_time = 0;
  uint64_t incomplete_tail_bytes = 0;
};

// Messages about the data (corrupt records, malformed values): the first ones printed as they come.
class Messages {
 public:
  explicit Messages(bool print) : print_(print) {}
  void Add(const std::string& line) {
    if (all_.size() < 10000) all_.push_back(line);
    if (print_ && ++printed_ <= kMaxPrintedMessages)
      std::fprintf(stderr, "trainwatch import: %s\n", line.c_str());
    ++total_;
  }
  void PrintOmitted() const {
    if (print_ && total_ > kMaxPrintedMessages) {
      std::fprintf(stderr, "trainwatch import: ... and %zu more\n", total_ - kMaxPrintedMessages);
    }
  }
  const std::vector<std::string>& all() const { return all_; }

 private:
  bool print_;
  size_t printed_ = 0;
  size_t total_ = 0;
  std::vector<std::string> all_;
};

Status SetRunTimes(HttpClient& http, const ServerFlags& flags, const RunReport& run) {
  if (run.first_wall_time <= 0) return Status::Ok();
  nlohmann::json body = {{"start_time", run.first_wall_time}, {"end_time", run.last_wall_time}};
  Result<HttpReply> reply = http.Post(
      "/api/v1/runs/update?project=" + UrlEncode(flags.project) + "&run=" + UrlEncode(run.id),
      body.dump());
  if (!reply.ok()) return reply.status();
  if (reply->status != 200) {
    return Status::Unavailable("setting the times of run '" + run.id + "': HTTP " +
                               std::to_string(reply->status) + ": " + reply->body);
  }
  return Status::Ok();
}

}  // namespace

int ImportCommand(const std::vector<std::string>& args) {
  ServerFlags flags;
  std::string logdir;
  double timeout = 600;
  bool json_out = false;
  FlagSet set("import", kImportDescription);
  set.AddPositional("LOGDIR", &logdir);
  AddServerFlags(&set, &flags, /*with_project=*/true);
  set.Add(DurationFlag(
      "--timeout", "D",
      "how long to wait for the server's acknowledgements at the end (default 10m)", &timeout));
  set.Add(SwitchFlag("--json", "print the summary as one JSON object", &json_out));
  bool all_ranks = false;
  set.Add(
      SwitchFlag("--ranks",
                 "LOGDIR is one distributed run: each of its event-file directories is one rank "
                 "(numbered by the ranks their names say, else in name order)",
                 &all_ranks));
  if (auto exit_code = ParseCommandLine(set, args)) return *exit_code;
  Result<std::vector<LogdirRun>> found = FindRuns(logdir);
  if (!found.ok()) {
    std::fprintf(stderr, "trainwatch import: %s\n", found.status().message().c_str());
    return 2;
  }
  if (found->empty()) {
    std::fprintf(stderr,
                 "trainwatch import: no event files (names containing 'tfevents') under %s\n",
                 logdir.c_str());
    return 2;
  }
  Result<std::vector<ImportRun>> runs = PlanRuns(logdir, std::move(*found), all_ranks);
  if (!runs.ok()) {
    std::fprintf(stderr, "trainwatch import: %s\n", runs.status().message().c_str());
    return 2;
  }

  if (Status s = CheckServer(flags); !s.ok()) {
    std::fprintf(stderr, "trainwatch import: %s\n", s.message().c_str());
    return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
  }

  Messages messages(!json_out);
  std::atomic<uint64_t> rejected_warnings{0};
  std::atomic<uint64_t> dropped_warnings{0};
  Mutex stderr_mu;  // one warning line at a time
  auto on_warning = [&](WarningKind kind, const std::string& w) {
    if (kind == WarningKind::kPointsRejected) ++rejected_warnings;
    if (kind == WarningKind::kPointsDropped) ++dropped_warnings;
    MutexLock lock(stderr_mu);
    std::fprintf(stderr, "trainwatch import: %s\n", w.c_str());
  };
  const auto t0 = std::chrono::steady_clock::now();
  Client client(ReplayClientOptions(flags, on_warning));
  HttpClient http(flags.server, flags.api_key, flags.tls_ca_file);
  std::vector<RunReport> reports;
  ImportCounts total;
  for (const ImportRun& run : *runs) {
    RunReport report;
    report.id = run.id;
    report.ranks = static_cast<uint32_t>(run.ranks.size());
    ImportCounts counts;
    // One writer of the run: its own files (rank -1: rows without a rank), or one rank's.
    auto import_dir = [&](const LogdirRun& dir, int rank, const std::string& host) {
      RunOptions options = ReplayRunOptions(flags, run.id, /*resume=*/false);
      if (rank >= 0) {
        options.rank.rank = rank;
        options.rank.world_size = run.world_size;
        options.rank.host = host;
      }
      std::unique_ptr<Run> handle = client.StartRun(options);
      // A distributed run restarts as a whole (the server rewinds every rank's series): rank 0's
      // restarts and purges rewind it; another rank's, imported after rank 0's points, would hide
      // them, so they are reported and the rows go on.
      const bool rewinds = rank <= 0;
      const std::string where = rank >= 0 ? dir.id : run.id;
      RunSink sink(
          handle.get(), [&](const std::string& line) { messages.Add(line); },
          [&](int64_t step) -> Status {
            if (!rewinds) {
              messages.Add(where + ": restart at step " + std::to_string(step) +
                           " not rewound (a distributed run is rewound at rank 0's restarts)");
              return Status::Ok();
            }
            return RewindRunAfterFlush(client, http, flags.project, run.id, step, timeout);
          },
          [&](int64_t step, const std::vector<std::string>& series) -> Status {
            if (!rewinds) {
              messages.Add(where + ": steps back to " + std::to_string(step) +
                           " not rewound (a distributed run is rewound at rank 0's)");
              return Status::Ok();
            }
            return RewindSeriesAfterFlush(client, http, flags.project, run.id, step, series,
                                          timeout);
          });
      for (const std::string& name : dir.files) {
        const std::string path = dir.dir + "/" + name;
        const std::string display = dir.id + "/" + name;
        ++sink.counts().files;
        auto reader = tfevents::EventFileReader::Open(path);
        if (!reader.ok()) {
          messages.Add(reader.status().message());
          continue;
        }
        Result<uint64_t> tail = DrainFile(**reader, display, sink);
        if (!tail.ok()) {
          messages.Add(tail.status().message());
        } else if (*tail > 0) {
          report.incomplete_tail_bytes += *tail;
          messages.Add(display + ":" + std::to_string((*reader)->position()) +
                       ": incomplete last record (" + std::to_string(*tail) +
                       " bytes): the file is still being written; imported up to there");
        }
      }
      handle->Finish("finished");
      counts.Add(sink.counts());
      if (sink.first_wall_time() > 0 &&
          (report.first_wall_time <= 0 || sink.first_wall_time() < report.first_wall_time)) {
        report.first_wall_time = sink.first_wall_time();
      }
      report.last_wall_time = std::max(report.last_wall_time, sink.last_wall_time());
    };
    if (run.run_level) import_dir(*run.run_level, -1, "");
    for (const LogdirRank& r : run.ranks) import_dir(r.dir, static_cast<int>(r.rank), r.host);
    report.counts = counts;
    total.Add(report.counts);
    reports.push_back(std::move(report));
  }
  const auto t_read = std::chrono::steady_clock::now();
  const bool delivered = client.Flush(timeout);
  const ClientStats stats = client.Stats();
  std::vector<std::string> update_errors;
  if (delivered) {
    for (const RunReport& r : reports) {
      if (Status s = SetRunTimes(http, flags, r); !s.ok()) update_errors.push_back(s.message());
    }
  }
  const auto t1 = std::chrono::steady_clock::now();
  const double seconds = std::chrono::duration<double>(t1 - t0).count();
  const double read_seconds = std::chrono::duration<double>(t_read - t0).count();
  const bool complete = delivered && stats.points_dropped == 0 && rejected_warnings == 0 &&
                        dropped_warnings == 0 && stats.points_acked == stats.points_logged &&
                        update_errors.empty() && total.rewinds_failed == 0;
  client.Close();
  messages.PrintOmitted();
  for (const std::string& e : update_errors)
    std::fprintf(stderr, "trainwatch import: %s\n", e.c_str());

  const double mb_per_s = seconds > 0 ? total.bytes / 1e6 / seconds : 0;
  const double points_per_s = seconds > 0 ? total.points / seconds : 0;
  if (json_out) {
    nlohmann::json out;
    auto counts_json = [](const ImportCounts& c) {
      return nlohmann::json{{"files", c.files},
                            {"bytes", c.bytes},
                            {"records", c.records},
                            {"points", c.points},
                            {"histograms", c.histograms},
                            {"images", c.images},
                            {"texts", c.texts},
                            {"graphs", c.graphs},
                            {"session_starts", c.session_starts},
                            {"steps_back", c.steps_back},
                            {"rewinds_failed", c.rewinds_failed},
                            {"corrupt", c.corrupt},
                            {"corrupt_bytes", c.corrupt_bytes},
                            {"bad_events", c.bad_events},
                            {"value_errors", c.value_errors},
                            {"skipped", c.skipped}};
    };
    out["runs"] = nlohmann::json::array();
    for (const RunReport& r : reports) {
      nlohmann::json j = counts_json(r.counts);
      j["id"] = r.id;
      if (r.ranks > 0) j["ranks"] = r.ranks;
      j["first_wall_time"] = r.first_wall_time;
      j["last_wall_time"] = r.last_wall_time;
      j["incomplete_tail_bytes"] = r.incomplete_tail_bytes;
      out["runs"].push_back(std::move(j));
    }
    out["total"] = counts_json(total);
    out["messages"] = messages.all();
    out["complete"] = complete;
    out["points_acked"] = stats.points_acked;
    out["seconds"] = seconds;
    out["read_seconds"] = read_seconds;
    out["mb_per_s"] = mb_per_s;
    out["points_per_s"] = points_per_s;
    std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::printf("imported %s into project '%s': %s\n", Count(reports.size(), "run").c_str(),
                flags.project.c_str(), FormatCounts(total).c_str());
    std::printf(
        "%.2f s (%.2f s reading, the rest waiting for the server's acknowledgements): %s/s, %.0f "
        "points/s\n",
        seconds, read_seconds, FormatBytes(mb_per_s * 1e6).c_str(), points_per_s);
    if (!complete) {
      std::printf("NOT everything was acknowledged by the server (%llu of %llu points; %s)%s\n",
                  static_cast<unsigned long long>(stats.points_acked),
                  static_cast<unsigned long long>(stats.points_logged),
                  delivered ? "delivered" : "still undelivered when the timeout passed",
                  stats.spool_bytes > 0 ? ("; what is left is in " + client.spool_path() +
                                           ": upload it with `trainwatch sync`")
                                              .c_str()
                                        : "");
    }
  }
  return complete ? 0 : 1;
}

}  // namespace trainwatch::tools
