// AlertStore: alerts and silences on disk, so that a restart loses none. An append-only log of
// whole records (the latest version of an id wins), synced on every change and compacted when it
// opens (docs/format/alerts.md). Alerts are rare events: one fdatasync per change is cheap enough.
//
// Thread-safety: none; the AlertManager serialises every call.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "alerting/alert_record.h"
#include "common/file_system.h"
#include "common/status.h"

namespace trainwatch::alerting {

class AlertStore {
 public:
  // Reads `dir`/alerts.log (creating the directory), dropping a torn or corrupt tail, and rewrites
  // it without superseded versions when they take more than half of it. `fs` must outlive the
  // store.
  static Result<std::unique_ptr<AlertStore>> Open(FileSystem& fs, const std::string& dir);
  AlertStore(const AlertStore&) = delete;
  AlertStore& operator=(const AlertStore&) = delete;

  // Durable when OK. An alert or silence with a new id gets the next id first (written back).
  Status Put(AlertRecord* alert);
  Status Put(Silence* silence);

  const std::map<uint64_t, AlertRecord>& alerts() const { return alerts_; }
  const std::map<uint64_t, Silence>& silences() const { return silences_; }
  // Bytes dropped from the tail when it was opened (a torn write or corruption).
  uint64_t dropped_tail_bytes() const { return dropped_tail_bytes_; }

 private:
  AlertStore(FileSystem& fs, std::string dir) : fs_(fs), dir_(std::move(dir)) {}
  Status Load();
  Status Rewrite();
  Status Append(const nlohmann::json& entry);
  // After a failed append: truncates the log back to where that append began and reopens it.
  Status CutFailedTail();
  void Apply(const nlohmann::json& entry);

  FileSystem& fs_;
  const std::string dir_;
  std::unique_ptr<WritableFile> log_;
  std::optional<uint64_t> failed_tail_from_;  // set while a failed append's bytes are not cut yet
  std::map<uint64_t, AlertRecord> alerts_;
  std::map<uint64_t, Silence> silences_;
  uint64_t next_alert_id_ = 1;
  uint64_t next_silence_id_ = 1;
  uint64_t entries_ = 0;  // records in the log, superseded ones included
  uint64_t dropped_tail_bytes_ = 0;
};

}  // namespace trainwatch::alerting
