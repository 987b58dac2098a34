#include "watch_command.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "common/crc32c.h"
#include "common/duration.h"
#include "import_export_http.h"
#include "import_logdir.h"
#include "import_options.h"
#include "import_run_sink.h"
#include "watch_state.h"

namespace trainwatch::tools {
namespace {

constexpr const char* kWatchDescription =
    "Tails TensorBoard event files into the server as they are written: new run directories, new\n"
    "files and growing files, with anomaly detection and alerts on the fly. What was imported is\n"
    "remembered in a state file (per file: offset and identity, saved only once the server has\n"
    "acknowledged everything before the offset), so a restart continues where it stopped, without\n"
    "duplicates or gaps; a file replaced or truncated is read again from its start.\n"
    "SIGINT/SIGTERM flush, save and exit. Runs stay 'running'.\n";

// The first bytes of a file, as its identity beyond the inode number.
constexpr uint32_t kHeadBytes = 64;
// How long one poll waits for the server's acknowledgements before reading on.
constexpr double kFlushSeconds = 5;
// How long a SessionLog START waits for the acknowledgement of what came before it (its rewind
// must follow that data): longer, as a restart is rare and reading on without it loses it.
constexpr double kRewindFlushSeconds = 60;

struct FileIdentity {
  uint64_t dev = 0;
  uint64_t ino = 0;
  uint64_t size = 0;
};

bool StatFile(const std::string& path, FileIdentity* id) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  id->dev = st.st_dev;
  id->ino = st.st_ino;
  id->size = static_cast<uint64_t>(st.st_size);
  return true;
}

// CRC-32C of the first `len` bytes of `path`; false if it has fewer.
bool HeadCrc(const std::string& path, uint32_t len, uint32_t* crc) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[kHeadBytes];
  ssize_t n = ::pread(fd, buf, len, 0);
  ::close(fd);
  if (n != static_cast<ssize_t>(len)) return false;
  *crc = crc32c::Value(buf, len);
  return true;
}

struct LiveRun {
  std::unique_ptr<Run> handle;
  std::unique_ptr<RunSink> sink;
  WatchedRun saved;
};

struct LiveFile {
  WatchedFile saved;                                  // as acknowledged
  WatchedFile current;                                // as read: saved once the server acknowledges
  std::unique_ptr<tfevents::EventFileReader> reader;  // open while a record is pending
  uint64_t seen_size = 0;  // the size at the last look: unchanged means nothing to do
};

class Watcher {
 public:
  Watcher(std::string logdir, ServerFlags flags, std::string state_path, WatchState state)
      : logdir_(std::move(logdir)),
        flags_(std::move(flags)),
        state_path_(std::move(state_path)),
        state_(std::move(state)),
        client_(ReplayClientOptions(flags_,
                                    [](WarningKind, const std::string& w) {
                                      std::fprintf(stderr, "trainwatch watch: %s\n", w.c_str());
                                    })),
        http_(flags_.server, flags_.api_key, flags_.tls_ca_file) {
    for (const auto& [key, f] : state_.files) files_[key].saved = files_[key].current = f;
  }

  // One pass over the logdir: reads what is new, waits for the server's acknowledgement, saves.
  void Poll() {
    Result<std::vector<LogdirRun>> runs = FindRuns(logdir_);
    if (!runs.ok()) {
      Report(runs.status().message());
      return;
    }
    std::set<std::string> listed;
    for (const LogdirRun& run : *runs) {
      for (const std::string& name : run.files) listed.insert(ReadFile(run, name));
    }
    // Files gone from the logdir (deleted, or renamed: then their entry moved to the new name)
    // are forgotten; the next save drops them from the state.
    std::erase_if(files_, [&](const auto& entry) { return !listed.contains(entry.first); });
    if (unacknowledged_ || files_.size() != state_.files.size()) Commit();
  }

  // Waits for everything read to be acknowledged and saves; false if it was not.
  bool Finish(double timeout) {
    if (!unacknowledged_) return true;
    if (!client_.Flush(timeout)) return false;
    return SaveAcknowledged();
  }

  const ImportCounts& totals() const { return totals_; }

 private:
  void Report(const std::string& line) {
    std::fprintf(stderr, "trainwatch watch: %s\n", line.c_str());
  }

  LiveRun& RunFor(const std::string& id) {
    auto it = runs_.find(id);
    if (it != runs_.end()) return it->second;
    LiveRun& run = runs_[id];
    run.handle = client_.StartRun(ReplayRunOptions(flags_, id, /*resume=*/true));
    run.sink = std::make_unique<RunSink>(
        run.handle.get(), [this](const std::string& line) { Report(line); },
        [this, id](int64_t step) {
          return RewindRunAfterFlush(client_, http_, flags_.project, id, step, kRewindFlushSeconds);
        },
        [this, id](int64_t step, const std::vector<std::string>& series) {
          return RewindSeriesAfterFlush(client_, http_, flags_.project, id, step, series,
                                        kRewindFlushSeconds);
        });
    if (auto s = state_.runs.find(id); s != state_.runs.end()) {
      run.saved = s->second;
      for (const auto& [tag, plugin] : run.saved.tags)
        run.sink->plugins().Set(tag, plugin.first, plugin.second);
      for (const auto& [tag, step] : run.saved.steps) run.sink->tag_steps().Set(tag, step);
    } else {
      std::printf("new run '%s'\n", id.c_str());
      std::fflush(stdout);
    }
    return run;
  }

