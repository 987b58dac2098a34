#include "cluster/store_bootstrap.h"

#include <algorithm>
#include <memory>
#include <string>

#include "common/clock.h"
#include "storage/chunk_store.h"
#include "storage/engine.h"
#include "storage/wal/wal_format.h"
#include "storage/wal/wal_log.h"
#include "trainwatch/v1/ingest.pb.h"

namespace trainwatch::cluster {
namespace {

// Downloads retried when the snapshot's pieces went missing (a newer snapshot replaced it).
constexpr int kDownloadTries = 3;

// Removes a directory of files (what a snapshot directory is; no subdirectories).
Status RemoveFlatDir(FileSystem& fs, const std::string& dir) {
  if (!fs.Exists(dir)) return Status::Ok();
  TW_ASSIGN_OR_RETURN(std::vector<std::string> names, fs.ListDir(dir));
  for (const std::string& name : names) TW_RETURN_IF_ERROR(fs.RemoveFile(dir + "/" + name));
  return fs.RemoveDir(dir);
}

bool WalHasSegments(FileSystem& fs, const std::string& wal_dir) {
  if (!fs.Exists(wal_dir)) return false;
  Result<std::vector<std::string>> names = fs.ListDir(wal_dir);
  if (!names.ok()) return true;  // unknown: treat as in use
  return std::any_of(names->begin(), names->end(), [](const std::string& n) {
    return storage::wal::ParseSegmentFileName(n).has_value();
  });
}

}  // namespace

Result<StoreMarks> ReadStoreMarks(const std::string& store_dir, const std::string& writer) {
  TW_ASSIGN_OR_RETURN(std::unique_ptr<storage::ChunkStore> store,
                      storage::ChunkStore::Open(store_dir));
  StoreMarks marks;
  TW_RETURN_IF_ERROR(store->writers().ForEach([&](std::string id, uint64_t seq) {
    if (id == writer) marks.sequence = seq;
    return Status::Ok();
  }));
  TW_ASSIGN_OR_RETURN(marks.checkpoint_lsn, store->checkpoint().Get());
  return marks;
}

Result<uint64_t> StoredWriterSequence(FileSystem& fs, const std::string& data_dir,
                                      const std::string& writer) {
  uint64_t sequence = 0;
  if (fs.Exists(data_dir + "/store/CURRENT")) {
    TW_ASSIGN_OR_RETURN(StoreMarks marks, ReadStoreMarks(data_dir + "/store", writer));
    sequence = marks.sequence;
  }
  if (!WalHasSegments(fs, data_dir + "/wal")) return sequence;
  TW_ASSIGN_OR_RETURN(std::unique_ptr<storage::wal::WalLog> wal,
                      storage::wal::WalLog::Open(fs, data_dir + "/wal"));
  TW_RETURN_IF_ERROR(
      wal->Replay(0,
                  [&](uint64_t, std::string_view record) {
                    v1::WriteRequest request;
                    if (!record.empty() && record[0] == storage::kWriteRecordType &&
                        request.ParseFromArray(record.data() + 1,
                                               static_cast<int>(record.size() - 1)) &&
                        request.writer_id() == writer) {
                      sequence = std::max(sequence, request.sequence());
                    }
                    return Status::Ok();
                  })
          .status());
  return sequence;
}

Status InstallSnapshot(SnapshotStore& snapshots, FileSystem& fs, const SnapshotManifest& manifest,
                       const std::string& data_dir, const std::string& writer) {
  const std::string tmp = data_dir + "/store.snapshot-tmp";
  TW_RETURN_IF_ERROR(RemoveFlatDir(fs, tmp));  // a download a crash interrupted
  if (Status s = snapshots.Download(manifest, tmp); !s.ok()) {
    (void)RemoveFlatDir(fs, tmp);
    return s;
  }
  // What the copy itself says it covers must be what the manifest says.
  Result<StoreMarks> marks = ReadStoreMarks(tmp, writer);
  Status checked = marks.status();
  if (marks.ok() && (marks->sequence != manifest.covered_sequence ||
                     marks->checkpoint_lsn != manifest.checkpoint_lsn)) {
    checked = Status::Corruption("snapshot " + manifest.id + " holds " + writer + " up to " +
                                 std::to_string(marks->sequence) + " with checkpoint LSN " +
                                 std::to_string(marks->checkpoint_lsn) + "; its manifest says " +
                                 std::to_string(manifest.covered_sequence) + " and " +
                                 std::to_string(manifest.checkpoint_lsn));
  }
  if (!checked.ok()) {
    (void)RemoveFlatDir(fs, tmp);
    return checked;
  }
  // The log starts at the snapshot's checkpoint LSN: an empty first segment named after it
  // (docs/format/wal.md). Records written from there on lie above every LSN the store knows.
  const std::string wal_dir = data_dir + "/wal";
  TW_RETURN_IF_ERROR(fs.CreateDirs(wal_dir));
  const uint64_t first_lsn = std::max<uint64_t>(manifest.checkpoint_lsn, 1);
  TW_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> segment,
                      fs.OpenAppendable(wal_dir + "/" + storage::wal::SegmentFileName(first_lsn)));
  TW_RETURN_IF_ERROR(segment->Sync());
  TW_RETURN_IF_ERROR(segment->Close());
  TW_RETURN_IF_ERROR(fs.SyncDir(wal_dir));
  // The store appears last, whole: a crash before this leaves no store, and the next start
  // installs again.
  TW_RETURN_IF_ERROR(fs.RenameFile(tmp, data_dir + "/store"));
  return fs.SyncDir(data_dir);
}

