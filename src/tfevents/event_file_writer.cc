#include "tfevents/event_file_writer.h"

#include <cmath>

#include "tfevents/event_encoder.h"
#include "tfevents/record_writer.h"

namespace trainwatch::tfevents {
namespace {
constexpr size_t kFlushBytes = 1 << 20;
}  // namespace

std::string EventFileName(double start_time, std::string_view host) {
  const long long seconds =
      std::isfinite(start_time) && start_time > 0 ? static_cast<long long>(start_time) : 0;
  std::string name = "events.out.tfevents." + std::to_string(seconds) + ".";
  for (char c : host) name += (c == '/' || c == '\0') ? '_' : c;
  return name + ".trainwatch";
}

Result<std::unique_ptr<EventFileWriter>> EventFileWriter::Create(FileSystem& fs,
                                                                 const std::string& dir,
                                                                 double start_time,
                                                                 std::string_view host) {
  TW_RETURN_IF_ERROR(fs.CreateDirs(dir));
  const std::string path = dir + "/" + EventFileName(start_time, host);
  if (fs.Exists(path)) return Status::AlreadyExists(path + " exists");
  TW_ASSIGN_OR_RETURN(auto file, fs.OpenAppendable(path));
  std::unique_ptr<EventFileWriter> writer(new EventFileWriter(path, std::move(file)));
  TW_RETURN_IF_ERROR(writer->Write(EncodeFileVersionEvent(start_time)));
  return writer;
}

Status EventFileWriter::Write(std::string_view event) {
  if (closed_) return Status::Internal(path_ + ": write after close");
  const size_t before = buffer_.size();
  AppendRecord(event, &buffer_);
  bytes_ += buffer_.size() - before;
  if (buffer_.size() >= kFlushBytes) return FlushBuffer();
  return Status::Ok();
}

Status EventFileWriter::FlushBuffer() {
  if (buffer_.empty()) return Status::Ok();
  Status s = file_->Append(buffer_);
  buffer_.clear();
  return s.WithContext("writing " + path_);
}

Status EventFileWriter::Close() {
  if (closed_) return Status::Ok();
  closed_ = true;
  TW_RETURN_IF_ERROR(FlushBuffer());
  TW_RETURN_IF_ERROR(file_->Sync().WithContext("syncing " + path_));
  return file_->Close().WithContext("closing " + path_);
}

}  // namespace trainwatch::tfevents