  // A file at a new path whose inode we were following at a path that is gone: renamed (rotated).
  LiveFile* RenamedFrom(const FileIdentity& id, const std::string& new_key) {
    for (auto& [key, f] : files_) {
      if (key == new_key || f.current.ino != id.ino || f.current.dev != id.dev) continue;
      FileIdentity old;
      if (StatFile(logdir_ + "/" + key, &old) && old.ino == id.ino) continue;  // still there too
      return &f;
    }
    return nullptr;
  }

  // Reads what `name` of `run` gained; returns its key (its path relative to the logdir).
  std::string ReadFile(const LogdirRun& run, const std::string& name) {
    const std::string path = run.dir + "/" + name;
    const std::string key =
        std::filesystem::path(path).lexically_relative(logdir_).generic_string();
    FileIdentity id;
    if (!StatFile(path, &id)) return key;  // gone since the listing
    auto [it, inserted] = files_.try_emplace(key);
    LiveFile& f = it->second;
    if (inserted) {
      if (LiveFile* old = RenamedFrom(id, key)) {
        Report(key + ": renamed from " + old->current.path + ", continuing at offset " +
               std::to_string(old->current.offset));
        f.saved = old->saved;
        f.current = old->current;
        f.reader = std::move(old->reader);
        old->current.ino = old->saved.ino = 0;  // no longer followed at the old path
      } else {
        std::printf("new file %s\n", key.c_str());
        std::fflush(stdout);
        ++totals_.files;
      }
      f.current.path = key;
      f.current.run = run.id;
      f.current.dev = id.dev;
      f.current.ino = id.ino;
    }
    if (!inserted && id.size == f.seen_size && id.ino == f.current.ino && id.dev == f.current.dev &&
        !f.reader)
      return key;
    f.seen_size = id.size;
    // Same file as before? A new inode, fewer bytes than we read, or different first bytes mean
    // the file was replaced or truncated: read it again from the start.
    bool restart = false;
    if (f.current.ino != id.ino || f.current.dev != id.dev) {
      Report(key + ": replaced by a new file; reading it from the start");
      restart = true;
    } else if (id.size < f.current.offset) {
      Report(key + ": truncated to " + std::to_string(id.size) + " bytes (had read " +
             std::to_string(f.current.offset) + "); reading it from the start");
      restart = true;
    } else if (f.current.head_len > 0) {
      uint32_t crc;
      if (HeadCrc(path, f.current.head_len, &crc) && crc != f.current.head_crc) {
        Report(key + ": its first bytes changed (rewritten in place); reading it from the start");
        restart = true;
      }
    }
    if (restart) {
      f.reader.reset();
      f.current = WatchedFile{key, run.id, id.dev, id.ino, 0, 0, 0};
    }
    if (id.size == f.current.offset && f.reader == nullptr) return key;  // nothing new
    if (!f.reader) {
      auto reader = tfevents::EventFileReader::Open(path, f.current.offset, 1u << 20);
      if (!reader.ok()) {
        Report(reader.status().message());
        return key;
      }
      f.reader = std::move(*reader);
    }
    LiveRun& live = RunFor(run.id);
    const uint64_t before = f.reader->position();
    Result<uint64_t> tail = DrainFile(*f.reader, run.id + "/" + name, *live.sink);
    if (!tail.ok()) {
      Report(tail.status().message());
      f.reader.reset();
      return key;
    }
    f.current.offset = f.reader->position();
    if (f.current.head_len < kHeadBytes && id.size > f.current.head_len) {
      const auto len = static_cast<uint32_t>(std::min<uint64_t>(id.size, kHeadBytes));
      if (HeadCrc(path, len, &f.current.head_crc)) f.current.head_len = len;
    }
    if (f.current.offset != before) unacknowledged_ = true;
    if (f.reader->pending_bytes() == 0 && id.size == f.current.offset)
      f.reader.reset();  // reopen when it grows
    return key;
  }

  // Waits (briefly) for the server's acknowledgement of everything read, then saves the offsets.
  void Commit() {
    if (!client_.Flush(kFlushSeconds)) return;  // the server is away or slow: try again next poll
    SaveAcknowledged();
  }

