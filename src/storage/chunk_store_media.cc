// ChunkStore: images, their blobs, and texts (docs/format/store.md, "i", "I", "b", "B", "t", "T").
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <limits>
#include <map>

#include "storage/binary_io.h"
#include "storage/chunk_store.h"
#include "storage/store_internal.h"

namespace trainwatch::storage {
namespace {

using namespace store_internal;

constexpr uint8_t kEntryVersion = 1;

// The start of a tag's entry keys: prefix project "\0" run "\0" tag "\0".
std::string EntryPrefixOf(char prefix, const SeriesKey& tag) {
  std::string k = NameKeyOf(prefix, tag);
  k.push_back('\0');
  return k;
}

// Steps are never negative: big-endian, they sort numerically.
std::string TextKeyOf(const SeriesKey& tag, int64_t step) {
  std::string k = EntryPrefixOf('t', tag);
  PutBigEndian64(&k, static_cast<uint64_t>(step));
  return k;
}

std::string ImageKeyOf(const SeriesKey& tag, int64_t step, uint32_t index) {
  std::string k = EntryPrefixOf('i', tag);
  PutBigEndian64(&k, static_cast<uint64_t>(step));
  PutBigEndian32(&k, index);
  return k;
}

std::string BlobKeyOf(char prefix, std::string_view sha256) {
  std::string k(1, prefix);
  k += sha256;
  return k;
}

std::string EncodeImage(const ImageEntry& e) {
  std::string out(1, static_cast<char>(kEntryVersion));
  PutDouble(&out, e.time);
  out += e.sha256;
  out.push_back(static_cast<char>(e.format));
  PutFixed32(&out, e.width);
  PutFixed32(&out, e.height);
  PutFixed64(&out, e.size);
  PutLengthPrefixed(&out, e.caption);
  return out;
}

bool DecodeImage(std::string_view data, ImageEntry* e) {
  ByteReader in(data);
  uint8_t version = 0, format = 0;
  if (!in.GetByte(&version) || version != kEntryVersion || !in.GetDouble(&e->time)) return false;
  e->sha256.resize(kSha256Bytes);
  for (char& c : e->sha256) {
    uint8_t byte;
    if (!in.GetByte(&byte)) return false;
    c = static_cast<char>(byte);
  }
  if (!in.GetByte(&format) || format > static_cast<uint8_t>(ImageFormat::kWebp)) return false;
  e->format = static_cast<ImageFormat>(format);
  return in.GetFixed32(&e->width) && in.GetFixed32(&e->height) && in.GetFixed64(&e->size) &&
         in.GetLengthPrefixed(&e->caption) && in.empty();
}

std::string EncodeText(const TextEntry& e) {
  std::string out(1, static_cast<char>(kEntryVersion));
  PutDouble(&out, e.time);
  out += e.value;
  return out;
}

bool DecodeText(std::string_view data, TextEntry* e) {
  ByteReader in(data.substr(0, 9));
  uint8_t version = 0;
  if (!in.GetByte(&version) || version != kEntryVersion || !in.GetDouble(&e->time)) return false;
  e->value.assign(data.substr(9));
  return true;
}

// A blob's "B" record.
struct BlobRefs {
  uint64_t refs = 0;  // 0: no such blob
  uint64_t size = 0;
};

std::string EncodeBlobRefs(const BlobRefs& r) {
  std::string out(1, static_cast<char>(kEntryVersion));
  PutFixed64(&out, r.refs);
  PutFixed64(&out, r.size);
  return out;
}

bool DecodeBlobRefs(std::string_view data, BlobRefs* r) {
  ByteReader in(data);
  uint8_t version = 0;
  return in.GetByte(&version) && version == kEntryVersion && in.GetFixed64(&r->refs) &&
         in.GetFixed64(&r->size) && in.empty() && r->refs > 0;
}

void Include(TagSummary* s, int64_t step, double time) {
  s->first_step = s->count == 0 ? step : std::min(s->first_step, step);
  s->last_step = s->count == 0 ? step : std::max(s->last_step, step);
  ++s->count;
  s->min_time = std::min(s->min_time, time);
}

// Calls fn(step, key suffix after the step, value) for every entry of a tag from `start` on, while
// the step is <= to and fn returns true.
Status ScanEntries(rocksdb::DB& db, const std::string& prefix, const std::string& start, int64_t to,
                   size_t suffix_bytes,
                   const std::function<bool(int64_t, std::string_view, std::string_view)>& fn) {
  std::unique_ptr<rocksdb::Iterator> it(db.NewIterator(rocksdb::ReadOptions()));
  for (it->Seek(start); it->Valid(); it->Next()) {
    std::string_view k(it->key().data(), it->key().size());
    if (!k.starts_with(prefix)) break;
    if (k.size() != prefix.size() + 8 + suffix_bytes) {
      return Status::Corruption("bad entry key under '" + prefix.substr(0, 1) + "'");
    }
    const auto step = static_cast<int64_t>(DecodeBigEndian64(k.data() + prefix.size()));
    if (step > to) break;
    if (!fn(step, k.substr(prefix.size() + 8),
            std::string_view(it->value().data(), it->value().size())))
      break;
  }
  return FromRocks(it->status(), "reading entries");
}

// Reads a value; *found tells whether the key exists.
Status GetValue(rocksdb::DB& db, const std::string& key, std::string* value, bool* found,
                std::string_view what) {
  rocksdb::Status s = db.Get(rocksdb::ReadOptions(), key, value);
  *found = !s.IsNotFound();
  return s.IsNotFound() ? Status::Ok() : FromRocks(s, what);
}

Result<TagSummary> GetSummary(rocksdb::DB& db, char prefix, const SeriesKey& tag) {
  std::string value;
  bool found;
  TW_RETURN_IF_ERROR(GetValue(db, NameKeyOf(prefix, tag), &value, &found, "reading a tag summary"));
  TagSummary summary;
  if (found && !DecodeNameSummary(value, &summary)) {
    return Status::Corruption("bad '" + std::string(1, prefix) + "' summary of " + tag.run + "/" +
                              tag.metric);
  }
  return summary;
}

Result<BlobRefs> GetBlobRefs(rocksdb::DB& db, std::string_view sha256) {
  std::string value;
  bool found;
  TW_RETURN_IF_ERROR(
      GetValue(db, BlobKeyOf('B', sha256), &value, &found, "reading a blob's references"));
  BlobRefs refs;
  if (found && !DecodeBlobRefs(value, &refs)) {
    return Status::Corruption("bad blob reference record");
  }
  return refs;
}

// Adds the batch operations that drop `n` references to a blob (and the blob with the last).
Status ReleaseBlob(rocksdb::DB& db, std::string_view sha256, uint64_t n, rocksdb::WriteBatch* batch,
                   BlobChange* change) {
  TW_ASSIGN_OR_RETURN(BlobRefs refs, GetBlobRefs(db, sha256));
  if (refs.refs > n) {
    refs.refs -= n;
    batch->Put(BlobKeyOf('B', sha256), EncodeBlobRefs(refs));
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

}  // namespace

Result<TagSummary> ChunkStore::PutImage(const SeriesKey& tag, const ImageEntry& entry,
                                        std::string_view bytes, BlobChange* change) {
  const std::string key = ImageKeyOf(tag, entry.step, entry.index);
  std::string value;
  bool replacing;
  TW_RETURN_IF_ERROR(GetValue(*db_, key, &value, &replacing, "reading an image entry"));
  ImageEntry old;
  if (replacing && !DecodeImage(value, &old)) {
    return Status::Corruption("bad image entry of " + tag.metric);
  }
  TW_ASSIGN_OR_RETURN(TagSummary summary, GetSummary(*db_, 'I', tag));
  rocksdb::WriteBatch batch;
  if (!replacing || old.sha256 != entry.sha256) {
    TW_ASSIGN_OR_RETURN(BlobRefs refs, GetBlobRefs(*db_, entry.sha256));
    if (refs.refs == 0) {
      batch.Put(BlobKeyOf('b', entry.sha256), rocksdb::Slice(bytes.data(), bytes.size()));
      refs.size = bytes.size();
      change->blobs += 1;
      change->bytes += static_cast<int64_t>(bytes.size());
    }
    ++refs.refs;
    batch.Put(BlobKeyOf('B', entry.sha256), EncodeBlobRefs(refs));
    if (replacing) TW_RETURN_IF_ERROR(ReleaseBlob(*db_, old.sha256, 1, &batch, change));
  }
  batch.Put(key, EncodeImage(entry));
  if (replacing) {
    summary.min_time = std::min(summary.min_time, entry.time);
  } else {
    Include(&summary, entry.step, entry.time);
  }
  batch.Put(NameKeyOf('I', tag), EncodeNameSummary(summary));
  TW_RETURN_IF_ERROR(FromRocks(db_->Write(rocksdb::WriteOptions(), &batch), "writing an image"));
  return summary;
}

Result<uint64_t> ChunkStore::DeleteImagesOlderThan(const SeriesKey& tag, double cutoff,
                                                   TagSummary* kept, BlobChange* change) {
  const std::string prefix = EntryPrefixOf('i', tag);
  rocksdb::WriteBatch batch;
  std::map<std::string, uint64_t> released;  // sha256 -> references dropped
  uint64_t deleted = 0;
  *kept = TagSummary{};
  bool bad = false;
  TW_RETURN_IF_ERROR(ScanEntries(*db_, prefix, prefix, std::numeric_limits<int64_t>::max(), 4,
                                 [&](int64_t step, std::string_view index, std::string_view value) {
                                   ImageEntry e;
                                   if (!DecodeImage(value, &e)) {
                                     bad = true;
                                     return false;
                                   }
                                   if (e.time < cutoff) {
                                     std::string key = prefix;
                                     PutBigEndian64(&key, static_cast<uint64_t>(step));
                                     key += index;
                                     batch.Delete(key);
                                     ++released[e.sha256];
                                     ++deleted;
                                   } else {
                                     Include(kept, step, e.time);
                                   }
                                   return true;
                                 }));
  if (bad) return Status::Corruption("bad image entry of " + tag.run + "/" + tag.metric);
  for (const auto& [sha256, n] : released)
    TW_RETURN_IF_ERROR(ReleaseBlob(*db_, sha256, n, &batch, change));
  if (kept->count == 0) {
    batch.Delete(NameKeyOf('I', tag));
  } else {
    batch.Put(NameKeyOf('I', tag), EncodeNameSummary(*kept));
  }
  TW_RETURN_IF_ERROR(FromRocks(db_->Write(rocksdb::WriteOptions(), &batch), "deleting images"));
  return deleted;
}

Status ChunkStore::ScanImages(const SeriesKey& tag, int64_t from, int64_t to,
                              const std::function<bool(ImageEntry)>& fn) const {
  if (to < from || to < 0) return Status::Ok();
  const std::string prefix = EntryPrefixOf('i', tag);
  bool bad = false;
  TW_RETURN_IF_ERROR(ScanEntries(*db_, prefix, ImageKeyOf(tag, std::max<int64_t>(from, 0), 0), to,
                                 4,
                                 [&](int64_t step, std::string_view index, std::string_view value) {
                                   ImageEntry e;
                                   if (!DecodeImage(value, &e)) {
                                     bad = true;
                                     return false;
                                   }
                                   e.name = tag.metric;
                                   e.step = step;
                                   e.index = DecodeBigEndian32(index.data());
                                   return fn(std::move(e));
                                 }));
  return bad ? Status::Corruption("bad image entry of " + tag.run + "/" + tag.metric)
             : Status::Ok();
}

Result<std::string> ChunkStore::GetBlob(std::string_view sha256) const {
  std::string value;
  bool found;
  TW_RETURN_IF_ERROR(GetValue(*db_, BlobKeyOf('b', sha256), &value, &found, "reading a blob"));
  if (!found) return Status::NotFound("no stored image has this SHA-256");
  return value;
}

Result<bool> ChunkStore::HasBlob(std::string_view sha256) const {
  TW_ASSIGN_OR_RETURN(BlobRefs refs, GetBlobRefs(*db_, sha256));
  return refs.refs > 0;
}

Result<BlobChange> ChunkStore::CountBlobs() const {
  BlobChange total;
  TW_RETURN_IF_ERROR(ForEachPrefixed(*db_, "B", [&](std::string_view, std::string_view value) {
    BlobRefs refs;
    if (!DecodeBlobRefs(value, &refs)) return Status::Corruption("bad blob reference record");
    total.blobs += 1;
    total.bytes += static_cast<int64_t>(refs.size);
    return Status::Ok();
  }));
  return total;
}

Result<TagSummary> ChunkStore::PutText(const SeriesKey& tag, const TextEntry& entry) {
  const std::string key = TextKeyOf(tag, entry.step);
  std::string old;
  bool replacing;
  TW_RETURN_IF_ERROR(GetValue(*db_, key, &old, &replacing, "reading a text"));
  TW_ASSIGN_OR_RETURN(TagSummary summary, GetSummary(*db_, 'T', tag));
  if (replacing) {
    summary.min_time = std::min(summary.min_time, entry.time);
  } else {
    Include(&summary, entry.step, entry.time);
  }
  rocksdb::WriteBatch batch;
  batch.Put(key, EncodeText(entry));
  batch.Put(NameKeyOf('T', tag), EncodeNameSummary(summary));
  TW_RETURN_IF_ERROR(FromRocks(db_->Write(rocksdb::WriteOptions(), &batch), "writing a text"));
  return summary;
}

Result<uint64_t> ChunkStore::DeleteTextsOlderThan(const SeriesKey& tag, double cutoff,
                                                  TagSummary* kept) {
  const std::string prefix = EntryPrefixOf('t', tag);
  rocksdb::WriteBatch batch;
  uint64_t deleted = 0;
  *kept = TagSummary{};
  bool bad = false;
  TW_RETURN_IF_ERROR(ScanEntries(*db_, prefix, prefix, std::numeric_limits<int64_t>::max(), 0,
                                 [&](int64_t step, std::string_view, std::string_view value) {
                                   TextEntry e;
                                   if (!DecodeText(value, &e)) {
                                     bad = true;
                                     return false;
                                   }
                                   if (e.time < cutoff) {
                                     batch.Delete(TextKeyOf(tag, step));
                                     ++deleted;
                                   } else {
                                     Include(kept, step, e.time);
                                   }
                                   return true;
                                 }));
  if (bad) return Status::Corruption("bad text entry of " + tag.run + "/" + tag.metric);
  if (kept->count == 0) {
    batch.Delete(NameKeyOf('T', tag));
  } else {
    batch.Put(NameKeyOf('T', tag), EncodeNameSummary(*kept));
  }
  TW_RETURN_IF_ERROR(FromRocks(db_->Write(rocksdb::WriteOptions(), &batch), "deleting texts"));
  return deleted;
}

Status ChunkStore::ScanTexts(const SeriesKey& tag, int64_t from, int64_t to,
                             const std::function<bool(TextEntry)>& fn) const {
  if (to < from || to < 0) return Status::Ok();
  const std::string prefix = EntryPrefixOf('t', tag);
  bool bad = false;
  TW_RETURN_IF_ERROR(ScanEntries(*db_, prefix, TextKeyOf(tag, std::max<int64_t>(from, 0)), to, 0,
                                 [&](int64_t step, std::string_view, std::string_view value) {
                                   TextEntry e;
                                   if (!DecodeText(value, &e)) {
                                     bad = true;
                                     return false;
                                   }
                                   e.name = tag.metric;
                                   e.step = step;
                                   return fn(std::move(e));
                                 }));
  return bad ? Status::Corruption("bad text entry of " + tag.run + "/" + tag.metric) : Status::Ok();
}

Status ChunkStore::ForEachImageTag(const std::function<Status(SeriesKey, TagSummary)>& fn) const {
  return ForEachNameSummary(*db_, 'I', fn);
}

Status ChunkStore::ForEachTextTag(const std::function<Status(SeriesKey, TagSummary)>& fn) const {
  return ForEachNameSummary(*db_, 'T', fn);
}

}  // namespace trainwatch::storage
