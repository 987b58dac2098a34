#include "alerting/alert_store.h"

#include <cstring>

#include "common/crc32c.h"
#include "common/json.h"

namespace trainwatch::alerting {
namespace {

constexpr const char* kLogName = "alerts.log";
constexpr size_t kHeader = 8;  // fixed32 length, fixed32 crc32c of the payload
constexpr uint32_t kMaxRecord = 16u << 20;

void PutFixed32(std::string* out, uint32_t v) {
  char buf[4];
  std::memcpy(buf, &v, 4);  // little-endian hosts only (as the WAL)
  out->append(buf, 4);
}
uint32_t GetFixed32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

std::string Frame(const nlohmann::json& entry) {
  std::string payload = entry.dump();
  std::string out;
  out.reserve(kHeader + payload.size());
  PutFixed32(&out, static_cast<uint32_t>(payload.size()));
  PutFixed32(&out, crc32c::Value(payload));
  out += payload;
  return out;
}

}  // namespace

Result<std::unique_ptr<AlertStore>> AlertStore::Open(FileSystem& fs, const std::string& dir) {
  std::unique_ptr<AlertStore> store(new AlertStore(fs, dir));
  TW_RETURN_IF_ERROR(fs.CreateDirs(dir).WithContext("creating " + dir));
  TW_RETURN_IF_ERROR(store->Load().WithContext("reading " + dir + "/" + kLogName));
  return store;
}

void AlertStore::Apply(const nlohmann::json& entry) {
  ++entries_;
  if (auto it = entry.find("alert"); it != entry.end()) {
    auto alert = AlertRecord::FromJson(*it);
    if (!alert.ok())
      return;  // written by us and checksummed: only a newer, unknown shape lands here
    next_alert_id_ = std::max(next_alert_id_, alert->id + 1);
    alerts_[alert->id] = std::move(*alert);
  } else if (auto sit = entry.find("silence"); sit != entry.end()) {
    auto silence = Silence::FromJson(*sit);
    if (!silence.ok()) return;
    next_silence_id_ = std::max(next_silence_id_, silence->id + 1);
    silences_[silence->id] = std::move(*silence);
  }
}

Status AlertStore::Load() {
  const std::string path = dir_ + "/" + kLogName;
  uint64_t valid = 0;
  const bool existed = fs_.Exists(path);
  if (existed) {
    TW_ASSIGN_OR_RETURN(std::string data, fs_.ReadFile(path));
    size_t pos = 0;
    while (data.size() - pos >= kHeader) {
      uint32_t length = GetFixed32(data.data() + pos);
      uint32_t crc = GetFixed32(data.data() + pos + 4);
      if (length > kMaxRecord || data.size() - pos - kHeader < length) break;
      std::string_view payload(data.data() + pos + kHeader, length);
      if (crc32c::Value(payload) != crc) break;
      Result<nlohmann::json> entry = ParseJson(payload);
      if (!entry.ok()) break;
      Apply(*entry);
      pos += kHeader + length;
    }
    valid = pos;
    dropped_tail_bytes_ = data.size() - pos;
    if (dropped_tail_bytes_ > 0) TW_RETURN_IF_ERROR(fs_.Truncate(path, valid));
  }
  if (entries_ > 2 * (alerts_.size() + silences_.size()) + 64) return Rewrite();
  TW_ASSIGN_OR_RETURN(log_, fs_.OpenAppendable(path));
  if (!existed)
    TW_RETURN_IF_ERROR(fs_.SyncDir(dir_));  // the new file's name must survive a crash too
  return Status::Ok();
}

Status AlertStore::Rewrite() {
  std::string contents;
  for (const auto& [id, a] : alerts_) contents += Frame(nlohmann::json{{"alert", a.ToJson()}});
  for (const auto& [id, s] : silences_) contents += Frame(nlohmann::json{{"silence", s.ToJson()}});
  const std::string path = dir_ + "/" + kLogName;
  log_.reset();
  TW_RETURN_IF_ERROR(WriteFileAtomic(fs_, path, contents));
  entries_ = alerts_.size() + silences_.size();
  TW_ASSIGN_OR_RETURN(log_, fs_.OpenAppendable(path));
  return Status::Ok();
}

Status AlertStore::Append(const nlohmann::json& entry) {
  TW_RETURN_IF_ERROR(CutFailedTail());
  const uint64_t before = log_->Size();
  Status s = log_->Append(Frame(entry));
  if (s.ok()) s = log_->Sync();
  if (!s.ok()) {
    // A full disk may have taken part of the record: a later record written after those bytes
    // would sit behind a torn one, and Load drops everything from a torn record on. Cut it first.
    failed_tail_from_ = before;
    (void)CutFailedTail();
    return s;
  }
  ++entries_;
  return Status::Ok();
}

Status AlertStore::CutFailedTail() {
  if (!failed_tail_from_) return Status::Ok();
  const std::string path = dir_ + "/" + kLogName;
  (void)log_->Close();
  TW_RETURN_IF_ERROR(fs_.Truncate(path, *failed_tail_from_).WithContext("cutting a failed write"));
  TW_ASSIGN_OR_RETURN(log_, fs_.OpenAppendable(path));
  failed_tail_from_.reset();
  return Status::Ok();
}

Status AlertStore::Put(AlertRecord* alert) {
  if (alert->id == 0) alert->id = next_alert_id_++;
  TW_RETURN_IF_ERROR(
      Append(nlohmann::json{{"alert", alert->ToJson()}}).WithContext("saving alert"));
  alerts_[alert->id] = *alert;
  return Status::Ok();
}

Status AlertStore::Put(Silence* silence) {
  if (silence->id == 0) silence->id = next_silence_id_++;
  TW_RETURN_IF_ERROR(
      Append(nlohmann::json{{"silence", silence->ToJson()}}).WithContext("saving silence"));
  silences_[silence->id] = *silence;
  return Status::Ok();
}

}  // namespace trainwatch::alerting
