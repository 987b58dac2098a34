#include "spool.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include <zstd.h>

#include "common/crc32c.h"

namespace trainwatch::sdk {
namespace {

constexpr std::string_view kMagic = "TWSPOOL1";
constexpr size_t kHeaderBytes = 8 + 4 + 4 + 4;
constexpr int kZstdLevel = 1;
constexpr uint64_t kMaxPayload = 1ull << 30;

template <typename T>
void Put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof v);
}

template <typename T>
T Get(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

bool ParseSegmentName(const std::string& name, uint64_t* id) {
  if (name.size() != 24 || !name.ends_with(".seg")) return false;
  uint64_t v = 0;
  for (size_t i = 0; i < 20; ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
    v = v * 10 + static_cast<uint64_t>(name[i] - '0');
  }
  *id = v;
  return true;
}

}  // namespace

Result<std::vector<SpooledBatch>> DecodeSegment(std::string_view data) {
  if (data.size() < kMagic.size() || data.substr(0, kMagic.size()) != kMagic) {
    return Status::Corruption("not a trainwatch spool segment (bad magic)");
  }
  std::vector<SpooledBatch> out;
  size_t pos = kMagic.size();
  while (pos + kHeaderBytes <= data.size()) {
    const char* h = data.data() + pos;
    SpooledBatch batch;
    batch.sequence = Get<uint64_t>(h);
    batch.points = Get<uint32_t>(h + 8);
    uint32_t length = Get<uint32_t>(h + 12);
    uint32_t crc = Get<uint32_t>(h + 16);
    if (pos + kHeaderBytes + length > data.size()) break;  // torn tail
    std::string_view payload = data.substr(pos + kHeaderBytes, length);
    if (crc32c::Value(payload) != crc) break;
    unsigned long long size = ZSTD_getFrameContentSize(payload.data(), payload.size());
    if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN || size > kMaxPayload)
      break;
    batch.bytes.resize(size);
    size_t n = ZSTD_decompress(batch.bytes.data(), size, payload.data(), payload.size());
    if (ZSTD_isError(n) || n != size) break;
    out.push_back(std::move(batch));
    pos += kHeaderBytes + length;
  }
  return out;
}

Spool::Spool(FileSystem& fs, std::string dir, SpoolOptions options)
    : fs_(fs), dir_(std::move(dir)), options_(options) {}

Spool::~Spool() { (void)Close(); }

Result<std::unique_ptr<Spool>> Spool::Open(FileSystem& fs, std::string dir, SpoolOptions options) {
  TW_RETURN_IF_ERROR(fs.CreateDirs(dir).WithContext("creating spool directory " + dir));
  std::unique_ptr<Spool> spool(new Spool(fs, std::move(dir), options));
  TW_ASSIGN_OR_RETURN(std::vector<std::string> names, fs.ListDir(spool->dir_));
  {
    MutexLock lock(spool->mu_);  // not shared yet: for the analysis
    for (const std::string& name : names) {
      uint64_t id;
      if (!ParseSegmentName(name, &id)) continue;
      TW_ASSIGN_OR_RETURN(uint64_t size, fs.FileSize(spool->PathOf(id)));
      Segment& s = spool->segments_[id];
      s.bytes = size;
      spool->total_bytes_ += size;
    }
  }
  return spool;
}

std::string Spool::PathOf(uint64_t segment) const {
  char name[32];
  std::snprintf(name, sizeof name, "%020" PRIu64 ".seg", segment);
  return dir_ + "/" + name;
}

std::string Spool::EncodeRecord(const SpooledBatch& batch) {
  std::string compressed(ZSTD_compressBound(batch.bytes.size()), '\0');
  size_t n = ZSTD_compress(compressed.data(), compressed.size(), batch.bytes.data(),
                           batch.bytes.size(), kZstdLevel);
  compressed.resize(ZSTD_isError(n) ? 0 : n);
  std::string record;
  record.reserve(kHeaderBytes + compressed.size());
  Put<uint64_t>(&record, batch.sequence);
  Put<uint32_t>(&record, batch.points);
  Put<uint32_t>(&record, static_cast<uint32_t>(compressed.size()));
  Put<uint32_t>(&record, crc32c::Value(compressed));
  record += compressed;
  return record;
}

Status Spool::CloseActive() {
  if (!active_) return Status::Ok();
  Status s = active_->Sync();
  Status c = active_->Close();
  active_.reset();
  TW_RETURN_IF_ERROR(s.WithContext("syncing spool segment " + PathOf(active_id_)));
  return c;
}

