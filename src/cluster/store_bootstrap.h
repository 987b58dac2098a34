// What a cluster node does with its data directory before its engine opens (docs/cluster.md,
// "Bounded rebuild"): a node whose store is empty, or ends before the first message the ingest
// stream still holds, installs the cluster's newest store snapshot (cluster/snapshot.h) as its
// store, so that its applier resumes after the snapshot's covered sequence and replays only the
// stream's tail. A node that cannot be made whole that way — the stream has lost messages it
// needs and no snapshot covers them — is refused with an error that says so: it never serves a
// store with a hole in it.
#pragma once

#include <cstdint>
#include <string>

#include "cluster/jetstream.h"
#include "cluster/snapshot.h"
#include "common/clock.h"
#include "common/file_system.h"
#include "common/logging.h"
#include "common/status.h"

namespace trainwatch::cluster {

struct StoreBootstrapOptions {
  std::string data_dir;  // holds store/ (RocksDB) and wal/ (the write-ahead log)
  std::string stream = "TRAINWATCH_INGEST";
  std::string writer;  // the applier's engine writer id ("cluster/<stream>")
};

struct StoreBootstrapReport {
  uint64_t applied_sequence = 0;  // where the store stands now (before the engine replays its log)
  bool installed = false;         // a snapshot was installed
  SnapshotManifest snapshot;      // the one installed
  std::string moved_aside;        // where a store that stood behind the stream was moved ("": none)
};

// Decides and installs (see the top of this file). `snapshots` may be null (no snapshot stream
// could be opened): then nothing is installed. InvalidArgument when the node cannot be made
// whole; Corruption when the snapshot's files fail their SHA-256 (nothing is installed).
Result<StoreBootstrapReport> BootstrapStore(JetStream& js, SnapshotStore* snapshots, FileSystem& fs,
                                            const StoreBootstrapOptions& options, Clock& clock,
                                            Logger& logger);

// Installs `manifest` as the store of `data_dir` (which has no store/ and no wal/ segments):
// downloads into store.snapshot-tmp/, checks every file's SHA-256 and that the copy's own writer
// sequence for `writer` is the manifest's covered sequence, writes the write-ahead log's empty
// first segment at the snapshot's checkpoint LSN, then renames the copy to store/.
Status InstallSnapshot(SnapshotStore& snapshots, FileSystem& fs, const SnapshotManifest& manifest,
                       const std::string& data_dir, const std::string& writer);

// What a store directory (a snapshot's copy) says it covers: `writer`'s sequence in its writer
// sequences (0 when absent) and its checkpoint LSN. Opens the RocksDB database there.
struct StoreMarks {
  uint64_t sequence = 0;
  uint64_t checkpoint_lsn = 0;
};
Result<StoreMarks> ReadStoreMarks(const std::string& store_dir, const std::string& writer);

// The last sequence of `writer` that the store of `data_dir` holds (its store's writer sequences
// and its write-ahead log's records together); 0 when none.
Result<uint64_t> StoredWriterSequence(FileSystem& fs, const std::string& data_dir,
                                      const std::string& writer);

}  // namespace trainwatch::cluster