  bool SaveAcknowledged() {
    // New runs get their start time (the first event's) once their first data is in.
    for (auto& [id, run] : runs_) {
      if (run.saved.start_time_set || run.sink->first_wall_time() <= 0) continue;
      nlohmann::json body = {{"start_time", run.sink->first_wall_time()}};
      Result<HttpReply> r = http_.Post(
          "/api/v1/runs/update?project=" + UrlEncode(flags_.project) + "&run=" + UrlEncode(id),
          body.dump());
      if (r.ok() && r->status == 200) {
        run.saved.start_time_set = true;
      } else {
        Report("setting the start time of run '" + id +
               "': " + (r.ok() ? r->body : r.status().message()));
      }
    }
    WatchState next = state_;
    next.files.clear();
    for (auto& [key, f] : files_) {
      if (f.current.ino == 0) continue;  // renamed away
      f.saved = f.current;
      next.files[key] = f.saved;
    }
    for (auto& [id, run] : runs_) {
      for (const auto& [tag, plugin] : run.sink->plugins().all())
        run.saved.tags[tag] = {plugin.name, plugin.data_class};
      // Consistent with the offsets saved beside them: everything read is acknowledged.
      run.saved.steps.clear();
      for (const auto& [tag, step] : run.sink->tag_steps().all()) {
        if (step != TagSteps::kNone) run.saved.steps[tag] = step;
      }
      next.runs[id] = run.saved;
      totals_.Add(run.sink->counts());
      run.sink->counts() = ImportCounts{};
    }
    if (Status s = SaveWatchState(state_path_, next); !s.ok()) {
      Report("saving " + state_path_ + ": " + s.message());
      return false;
    }
    state_ = std::move(next);
    unacknowledged_ = false;
    return true;
  }

  const std::string logdir_;
  const ServerFlags flags_;
  const std::string state_path_;
  WatchState state_;
  Client client_;
  HttpClient http_;
  std::map<std::string, LiveRun> runs_;
  std::map<std::string, LiveFile> files_;
  bool unacknowledged_ = false;
  ImportCounts totals_;
};

}  // namespace

int WatchCommand(const std::vector<std::string>& args) {
  ServerFlags flags;
  std::string logdir;
  std::string state_path;
  double interval = 0.25;
  FlagSet set("watch", kWatchDescription);
  set.AddPositional("LOGDIR", &logdir);
  AddServerFlags(&set, &flags, /*with_project=*/true);
  set.Add(StringFlag(
      "--state", "FILE",
      "where the state is kept (default: $XDG_CACHE_HOME/trainwatch/watch/<hash>.json or\n"
      "~/.cache/trainwatch/watch/<hash>.json)",
      &state_path));
  set.Add(DurationFlag("--interval", "D", "how often to look for new data (default 250ms)",
                       &interval,
                       /*positive=*/true));
  if (auto exit_code = ParseCommandLine(set, args)) return *exit_code;
  std::error_code ec;
  if (!std::filesystem::is_directory(logdir, ec)) {
    std::fprintf(stderr, "trainwatch watch: %s is not a directory\n", logdir.c_str());
    return 2;
  }
  const std::string abs_logdir = std::filesystem::absolute(logdir).lexically_normal().string();
  if (state_path.empty())
    state_path = DefaultWatchStatePath(abs_logdir, flags.server, flags.project);
  WatchState state;
  if (Result<WatchState> loaded = LoadWatchState(state_path); loaded.ok()) {
    state = std::move(*loaded);
    if (state.logdir != abs_logdir || state.project != flags.project) {
      std::fprintf(stderr,
                   "trainwatch watch: %s belongs to %s (project '%s'), not %s (project '%s'): give "
                   "another --state\n",
                   state_path.c_str(), state.logdir.c_str(), state.project.c_str(),
                   abs_logdir.c_str(), flags.project.c_str());
      return 2;
    }
  } else if (loaded.status().code() != StatusCode::kNotFound) {
    std::fprintf(stderr, "trainwatch watch: %s\n", loaded.status().message().c_str());
    return 2;
  }
  state.logdir = abs_logdir;
  state.server = flags.server;
  state.project = flags.project;

  if (Status s = CheckServer(flags); !s.ok()) {
    // A server that is away now may come back (the SDK spools meanwhile); a refused key will not.
    std::fprintf(stderr, "trainwatch watch: %s\n", s.message().c_str());
    if (s.code() == StatusCode::kInvalidArgument) return 2;
  }

  // Block the signals we wait for before the SDK starts its threads, so that only sigtimedwait
  // sees them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  Watcher watcher(logdir, flags, state_path, std::move(state));
  std::printf("watching %s into project '%s' at %s (state %s)\n", abs_logdir.c_str(),
              flags.project.c_str(), flags.server.c_str(), state_path.c_str());
  std::fflush(stdout);
  timespec wait{static_cast<time_t>(interval),
                static_cast<long>((interval - static_cast<time_t>(interval)) * 1e9)};
  while (true) {
    watcher.Poll();
    const int sig = sigtimedwait(&signals, nullptr, &wait);
    if (sig == SIGINT || sig == SIGTERM) break;
  }
  const bool saved = watcher.Finish(30);
  std::printf("stopped: %s\n", FormatCounts(watcher.totals()).c_str());
  if (!saved) {
    std::fprintf(stderr,
                 "trainwatch watch: not everything read was acknowledged; the state keeps the last "
                 "acknowledged "
                 "offsets, so the next start reads the rest again\n");
    return 1;
  }
  return 0;
}

}  // namespace trainwatch::tools
