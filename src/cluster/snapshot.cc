#include "cluster/snapshot.h"

#include <algorithm>
#include <string>
#include <utility>

#include "cluster/stream_reader.h"
#include "common/json.h"
#include "common/sha256.h"
#include "common/strings.h"

namespace trainwatch::cluster {
namespace {

constexpr const char* kLatestKey = "latest";
constexpr const char* kSubjectPrefix = "tw.snapshot.";
// Messages read per fetch while downloading, how long a fetch waits, and how many empty fetches
// in a row mean that pieces are missing.
constexpr int kFetchMax = 64;
constexpr int kEmptyFetches = 3;

uint64_t PiecesOf(uint64_t size, uint64_t piece_bytes) {
  return piece_bytes == 0 ? 0 : (size + piece_bytes - 1) / piece_bytes;
}

// A file name of a snapshot: what RocksDB's checkpoint writes (no directories, no "..").
bool SafeName(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

}  // namespace

uint64_t SnapshotManifest::total_bytes() const {
  uint64_t n = 0;
  for (const SnapshotFile& f : files) n += f.size;
  return n;
}

uint64_t SnapshotManifest::pieces() const {
  uint64_t n = 0;
  for (const SnapshotFile& f : files) n += PiecesOf(f.size, piece_bytes);
  return n;
}

std::string SnapshotManifest::ToJson() const {
  nlohmann::json files_json = nlohmann::json::array();
  for (const SnapshotFile& f : files) {
    files_json.push_back({{"name", f.name}, {"size", f.size}, {"sha256", f.sha256}});
  }
  return nlohmann::json{{"format", 1},
                        {"id", id},
                        {"node", node},
                        {"stream", stream},
                        {"covered_sequence", covered_sequence},
                        {"checkpoint_lsn", checkpoint_lsn},
                        {"created_unix", created_unix},
                        {"subject", subject},
                        {"piece_bytes", piece_bytes},
                        {"files", files_json}}
      .dump();
}

Result<SnapshotManifest> SnapshotManifest::FromJson(std::string_view json) {
  TW_ASSIGN_OR_RETURN(nlohmann::json j, ParseJson(json));
  auto bad = [](const char* field) {
    return Status::InvalidArgument(std::string("snapshot manifest: bad or missing ") + field);
  };
  if (!j.is_object()) return bad("object");
  SnapshotManifest m;
  auto text = [&](const char* field, std::string* out) {
    if (!j.contains(field) || !j[field].is_string()) return false;
    *out = j[field].get<std::string>();
    return true;
  };
  auto count = [&](const char* field, uint64_t* out) {
    if (!j.contains(field) || !j[field].is_number_unsigned()) return false;
    *out = j[field].get<uint64_t>();
    return true;
  };
  if (!text("id", &m.id)) return bad("id");
  if (!text("node", &m.node)) return bad("node");
  if (!text("stream", &m.stream)) return bad("stream");
  if (!text("subject", &m.subject)) return bad("subject");
  if (!count("covered_sequence", &m.covered_sequence)) return bad("covered_sequence");
  if (!count("checkpoint_lsn", &m.checkpoint_lsn)) return bad("checkpoint_lsn");
  if (!count("piece_bytes", &m.piece_bytes) || m.piece_bytes == 0) return bad("piece_bytes");
  if (!j.contains("created_unix") || !j["created_unix"].is_number()) return bad("created_unix");
  m.created_unix = j["created_unix"].get<double>();
  if (!j.contains("files") || !j["files"].is_array()) return bad("files");
  for (const nlohmann::json& f : j["files"]) {
    SnapshotFile file;
    if (!f.is_object() || !f.contains("name") || !f["name"].is_string() || !f.contains("size") ||
        !f["size"].is_number_unsigned() || !f.contains("sha256") || !f["sha256"].is_string()) {
      return bad("files[]");
    }
    file.name = f["name"].get<std::string>();
    file.size = f["size"].get<uint64_t>();
    file.sha256 = f["sha256"].get<std::string>();
    std::string raw;
    if (!SafeName(file.name) || !ParseSha256Hex(file.sha256, &raw)) return bad("files[]");
    m.files.push_back(std::move(file));
  }
  return m;
}

Result<std::unique_ptr<SnapshotStore>> SnapshotStore::Open(JetStream& js, FileSystem& fs,
                                                           SnapshotStoreOptions options) {
  StreamSpec spec;
  spec.name = options.stream;
  spec.subjects = {kSnapshotSubjects};
  spec.replicas = options.replicas;
  TW_RETURN_IF_ERROR(js.EnsureStream(spec).WithContext("the snapshot stream"));
  TW_ASSIGN_OR_RETURN(std::unique_ptr<KeyValue> kv,
                      js.OpenKeyValue({options.bucket, options.replicas, 0}));
  return std::unique_ptr<SnapshotStore>(
      new SnapshotStore(js, fs, std::move(options), std::move(kv)));
}

Result<SnapshotManifest> SnapshotStore::Publish(const std::string& dir, SnapshotManifest manifest) {
  manifest.subject = kSubjectPrefix + manifest.id;
  manifest.piece_bytes = options_.piece_bytes;
  manifest.files.clear();
  TW_ASSIGN_OR_RETURN(std::vector<std::string> names, fs_.ListDir(dir));
  std::sort(names.begin(), names.end());
  uint64_t piece = 0;
  for (const std::string& name : names) {
    TW_ASSIGN_OR_RETURN(std::string data, fs_.ReadFile(dir + "/" + name));
    manifest.files.push_back({name, data.size(), LowerHex(Sha256(data))});
    for (uint64_t offset = 0; offset < data.size(); offset += options_.piece_bytes) {
      const std::string_view part = std::string_view(data).substr(offset, options_.piece_bytes);
      const std::string msg_id = manifest.id + ":" + std::to_string(piece++);
      Result<PublishAck> ack = js_.Publish(manifest.subject, part, msg_id);
      if (!ack.ok()) {
        (void)Purge(manifest);
        return ack.status().WithContext("publishing snapshot " + manifest.id + " (" + name + ")");
      }
    }
  }
  std::unique_ptr<SnapshotManifest> replaced;
  Status written = WriteManifest(manifest, &replaced);
  if (!written.ok()) {
    (void)Purge(manifest);
    return written;
  }
  if (replaced && replaced->subject != manifest.subject) (void)Purge(*replaced);
  return manifest;
}

Status SnapshotStore::WriteManifest(const SnapshotManifest& manifest,
                                    std::unique_ptr<SnapshotManifest>* replaced) {
  const std::string value = manifest.ToJson();
  for (;;) {
    Result<KeyValueEntry> current = kv_->Get(kLatestKey);
    if (!current.ok() && current.status().code() != StatusCode::kNotFound) {
      return current.status().WithContext("the snapshot manifest");
    }
    Result<uint64_t> written = Status::Unavailable("not written");
    if (!current.ok()) {
      written = kv_->Create(kLatestKey, value);
      replaced->reset();
    } else {
      Result<SnapshotManifest> old = SnapshotManifest::FromJson(current->value);
      if (old.ok() && old->covered_sequence >= manifest.covered_sequence) {
        return Status::AlreadyExists("snapshot " + old->id + " covers the ingest stream up to " +
                                     std::to_string(old->covered_sequence) + ", as much as " +
                                     manifest.id + " (" +
                                     std::to_string(manifest.covered_sequence) + ")");
      }
      written = kv_->Update(kLatestKey, value, current->revision);
      if (old.ok()) *replaced = std::make_unique<SnapshotManifest>(std::move(old).value());
    }
    if (written.ok()) return Status::Ok();
    // Another node wrote in between: read again and compare with what it wrote.
    if (written.status().code() != StatusCode::kAlreadyExists) {
      return written.status().WithContext("the snapshot manifest");
    }
  }
}

Result<SnapshotManifest> SnapshotStore::Latest() {
  TW_ASSIGN_OR_RETURN(KeyValueEntry entry, kv_->Get(kLatestKey));
  return SnapshotManifest::FromJson(entry.value);
}

Status SnapshotStore::Purge(const SnapshotManifest& manifest) {
  return js_.PurgeSubject(options_.stream, manifest.subject);
}

Status SnapshotStore::Download(const SnapshotManifest& manifest, const std::string& dir) {
  TW_RETURN_IF_ERROR(fs_.CreateDirs(dir));
  TW_ASSIGN_OR_RETURN(std::unique_ptr<StreamReader> reader,
                      StreamReader::Open(js_, options_.stream, manifest.subject, 0));
  std::vector<StreamMessage> buffered;
  size_t next = 0;  // in buffered
  int empty = 0;
  // The next piece, fetching more as needed.
  auto next_piece = [&]() -> Result<std::string> {
    while (next == buffered.size()) {
      TW_ASSIGN_OR_RETURN(buffered, reader->Next(kFetchMax, options_.fetch_wait_ms));
      next = 0;
      if (!buffered.empty()) {
        empty = 0;
      } else if (++empty >= kEmptyFetches) {
        return Status::Unavailable("snapshot " + manifest.id +
                                   ": pieces are missing from the stream (purged by a newer one?)");
      }
    }
    return std::move(buffered[next++].data);
  };
  for (const SnapshotFile& file : manifest.files) {
    if (!SafeName(file.name)) return Status::Corruption("snapshot file name " + file.name);
    std::string data;
    data.reserve(file.size);
    for (uint64_t n = PiecesOf(file.size, manifest.piece_bytes); n > 0; --n) {
      TW_ASSIGN_OR_RETURN(std::string piece, next_piece());
      data += piece;
    }
    if (data.size() != file.size) {
      return Status::Corruption("snapshot " + manifest.id + ": " + file.name + " has " +
                                std::to_string(data.size()) + " bytes, the manifest says " +
                                std::to_string(file.size));
    }
    const std::string sha = LowerHex(Sha256(data));
    if (sha != file.sha256) {
      return Status::Corruption("snapshot " + manifest.id + ": " + file.name +
                                " does not match its SHA-256 (got " + sha + ", the manifest says " +
                                file.sha256 + ")");
    }
    const std::string path = dir + "/" + file.name;
    TW_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> out, fs_.OpenAppendable(path));
    TW_RETURN_IF_ERROR(out->Append(data));
    TW_RETURN_IF_ERROR(out->Sync());
    TW_RETURN_IF_ERROR(out->Close());
  }
  return fs_.SyncDir(dir);
}

}  // namespace trainwatch::cluster
