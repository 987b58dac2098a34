// BlobStore: image bytes stored once per content, and their reference counts, in the store's
// RocksDB database (docs/format/store.md):
//   "b" sha256 -> the encoded image bytes (a blob)
//   "B" sha256 -> the blob's reference count and size (present exactly while the blob is)
// It is the EntryReferences of image entries (step_entry_store.h): every batch that puts or
// deletes "i" entries also carries the reference counts it changes and the blob puts and deletes
// they imply, so the counts always equal the number of "i" entries naming each digest, whatever
// point a crash stops at.
//
// With an object store (--blob-store s3://..., docs/blob_store.md) the bytes of a blob leave "b"
// once the object store holds them (DropLocalBytes); "B" stays, and Get reads such a blob from the
// RemoteBlobs it was given.
//
// Thread-safety: reads are thread-safe; the reference updates read the counts they rewrite, so
// the image writes that call them are serialised by the caller.
#pragma once

#include <atomic>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "storage/media.h"
#include "storage/s3_remote_blobs.h"
#include "storage/step_entry_store.h"

namespace trainwatch::storage {

class StoreDb;

class BlobStore : public EntryReferences {
 public:
  // `db` must outlive this object.
  explicit BlobStore(StoreDb& db) : db_(db) {}
  BlobStore(const BlobStore&) = delete;
  BlobStore& operator=(const BlobStore&) = delete;

  // The bytes of a blob. NotFound when no entry refers to it; for a blob whose bytes moved to the
  // object store, what RemoteBlobs::ReadBlob returns (Unavailable without one).
  Result<std::string> Get(std::string_view sha256) const;
  Result<bool> Has(std::string_view sha256) const;
  // The number and total size of the stored blobs (a scan of "B", for start-up).
  Result<BlobChange> Count() const;

  // Where blobs whose bytes left the store are read; null (the default): nowhere. `remote` must
  // outlive this object.
  void SetRemote(const RemoteBlobs* remote) { remote_.store(remote); }
  // Up to `limit` blobs whose bytes are held here, (sha256, bytes), in digest order after `after`
  // ("" for the first).
  Result<std::vector<std::pair<std::string, std::string>>> LocalBlobs(std::string_view after,
                                                                      size_t limit) const;
  // Drops the bytes held here of a blob that the object store now holds (its "B" record stays).
  // Safe against a concurrent OnPut or Release of the same digest: the object store's copy of
  // content-addressed bytes is the same bytes, and objects are never deleted from it.
  Status DropLocalBytes(std::string_view sha256);

  // An image entry (`value`, an "i" value) replacing `old_value`: the new entry's blob (`payload`,
  // whose SHA-256 the entry names) is stored unless present and gains a reference; the replaced
  // entry's blob loses one and goes with its last. The same digest again changes nothing.
  Status OnPut(const std::string* old_value, std::string_view value, std::string_view payload,
               rocksdb::WriteBatch* batch, BlobChange* change) override;
  // Deleted image entries release their blobs' references.
  Status OnDelete(const std::vector<std::string>& values, rocksdb::WriteBatch* batch,
                  BlobChange* change) override;

 private:
  // Adds the batch operations that drop `n` references to a blob (and the blob with the last).
  Status Release(std::string_view sha256, uint64_t n, rocksdb::WriteBatch* batch,
                 BlobChange* change);

  StoreDb& db_;
  std::atomic<const RemoteBlobs*> remote_{nullptr};
};

}  // namespace trainwatch::storage
