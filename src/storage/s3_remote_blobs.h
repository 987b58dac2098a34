// RemoteBlobs: where BlobStore finds the bytes of a blob it no longer holds itself, once they were
// moved to an object store (--blob-store s3://..., src/blob/, docs/blob_store.md). The store keeps
// every blob's reference record ("B") either way; only the bytes ("b") leave.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace trainwatch::storage {

class RemoteBlobs {
 public:
  virtual ~RemoteBlobs() = default;
  // The bytes of the blob with this (raw, 32-byte) SHA-256; Unavailable when the object store
  // cannot be reached. Thread-safe.
  virtual Result<std::string> ReadBlob(std::string_view sha256) const = 0;
};

}  // namespace trainwatch::storage
