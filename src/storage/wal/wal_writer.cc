#include "storage/wal/wal_writer.h"

#include <cassert>
#include <utility>

#include "storage/wal/wal_format.h"

namespace trainwatch::storage::wal {
namespace {

// A buffer that grew past this for one large group is released rather than kept for the next.
// Above WalOptions::max_group_bytes' default, so that ordinary groups reuse the buffer.
constexpr size_t kMaxRetainedBuffer = 16 << 20;

}  // namespace

void EncodeSegmentHeader(uint64_t first_lsn, std::string* dst) {
  const size_t start = dst->size();
  dst->append(kSegmentMagic);
  PutFixed32(dst, kFormatVersion);
  PutFixed64(dst, first_lsn);
  PutFixed32(dst, MaskCrc(crc32c::Value(dst->data() + start, dst->size() - start)));
}

void EncodeRecord(uint64_t lsn, std::string_view payload, std::string* dst) {
  assert(payload.size() <= kMaxRecordBytes);
  PutFixed32(dst, static_cast<uint32_t>(payload.size()));
  PutFixed32(dst, MaskCrc(RecordCrc(lsn, payload)));
  PutFixed64(dst, lsn);
  dst->append(payload);
}

Result<std::unique_ptr<SegmentWriter>> SegmentWriter::Create(FileSystem& fs, std::string path,
                                                             uint64_t first_lsn) {
  TW_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, fs.OpenAppendable(path));
  if (file->Size() != 0) {
    (void)file->Close();
    return Status::Internal("new WAL segment " + path + " already holds " +
                            std::to_string(file->Size()) + " bytes");
  }
  return std::unique_ptr<SegmentWriter>(
      new SegmentWriter(std::move(path), std::move(file), first_lsn));
}

SegmentWriter::SegmentWriter(std::string path, std::unique_ptr<WritableFile> file,
                             uint64_t first_lsn)
    : path_(std::move(path)), file_(std::move(file)), first_lsn_(first_lsn), next_lsn_(first_lsn) {
  EncodeSegmentHeader(first_lsn, &buffer_);
}

SegmentWriter::~SegmentWriter() {
  if (file_ != nullptr) (void)file_->Close();
}

void SegmentWriter::Add(uint64_t lsn, std::string_view payload) {
  assert(lsn == next_lsn_);
  EncodeRecord(lsn, payload, &buffer_);
  next_lsn_ = lsn + 1;
}

Status SegmentWriter::Flush() {
  if (!error_.ok()) return error_;
  if (file_ == nullptr) return Status::Internal("WAL segment " + path_ + " is closed");
  if (buffer_.empty()) return Status::Ok();
  Status s = file_->Append(buffer_);
  if (!s.ok()) {
    error_ = s.WithContext("writing WAL segment " + path_);
    return error_;
  }
  flushed_ += buffer_.size();
  if (buffer_.capacity() > kMaxRetainedBuffer) {
    std::string().swap(buffer_);
  } else {
    buffer_.clear();
  }
  return Status::Ok();
}

Status SegmentWriter::Sync() {
  TW_RETURN_IF_ERROR(Flush());
  Status s = file_->Sync();
  if (!s.ok()) error_ = s.WithContext("syncing WAL segment " + path_);
  return error_;
}

Status SegmentWriter::Close() {
  if (file_ == nullptr) return error_;
  Status s = Flush();
  Status close = file_->Close();
  file_.reset();
  if (s.ok() && !close.ok()) error_ = close.WithContext("closing WAL segment " + path_);
  return s.ok() ? error_ : s;
}

}  // namespace trainwatch::storage::wal
