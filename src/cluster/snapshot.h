// Store snapshots kept in the cluster (docs/cluster.md, "Bounded rebuild"): a copy of a node's
// embedded store, published in pieces to a JetStream stream, with a manifest in a KV bucket that
// says which ingest-stream sequence it covers. A node starting on an empty data directory
// installs the newest one and applies only the stream's tail after it.
//
// - Pieces: each file of the snapshot in order, cut into messages of at most piece_bytes (a file
//   never shares a message with another; an empty file has none), on the subject
//   `tw.snapshot.<id>` of the stream TW_SNAPSHOTS (file storage, the cluster's replicas), each
//   with the message id `<id>:<n>` so that a retried publish is stored once.
// - Manifest: the key `latest` of the bucket `tw_snapshots` (JSON, SnapshotManifest). Written
//   only by compare-and-set, and only over a manifest that covers less of the stream: two nodes
//   publishing at once never clobber each other and the newest covered sequence wins. The
//   superseded snapshot's pieces are purged once the new manifest is in place (the loser's own
//   pieces when it lost).
//
// Thread-safety: one SnapshotStore may be used from one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/jetstream.h"
#include "cluster/key_value.h"
#include "common/file_system.h"
#include "common/status.h"

namespace trainwatch::cluster {

struct SnapshotFile {
  std::string name;  // relative to the snapshot's directory; no '/'
  uint64_t size = 0;
  std::string sha256;  // 64 lower-case hex digits
};

struct SnapshotManifest {
  std::string id;      // unique: "<node>-<covered sequence>-<created, ms>"
  std::string node;    // the node that took it
  std::string stream;  // the ingest stream it covers
  // Every message of `stream` up to this sequence is in the store, none after it (read from the
  // snapshot's own writer sequences).
  uint64_t covered_sequence = 0;
  // The store's checkpoint LSN: the write-ahead log of a node that installs it starts there.
  uint64_t checkpoint_lsn = 0;
  double created_unix = 0;
  std::string subject;  // of its pieces
  uint64_t piece_bytes = 0;
  std::vector<SnapshotFile> files;

  uint64_t total_bytes() const;
  uint64_t pieces() const;  // messages on `subject`
  std::string ToJson() const;
  // InvalidArgument naming the field that is missing or wrong.
  static Result<SnapshotManifest> FromJson(std::string_view json);
};

struct SnapshotStoreOptions {
  std::string stream = "TW_SNAPSHOTS";
  std::string bucket = "tw_snapshots";
  int replicas = 3;
  uint64_t piece_bytes = 512 * 1024;  // under NATS's default max_payload (1 MiB)
  // A download waits this long for each fetch of pieces; three empty fetches in a row mean that
  // pieces are missing.
  int64_t fetch_wait_ms = 2000;
};

// The subjects of the snapshot stream.
inline constexpr const char* kSnapshotSubjects = "tw.snapshot.>";

class SnapshotStore {
 public:
  // Creates or opens the stream and the bucket. `js` and `fs` (the snapshot files' file system)
  // must outlive the store.
  static Result<std::unique_ptr<SnapshotStore>> Open(JetStream& js, FileSystem& fs,
                                                     SnapshotStoreOptions options);

  // Publishes the files of `dir` as the snapshot `manifest` describes (id, node, stream,
  // covered_sequence, checkpoint_lsn and created_unix set by the caller; the rest is filled in
  // here) and makes it the latest. AlreadyExists when a manifest covering as much or more is in
  // place (this snapshot's pieces are purged then). Returns the manifest written.
  Result<SnapshotManifest> Publish(const std::string& dir, SnapshotManifest manifest);

  // The latest manifest; NotFound when none was ever published.
  Result<SnapshotManifest> Latest();

  // Writes the snapshot's files into `dir` (created; must be empty or absent), synced, checking
  // every file's size and SHA-256: Corruption naming the file when one does not match (what was
  // written stays in `dir` for the caller to remove). Unavailable when pieces are missing (purged
  // by a newer snapshot meanwhile: read Latest() again).
  Status Download(const SnapshotManifest& manifest, const std::string& dir);

  // Removes a snapshot's pieces.
  Status Purge(const SnapshotManifest& manifest);

 private:
  SnapshotStore(JetStream& js, FileSystem& fs, SnapshotStoreOptions options,
                std::unique_ptr<KeyValue> kv)
      : js_(js), fs_(fs), options_(std::move(options)), kv_(std::move(kv)) {}
  // Compare-and-set of the manifest; AlreadyExists when one covering as much is in place.
  // `replaced` gets the manifest it replaced, if any.
  Status WriteManifest(const SnapshotManifest& manifest,
                       std::unique_ptr<SnapshotManifest>* replaced);

  JetStream& js_;
  FileSystem& fs_;
  const SnapshotStoreOptions options_;
  std::unique_ptr<KeyValue> kv_;
};

}  // namespace trainwatch::cluster
