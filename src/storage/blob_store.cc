#include "storage/blob_store.h"

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <map>
#include <memory>

#include "storage/binary_io.h"
#include "storage/store_internal.h"

namespace trainwatch::storage {
namespace {

using namespace store_internal;

constexpr uint8_t kRefsVersion = 1;

std::string BlobKeyOf(char prefix, std::string_view sha256) {
  std::string k(1, prefix);
  k += sha256;
  return k;
}

// A blob's "B" record.
struct BlobRefs {
  uint64_t refs = 0;  // 0: no such blob
  uint64_t size = 0;
};

std::string EncodeRefs(uint64_t refs, uint64_t size) {
  std::string out(1, static_cast<char>(kRefsVersion));
  PutFixed64(&out, refs);
  PutFixed64(&out, size);
  return out;
}

bool DecodeRefs(std::string_view data, BlobRefs* r) {
  ByteReader in(data);
  uint8_t version = 0;
  return in.GetByte(&version) && version == kRefsVersion && in.GetFixed64(&r->refs) &&
         in.GetFixed64(&r->size) && in.empty() && r->refs > 0;
}

Result<BlobRefs> GetRefs(const StoreDb& db, std::string_view sha256) {
  std::string value;
  bool found;
  TW_RETURN_IF_ERROR(
      GetValue(db, BlobKeyOf('B', sha256), &value, &found, "reading a blob's references"));
  BlobRefs refs;
  if (found && !DecodeRefs(value, &refs)) return Status::Corruption("bad blob reference record");
  return refs;
}

}  // namespace

Status BlobStore::Release(std::string_view sha256, uint64_t n, rocksdb::WriteBatch* batch,
                          BlobChange* change) {
  TW_ASSIGN_OR_RETURN(BlobRefs refs, GetRefs(db_, sha256));
  if (refs.refs > n) {
    batch->Put(BlobKeyOf('B', sha256), EncodeRefs(refs.refs - n, refs.size));
    return Status::Ok();
  }
  batch->Delete(BlobKeyOf('B', sha256));
  batch->Delete(BlobKeyOf('b', sha256));
  if (refs.refs > 0) {
    change->blobs -= 1;
    change->bytes -= static_cast<int64_t>(refs.size);
  }
  return Status::Ok();
}

Status BlobStore::OnPut(const std::string* old_value, std::string_view value,
                        std::string_view payload, rocksdb::WriteBatch* batch, BlobChange* change) {
  ImageEntry entry, old;
  if (!DecodeImageEntry(value, &entry)) return Status::InvalidArgument("not an image entry");
  if (old_value != nullptr && !DecodeImageEntry(*old_value, &old)) {
    return Status::Corruption("bad image entry");
  }
  if (old_value != nullptr && old.sha256 == entry.sha256) return Status::Ok();
  TW_ASSIGN_OR_RETURN(BlobRefs refs, GetRefs(db_, entry.sha256));
  if (refs.refs == 0) {
    batch->Put(BlobKeyOf('b', entry.sha256), rocksdb::Slice(payload.data(), payload.size()));
    refs.size = payload.size();
    change->blobs += 1;
    change->bytes += static_cast<int64_t>(payload.size());
  }
  batch->Put(BlobKeyOf('B', entry.sha256), EncodeRefs(refs.refs + 1, refs.size));
  if (old_value != nullptr) return Release(old.sha256, 1, batch, change);
  return Status::Ok();
}

Status BlobStore::OnDelete(const std::vector<std::string>& values, rocksdb::WriteBatch* batch,
                           BlobChange* change) {
  std::map<std::string, uint64_t> released;  // sha256 -> references dropped
  for (const std::string& value : values) {
    ImageEntry entry;
    if (!DecodeImageEntry(value, &entry)) return Status::Corruption("bad image entry");
    ++released[entry.sha256];
  }
  for (const auto& [sha256, n] : released) TW_RETURN_IF_ERROR(Release(sha256, n, batch, change));
  return Status::Ok();
}

Result<std::string> BlobStore::Get(std::string_view sha256) const {
  std::string value;
  bool found;
  TW_RETURN_IF_ERROR(GetValue(db_, BlobKeyOf('b', sha256), &value, &found, "reading a blob"));
  if (found) return value;
  TW_ASSIGN_OR_RETURN(BlobRefs refs, GetRefs(db_, sha256));
  if (refs.refs == 0) return Status::NotFound("no stored image has this SHA-256");
  const RemoteBlobs* remote = remote_.load();
  if (remote == nullptr) {
    return Status::Unavailable(
        "this image's bytes were moved to an object store: start the server with the same "
        "--blob-store s3://... to read them");
  }
  return remote->ReadBlob(sha256);
}

Result<std::vector<std::pair<std::string, std::string>>> BlobStore::LocalBlobs(
    std::string_view after, size_t limit) const {
  std::vector<std::pair<std::string, std::string>> out;
  const std::string start = BlobKeyOf('b', after);
  TW_RETURN_IF_ERROR(db_.Scan(
      start,
      [&](std::string_view key, std::string_view value) {
        if (out.size() >= limit || key.empty() || key[0] != 'b') return false;
        if (after.empty() || key != start) out.emplace_back(key.substr(1), value);
        return true;
      },
      "listing the blobs held in the store"));
  return out;
}

Status BlobStore::DropLocalBytes(std::string_view sha256) {
  return db_.Delete(BlobKeyOf('b', sha256), "dropping a blob's bytes held in the store");
}

Result<bool> BlobStore::Has(std::string_view sha256) const {
  TW_ASSIGN_OR_RETURN(BlobRefs refs, GetRefs(db_, sha256));
  return refs.refs > 0;
}

Result<BlobChange> BlobStore::Count() const {
  BlobChange total;
  TW_RETURN_IF_ERROR(ForEachPrefixed(db_, "B", [&](std::string_view, std::string_view value) {
    BlobRefs refs;
    if (!DecodeRefs(value, &refs)) return Status::Corruption("bad blob reference record");
    total.blobs += 1;
    total.bytes += static_cast<int64_t>(refs.size);
    return Status::Ok();
  }));
  return total;
}

}  // namespace trainwatch::storage