Result<StoreBootstrapReport> BootstrapStore(JetStream& js, SnapshotStore* snapshots, FileSystem& fs,
                                            const StoreBootstrapOptions& options, Clock& clock,
                                            Logger& logger) {
  StoreBootstrapReport report;
  const std::string& dir = options.data_dir;
  const bool empty = !fs.Exists(dir + "/store/CURRENT");
  Result<StreamState> stream = js.GetStreamState(options.stream);
  if (!stream.ok() && stream.status().code() != StatusCode::kNotFound) {
    return stream.status().WithContext("the ingest stream's state");
  }
  const uint64_t first = stream.ok() ? stream->first_sequence : 0;
  const uint64_t last = stream.ok() ? stream->last_sequence : 0;
  // The stream no longer holds messages this node has not applied.
  auto gap_after = [&](uint64_t applied) { return last >= applied + 1 && first > applied + 1; };
  if (!empty) {
    // The store's checkpointed sequence first (cheap); only if the stream has moved past it, the
    // write-ahead log's records too (they may cover the difference).
    TW_ASSIGN_OR_RETURN(StoreMarks marks, ReadStoreMarks(dir + "/store", options.writer));
    report.applied_sequence = marks.sequence;
    if (!gap_after(report.applied_sequence)) return report;
    TW_ASSIGN_OR_RETURN(report.applied_sequence, StoredWriterSequence(fs, dir, options.writer));
  }
  const bool gap = gap_after(report.applied_sequence);
  if (!empty && !gap) return report;

  std::unique_ptr<SnapshotManifest> latest;
  if (snapshots != nullptr) {
    Result<SnapshotManifest> m = snapshots->Latest();
    if (m.ok() && m->stream == options.stream) {
      latest = std::make_unique<SnapshotManifest>(std::move(m).value());
    } else if (!m.ok() && m.status().code() != StatusCode::kNotFound) {
      return m.status().WithContext("the latest store snapshot");
    }
  }
  const std::string where = "the ingest stream " + options.stream + " starts at sequence " +
                            std::to_string(first) +
                            " (messages before it were removed: " + "--cluster-stream-max-age)";
  if (!latest) {
    if (!gap) return report;  // a new cluster, or one whose stream still holds everything
    return Status::InvalidArgument(
        where + ", this node's store ends at " + std::to_string(report.applied_sequence) +
        ", and the cluster holds no store snapshot: the node cannot be rebuilt (take a snapshot "
        "on a node that holds everything: POST /api/v1/cluster/snapshot)");
  }
  if (latest->covered_sequence + 1 < first && last > latest->covered_sequence) {
    return Status::InvalidArgument(
        where + ", this node's store ends at " + std::to_string(report.applied_sequence) +
        ", and the newest store snapshot (" + latest->id + ") covers only up to " +
        std::to_string(latest->covered_sequence) +
        ": the node cannot be rebuilt (take a newer snapshot: POST /api/v1/cluster/snapshot)");
  }
  if (!empty || WalHasSegments(fs, dir + "/wal")) {
    // A store behind the stream (or a log without its store): kept aside, not deleted.
    report.moved_aside =
        dir + "/replaced-" + std::to_string(static_cast<uint64_t>(clock.NowUnixSeconds()));
    TW_RETURN_IF_ERROR(fs.CreateDirs(report.moved_aside));
    for (const char* part : {"store", "wal"}) {
      if (fs.Exists(dir + "/" + part)) {
        TW_RETURN_IF_ERROR(fs.RenameFile(dir + "/" + part, report.moved_aside + "/" + part));
      }
    }
    TW_RETURN_IF_ERROR(fs.SyncDir(dir));
    logger.Warn(
        "this node's store ends before the ingest stream's first message: moved aside, "
        "to be replaced by the cluster's store snapshot (remove it once the node serves)",
        {{"applied_sequence", report.applied_sequence},
         {"stream_first_sequence", first},
         {"moved_to", report.moved_aside}});
  }
  const int64_t started = clock.MonotonicNanos();
  for (int attempt = 1;; ++attempt) {
    logger.Info("installing the cluster's store snapshot",
                {{"snapshot", latest->id},
                 {"covered_sequence", latest->covered_sequence},
                 {"bytes", latest->total_bytes()},
                 {"files", static_cast<uint64_t>(latest->files.size())}});
    Status s = InstallSnapshot(*snapshots, fs, *latest, dir, options.writer);
    if (s.ok()) break;
    if (s.code() != StatusCode::kUnavailable || attempt >= kDownloadTries) {
      return s.WithContext("installing store snapshot " + latest->id);
    }
    // Its pieces went missing: a newer snapshot replaced it meanwhile.
    TW_ASSIGN_OR_RETURN(SnapshotManifest newer, snapshots->Latest());
    *latest = std::move(newer);
  }
  report.installed = true;
  report.applied_sequence = latest->covered_sequence;
  report.snapshot = *latest;
  logger.Info("installed the cluster's store snapshot",
              {{"snapshot", latest->id},
               {"from_node", latest->node},
               {"covered_sequence", latest->covered_sequence},
               {"bytes", latest->total_bytes()},
               {"seconds", static_cast<double>(clock.MonotonicNanos() - started) / 1e9},
               {"stream_first_sequence", first},
               {"stream_last_sequence", last}});
  return report;
}

}  // namespace trainwatch::cluster
