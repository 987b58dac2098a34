#include "tfevents/event_file_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace trainwatch::tfevents {

Result<std::unique_ptr<EventFileReader>> EventFileReader::Open(const std::string& path,
                                                               uint64_t start_offset,
                                                               size_t chunk_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IoErrorFromErrno("opening " + path, errno);
  return std::unique_ptr<EventFileReader>(new EventFileReader(path, fd, start_offset, chunk_bytes));
}

EventFileReader::EventFileReader(std::string path, int fd, uint64_t start_offset,
                                 size_t chunk_bytes)
    : path_(std::move(path)),
      fd_(fd),
      chunk_bytes_(std::max<size_t>(chunk_bytes, 4096)),
      buffer_offset_(start_offset) {}

EventFileReader::~EventFileReader() { ::close(fd_); }

Result<size_t> EventFileReader::Fill() {
  // Drop the consumed prefix so the buffer holds at most one chunk plus a pending record.
  if (cursor_ > 0) {
    std::memmove(buffer_.get(), buffer_.get() + cursor_, size_ - cursor_);
    size_ -= cursor_;
    buffer_offset_ += cursor_;
    cursor_ = 0;
  }
  size_t want = chunk_bytes_;
  if (needed_ > size_) want = std::max<size_t>(want, needed_ - size_);
  // Never allocate beyond what the file holds: a damaged length may promise a huge record.
  struct stat st;
  if (::fstat(fd_, &st) == 0) {
    const uint64_t end = buffer_offset_ + size_;
    const uint64_t available =
        static_cast<uint64_t>(st.st_size) > end ? static_cast<uint64_t>(st.st_size) - end : 0;
    want = static_cast<size_t>(std::min<uint64_t>(want, available));
    if (want == 0) {
      if (size_ == 0) {
        buffer_.reset();
        capacity_ = 0;
      }
      return size_t{0};
    }
  }
  if (size_ + want > capacity_) {
    auto bigger = std::make_unique_for_overwrite<char[]>(size_ + want);
    if (size_ > 0) std::memcpy(bigger.get(), buffer_.get(), size_);
    buffer_ = std::move(bigger);
    capacity_ = size_ + want;
  }
  size_t got = 0;
  while (got < want) {
    ssize_t n = ::pread(fd_, buffer_.get() + size_ + got, want - got,
                        static_cast<off_t>(buffer_offset_ + size_ + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      size_ += got;
      return Status::IoErrorFromErrno(
          "reading " + path_ + " at offset " + std::to_string(buffer_offset_ + size_), err);
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  size_ += got;
  if (got == 0 && size_ == 0) {
    buffer_.reset();
    capacity_ = 0;
  }
  return got;
}

RecordResult EventFileReader::Next() {
  RecordResult r = ReadRecord(std::string_view(buffer_.get(), size_).substr(cursor_), position());
  cursor_ += r.consumed;
  needed_ = r.status == RecordStatus::kIncomplete ? r.needed : 0;
  return r;
}

}  // namespace trainwatch::tfevents
