#include "influx/line_outbox.h"

#include <charconv>
#include <cstdio>
#include <vector>

namespace trainwatch::influx {
namespace {

constexpr std::string_view kSuffix = ".lp";

// "0000000000000012.lp" -> 12; false for other names.
bool ParseSegmentName(std::string_view name, uint64_t* seq) {
  if (name.size() != 16 + kSuffix.size() || !name.ends_with(kSuffix)) return false;
  auto [ptr, ec] = std::from_chars(name.data(), name.data() + 16, *seq);
  return ec == std::errc() && ptr == name.data() + 16;
}

bool ParseCursor(std::string_view text, LineOutbox::Position* p) {
  size_t space = text.find(' ');
  if (space == std::string_view::npos || text.empty() || text.back() != '\n') return false;
  auto [a, ea] = std::from_chars(text.data(), text.data() + space, p->segment);
  auto [b, eb] = std::from_chars(text.data() + space + 1, text.data() + text.size() - 1, p->offset);
  return ea == std::errc() && eb == std::errc() && a == text.data() + space &&
         b == text.data() + text.size() - 1;
}

}  // namespace

std::string LineOutbox::SegmentPath(uint64_t seq) const {
  char name[32];
  std::snprintf(name, sizeof name, "%016llu.lp", static_cast<unsigned long long>(seq));
  return dir_ + "/" + name;
}

Result<std::unique_ptr<LineOutbox>> LineOutbox::Open(FileSystem& fs, std::string dir,
                                                     LineOutboxOptions options) {
  TW_RETURN_IF_ERROR(fs.CreateDirs(dir));
  std::unique_ptr<LineOutbox> outbox(new LineOutbox(fs, std::move(dir), options));
  TW_RETURN_IF_ERROR(outbox->Recover().WithContext("opening the mirror outbox " + outbox->dir_));
  return outbox;
}

Status LineOutbox::Recover() {
  MutexLock lock(mu_);
  TW_ASSIGN_OR_RETURN(std::vector<std::string> names, fs_.ListDir(dir_));
  std::vector<uint64_t> segments;
  for (const std::string& name : names) {
    uint64_t seq;
    if (ParseSegmentName(name, &seq)) segments.push_back(seq);
  }
  if (fs_.Exists(dir_ + "/cursor")) {
    TW_ASSIGN_OR_RETURN(std::string text, fs_.ReadFile(dir_ + "/cursor"));
    if (!ParseCursor(text, &cursor_))
      return Status::Corruption("bad cursor file " + dir_ + "/cursor");
  } else {
    cursor_ = {segments.empty() ? 1 : segments.front(), 0};
  }
  backlog_ = 0;
  for (uint64_t seq : segments) {
    const std::string path = SegmentPath(seq);
    if (seq < cursor_.segment) {  // delivered; its removal did not happen before a crash
      TW_RETURN_IF_ERROR(fs_.RemoveFile(path));
      continue;
    }
    TW_ASSIGN_OR_RETURN(std::string content, fs_.ReadFile(path));
    size_t whole = content.rfind('\n');
    whole = whole == std::string::npos ? 0 : whole + 1;
    if (whole < content.size()) TW_RETURN_IF_ERROR(fs_.Truncate(path, whole));  // a torn append
    backlog_ += whole - (seq == cursor_.segment ? std::min<uint64_t>(cursor_.offset, whole) : 0);
  }
  head_seq_ = segments.empty() ? cursor_.segment : std::max(segments.back(), cursor_.segment);
  return OpenHead(head_seq_);
}

Status LineOutbox::OpenHead(uint64_t seq) {
  if (head_) TW_RETURN_IF_ERROR(head_->Close());
  const bool created = !fs_.Exists(SegmentPath(seq));
  TW_ASSIGN_OR_RETURN(head_, fs_.OpenAppendable(SegmentPath(seq)));
  head_seq_ = seq;
  if (created) TW_RETURN_IF_ERROR(fs_.SyncDir(dir_));
  return Status::Ok();
}

Status LineOutbox::Append(std::string_view lines) {
  if (lines.empty()) return Status::Ok();
  MutexLock lock(mu_);
  if (backlog_ + lines.size() > options_.max_bytes) {
    return Status::ResourceExhausted("mirror outbox full (" + std::to_string(backlog_) +
                                     " bytes waiting, limit " + std::to_string(options_.max_bytes) +
                                     ")");
  }
  if (head_->Size() >= options_.segment_bytes) TW_RETURN_IF_ERROR(OpenHead(head_seq_ + 1));
  TW_RETURN_IF_ERROR(head_->Append(lines));
  TW_RETURN_IF_ERROR(head_->Sync());
  backlog_ += lines.size();
  return Status::Ok();
}

Result<LineOutbox::Chunk> LineOutbox::Peek(size_t max_bytes) {
  Position at;
  uint64_t head_seq;
  {
    MutexLock lock(mu_);
    at = cursor_;
    head_seq = head_seq_;
  }
  Chunk chunk;
  chunk.end = at;
  while (chunk.lines.size() < max_bytes) {
    if (cached_seq_ != at.segment || cached_.size() <= at.offset) {
      // Segments only grow, and only the head: re-read when what is cached has been used up.
      const std::string path = SegmentPath(at.segment);
      if (!fs_.Exists(path)) break;
      TW_ASSIGN_OR_RETURN(cached_, fs_.ReadFile(path));
      size_t whole = cached_.rfind('\n');
      cached_.resize(whole == std::string::npos ? 0 : whole + 1);  // a line being appended
      cached_seq_ = at.segment;
    }
    if (at.offset >= cached_.size()) {
      if (at.segment >= head_seq) break;  // nothing more yet
      at = {at.segment + 1, 0};           // a closed segment read to its end
      chunk.end = at;
      continue;
    }
    size_t end = at.offset;
    while (end < cached_.size() &&
           (chunk.lines.size() + (end - at.offset) < max_bytes || end == at.offset)) {
      size_t nl = cached_.find('\n', end);
      end = nl + 1;
      ++chunk.count;
    }
    chunk.lines.append(cached_, at.offset, end - at.offset);
    at.offset = end;
    chunk.end = at;
  }
  return chunk;
}

Status LineOutbox::Ack(Position end) {
  MutexLock lock(mu_);
  if (end == cursor_) return Status::Ok();
  TW_RETURN_IF_ERROR(
      WriteFileAtomic(fs_, dir_ + "/cursor",
                      std::to_string(end.segment) + " " + std::to_string(end.offset) + "\n"));
  // The backlog shrinks by the bytes between the two positions.
  uint64_t delivered = 0;
  for (uint64_t seq = cursor_.segment; seq <= end.segment; ++seq) {
    uint64_t from = seq == cursor_.segment ? cursor_.offset : 0;
    uint64_t to = end.offset;
    if (seq < end.segment) {
      Result<uint64_t> size = fs_.FileSize(SegmentPath(seq));
      to = size.ok() ? *size : from;
    }
    delivered += to > from ? to - from : 0;
  }
  for (uint64_t seq = cursor_.segment; seq < end.segment; ++seq) {
    if (fs_.Exists(SegmentPath(seq))) TW_RETURN_IF_ERROR(fs_.RemoveFile(SegmentPath(seq)));
  }
  backlog_ -= std::min(backlog_, delivered);
  cursor_ = end;
  return Status::Ok();
}

uint64_t LineOutbox::backlog_bytes() const {
  MutexLock lock(mu_);
  return backlog_;
}

}  // namespace trainwatch::influx
