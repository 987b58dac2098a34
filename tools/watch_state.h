// What `trainwatch watch` remembers between runs (format: docs/format/watch_state.md): per event
// file, the offset up to which the server has acknowledged everything and the file's identity;
// per run, each tag's plugin (said only by a tag's first value, which lies before the offset) and
// each scalar tag's newest step sent (a step below it is TensorBoard's per-tag purge).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "common/status.h"

namespace trainwatch::tools {

struct WatchedFile {
  std::string path;  // relative to the logdir
  std::string run;   // run id
  uint64_t dev = 0;  // identity: a different inode at the path means a new file
  uint64_t ino = 0;
  uint32_t head_len = 0;  // identity beyond the inode (inodes are reused): the CRC-32C of the
  uint32_t head_crc = 0;  // file's first head_len bytes
  uint64_t offset = 0;    // every record before this offset is acknowledged by the server
};

struct WatchedRun {
  bool start_time_set = false;
  std::map<std::string, std::pair<std::string, int>> tags;  // tag -> (plugin name, data class)
  std::map<std::string, int64_t> steps;  // scalar tag -> newest step still visible of those sent
};

struct WatchState {
  std::string logdir;  // absolute
  std::string server;
  std::string project;
  std::map<std::string, WatchedFile> files;  // key: path
  std::map<std::string, WatchedRun> runs;    // key: run id
};

// NotFound when `path` does not exist; InvalidArgument (naming the file and the problem) when it
// is not a state file this version understands.
Result<WatchState> LoadWatchState(const std::string& path);
// Atomically replaces `path` (creating its directory).
Status SaveWatchState(const std::string& path, const WatchState& state);

// $XDG_CACHE_HOME/trainwatch/watch/<hash>.json, else ~/.cache/trainwatch/watch/<hash>.json, the
// hash over the absolute logdir, the server and the project: outside the user's logdir, one per
// thing watched.
std::string DefaultWatchStatePath(const std::string& abs_logdir, const std::string& server,
                                  const std::string& project);

}  // namespace trainwatch::tools
