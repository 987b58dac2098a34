// Writes an event file TensorBoard reads: DIR/events.out.tfevents.<unix seconds>.<host>.trainwatch,
// starting with the file_version event, every event framed with masked CRCs.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/file_system.h"
#include "common/status.h"

namespace trainwatch::tfevents {

// Not thread-safe.
class EventFileWriter {
 public:
  // Creates the file (and DIR) and writes the file_version event with `start_time` as its wall
  // time (TensorBoard takes a run's start time from it). AlreadyExists if the file name is taken.
  static Result<std::unique_ptr<EventFileWriter>> Create(FileSystem& fs, const std::string& dir,
                                                         double start_time, std::string_view host);
  // Frames and appends one serialized Event (buffered; written in large pieces).
  Status Write(std::string_view event);
  // Writes what is buffered, syncs and closes. Idempotent.
  Status Close();

  const std::string& path() const { return path_; }
  uint64_t bytes_written() const { return bytes_; }

 private:
  EventFileWriter(std::string path, std::unique_ptr<WritableFile> file)
      : path_(std::move(path)), file_(std::move(file)) {}
  Status FlushBuffer();

  std::string path_;
  std::unique_ptr<WritableFile> file_;
  std::string buffer_;
  uint64_t bytes_ = 0;
  bool closed_ = false;
};

// "events.out.tfevents.<unix seconds>.<host>.trainwatch".
std::string EventFileName(double start_time, std::string_view host);

}  // namespace trainwatch::tfevents