Status Spool::MakeRoom(uint64_t incoming, uint64_t* dropped_points) {
  while (total_bytes_ + incoming > options_.max_bytes) {
    auto victim = segments_.end();
    for (auto it = segments_.begin(); it != segments_.end(); ++it) {
      if (!it->second.loaded && !(active_ && it->first == active_id_)) {
        victim = it;
        break;
      }
    }
    if (victim == segments_.end() && active_ && !segments_[active_id_].loaded) {
      // Only the active segment is left: close it so that it can go too.
      TW_RETURN_IF_ERROR(CloseActive());
      victim = segments_.find(active_id_);
    }
    if (victim == segments_.end() || !options_.drop_oldest_when_full) {
      return Status::ResourceExhausted("the spool " + dir_ + " is full (" +
                                       std::to_string(options_.max_bytes) + " bytes)");
    }
    uint64_t points = victim->second.points;
    if (points == 0) {  // a segment found at Open: count what it held
      auto data = fs_.ReadFile(PathOf(victim->first));
      if (data.ok()) {
        auto batches = DecodeSegment(*data);
        if (batches.ok()) {
          for (const SpooledBatch& b : *batches) points += b.points;
        }
      }
    }
    TW_RETURN_IF_ERROR(fs_.RemoveFile(PathOf(victim->first)));
    total_bytes_ -= victim->second.bytes;
    *dropped_points += points;
    segments_.erase(victim);
  }
  return Status::Ok();
}

Status Spool::Append(const SpooledBatch& batch, uint64_t* dropped_points) {
  std::string record = EncodeRecord(batch);
  MutexLock lock(mu_);
  if (!options_.drop_oldest_when_full && total_bytes_ + record.size() > options_.max_bytes) {
    return Status::ResourceExhausted("the spool " + dir_ + " is full (" +
                                     std::to_string(options_.max_bytes) + " bytes)");
  }
  TW_RETURN_IF_ERROR(MakeRoom(record.size() + kMagic.size(), dropped_points));
  if (active_ && (active_->Size() >= options_.segment_bytes || segments_[active_id_].loaded)) {
    TW_RETURN_IF_ERROR(CloseActive());
  }
  if (!active_) {
    TW_ASSIGN_OR_RETURN(active_, fs_.OpenAppendable(PathOf(batch.sequence)));
    active_id_ = batch.sequence;
    if (Status magic = active_->Append(kMagic); !magic.ok()) {
      // A full disk may have taken part of the magic: the file holds no batch, so it goes.
      active_.reset();
      (void)fs_.RemoveFile(PathOf(batch.sequence));
      return magic;
    }
    segments_[active_id_].bytes = kMagic.size();
    total_bytes_ += kMagic.size();
  }
  if (Status s = active_->Append(record); !s.ok()) {
    // A full disk may have taken part of the record, which then ends this segment (a torn record
    // ends a segment when read): the next batch starts a segment of its own.
    (void)active_->Close();
    active_.reset();
    return s.WithContext("appending to spool segment " + PathOf(active_id_));
  }
  Segment& s = segments_[active_id_];
  s.bytes += record.size();
  s.points += batch.points;
  total_bytes_ += record.size();
  return Status::Ok();
}

Status Spool::AppendSegment(const std::vector<SpooledBatch>& batches) {
  if (batches.empty()) return Status::Ok();
  std::string data(kMagic);
  uint64_t points = 0;
  for (const SpooledBatch& b : batches) {
    data += EncodeRecord(b);
    points += b.points;
  }
  MutexLock lock(mu_);
  uint64_t id = batches.front().sequence;
  TW_RETURN_IF_ERROR(WriteFileAtomic(fs_, PathOf(id), data));
  Segment& s = segments_[id];
  s.bytes = data.size();
  s.points = points;
  total_bytes_ += data.size();
  return Status::Ok();
}

bool Spool::HasUnloaded() const {
  MutexLock lock(mu_);
  for (const auto& [id, s] : segments_) {
    if (!s.loaded) return true;
  }
  return false;
}

Result<std::pair<uint64_t, std::vector<SpooledBatch>>> Spool::LoadOldest() {
  MutexLock lock(mu_);
  for (auto& [id, s] : segments_) {
    if (s.loaded) continue;
    if (active_ && id == active_id_) TW_RETURN_IF_ERROR(CloseActive());
    TW_ASSIGN_OR_RETURN(std::string data, fs_.ReadFile(PathOf(id)));
    auto batches = DecodeSegment(data);
    if (!batches.ok()) return batches.status().WithContext("reading spool segment " + PathOf(id));
    s.loaded = true;
    return std::make_pair(id, std::move(*batches));
  }
  return Status::NotFound("no unloaded spool segment");
}

Status Spool::Release(uint64_t segment) {
  MutexLock lock(mu_);
  auto it = segments_.find(segment);
  if (it == segments_.end()) return Status::Ok();
  if (active_ && segment == active_id_) TW_RETURN_IF_ERROR(CloseActive());
  TW_RETURN_IF_ERROR(fs_.RemoveFile(PathOf(segment)));
  total_bytes_ -= it->second.bytes;
  segments_.erase(it);
  return Status::Ok();
}

void Spool::UnloadAll() {
  MutexLock lock(mu_);
  for (auto& [id, s] : segments_) s.loaded = false;
}

uint64_t Spool::bytes() const {
  MutexLock lock(mu_);
  return total_bytes_;
}

size_t Spool::segment_count() const {
  MutexLock lock(mu_);
  return segments_.size();
}

Status Spool::Close() {
  MutexLock lock(mu_);
  Status s = CloseActive();
  if (segments_.empty()) (void)fs_.RemoveDir(dir_);
  return s;
}

}  // namespace trainwatch::sdk
