#include "cluster/jetstream.h"

#include <string>
#include <utility>

#include "cluster/nats_status.h"

namespace trainwatch::cluster {
namespace {

// libnats owns what its *_Destroy functions free; these keep that on every path.
struct OptionsDeleter {
  void operator()(natsOptions* o) const { natsOptions_Destroy(o); }
};
struct StreamInfoDeleter {
  void operator()(jsStreamInfo* si) const { jsStreamInfo_Destroy(si); }
};
struct PubAckDeleter {
  void operator()(jsPubAck* ack) const { jsPubAck_Destroy(ack); }
};
using StreamInfoPtr = std::unique_ptr<jsStreamInfo, StreamInfoDeleter>;

std::vector<const char*> CStrings(const std::vector<std::string>& strings) {
  std::vector<const char*> out;
  out.reserve(strings.size());
  for (const std::string& s : strings) out.push_back(s.c_str());
  return out;
}

// Why an existing stream cannot serve as `spec` ("" when it can).
std::string Difference(const jsStreamConfig& have, const StreamSpec& spec) {
  if (have.Replicas != spec.replicas) {
    return "has " + std::to_string(have.Replicas) + " replicas, not " +
           std::to_string(spec.replicas);
  }
  std::vector<std::string> subjects(have.Subjects, have.Subjects + have.SubjectsLen);
  if (subjects != spec.subjects) return "has other subjects";
  return "";
}

}  // namespace

Result<std::unique_ptr<JetStream>> JetStream::Connect(const JetStreamOptions& options) {
  if (options.servers.empty()) return Status::InvalidArgument("no NATS server given");
  natsOptions* raw = nullptr;
  if (natsStatus s = natsOptions_Create(&raw); s != NATS_OK) return FromNats(s, "NATS options");
  std::unique_ptr<natsOptions, OptionsDeleter> opts(raw);
  std::vector<const char*> servers = CStrings(options.servers);
  natsStatus s =
      natsOptions_SetServers(opts.get(), servers.data(), static_cast<int>(servers.size()));
  if (s == NATS_OK) s = natsOptions_SetName(opts.get(), options.connection_name.c_str());
  if (s == NATS_OK) s = natsOptions_SetTimeout(opts.get(), options.connect_timeout_ms);
  if (s == NATS_OK) s = natsOptions_SetMaxReconnect(opts.get(), -1);  // never give up
  if (s == NATS_OK) s = natsOptions_SetReconnectWait(opts.get(), 250);
  if (s != NATS_OK) return FromNats(s, "NATS options");
  natsConnection* connection = nullptr;
  if (s = natsConnection_Connect(&connection, opts.get()); s != NATS_OK) {
    return FromNats(s, "connect to NATS (" + options.servers.front() +
                           (servers.size() > 1 ? ", ..." : "") + ")");
  }
  jsOptions js_options;
  jsOptions_Init(&js_options);
  js_options.Wait = options.request_timeout_ms;
  jsCtx* js = nullptr;
  if (s = natsConnection_JetStream(&js, connection, &js_options); s != NATS_OK) {
    natsConnection_Destroy(connection);
    return FromNats(s, "JetStream context");
  }
  return std::unique_ptr<JetStream>(new JetStream(connection, js));
}

JetStream::~JetStream() {
  jsCtx_Destroy(js_);
  natsConnection_Destroy(connection_);
}

Status JetStream::EnsureStream(const StreamSpec& spec, bool* max_age_changed) {
  if (max_age_changed != nullptr) *max_age_changed = false;
  const int64_t max_age_ns = spec.max_age_ms * 1000 * 1000;
  int64_t duplicates_ns = spec.duplicate_window_ms * 1000 * 1000;
  if (max_age_ns > 0 && duplicates_ns > max_age_ns) duplicates_ns = max_age_ns;
  jsErrCode error = static_cast<jsErrCode>(0);
  jsStreamInfo* raw = nullptr;
  natsStatus s = js_GetStreamInfo(&raw, js_, spec.name.c_str(), nullptr, &error);
  StreamInfoPtr info(raw);
  if (s == NATS_OK) {
    jsStreamConfig& have = info->Config[0];
    if (std::string why = Difference(have, spec); !why.empty()) {
      return Status::InvalidArgument("stream " + spec.name + " exists but " + why);
    }
    if (have.MaxAge == max_age_ns) return Status::Ok();
    // An update of the existing stream (never a delete and create, above): the config as the
    // server has it with another MaxAge (and a duplicate window that fits in it).
    have.MaxAge = max_age_ns;
    if (max_age_ns > 0 && have.Duplicates > max_age_ns) have.Duplicates = max_age_ns;
    jsStreamInfo* updated = nullptr;
    s = js_UpdateStream(&updated, js_, &have, nullptr, &error);
    jsStreamInfo_Destroy(updated);
    if (s == NATS_OK && max_age_changed != nullptr) *max_age_changed = true;
    return FromNats(s, "update max_age of stream " + spec.name, error);
  }
  if (s != NATS_NOT_FOUND) return FromNats(s, "look up stream " + spec.name, error);
  jsStreamConfig config;
  jsStreamConfig_Init(&config);
  std::vector<const char*> subjects = CStrings(spec.subjects);
  config.Name = spec.name.c_str();
  config.Subjects = subjects.data();
  config.SubjectsLen = static_cast<int>(subjects.size());
  config.Storage = js_FileStorage;
  config.Replicas = spec.replicas;
  config.Duplicates = duplicates_ns;
  config.MaxAge = max_age_ns;
  raw = nullptr;
  s = js_AddStream(&raw, js_, &config, nullptr, &error);
  info.reset(raw);
  return FromNats(s, "create stream " + spec.name, error);
}

Status JetStream::PurgeSubject(std::string_view stream, std::string_view subject) {
  const std::string name(stream);
  const std::string filter(subject);
  jsOptions options;
  jsOptions_Init(&options);
  options.Stream.Purge.Subject = filter.c_str();
  jsErrCode error = static_cast<jsErrCode>(0);
  return FromNats(js_PurgeStream(js_, name.c_str(), &options, &error),
                  "purge " + filter + " of " + name, error);
}

Status JetStream::PurgeBefore(std::string_view stream, uint64_t sequence) {
  const std::string name(stream);
  jsOptions options;
  jsOptions_Init(&options);
  options.Stream.Purge.Sequence = sequence;
  jsErrCode error = static_cast<jsErrCode>(0);
  return FromNats(js_PurgeStream(js_, name.c_str(), &options, &error),
                  "purge " + name + " below " + std::to_string(sequence), error);
}

Result<StreamState> JetStream::GetStreamState(std::string_view stream) {
  jsErrCode error = static_cast<jsErrCode>(0);
  jsStreamInfo* raw = nullptr;
  const std::string name(stream);
  natsStatus s = js_GetStreamInfo(&raw, js_, name.c_str(), nullptr, &error);
  StreamInfoPtr info(raw);
  if (s != NATS_OK) return FromNats(s, "stream info " + name, error);
  StreamState state;
  state.messages = info->State.Msgs;
  state.first_sequence = info->State.FirstSeq;
  state.last_sequence = info->State.LastSeq;
  if (info->Cluster != nullptr && info->Cluster->Leader != nullptr)
    state.leader = info->Cluster->Leader;
  return state;
}

Result<PublishAck> JetStream::Publish(std::string_view subject, std::string_view data,
                                      std::string_view msg_id) {
  const std::string subject_str(subject);
  const std::string id(msg_id);
  jsPubOptions options;
  jsPubOptions_Init(&options);
  options.MsgId = id.empty() ? nullptr : id.c_str();
  jsErrCode error = static_cast<jsErrCode>(0);
  jsPubAck* raw = nullptr;
  natsStatus s = js_Publish(&raw, js_, subject_str.c_str(), data.data(),
                            static_cast<int>(data.size()), &options, &error);
  std::unique_ptr<jsPubAck, PubAckDeleter> ack(raw);
  if (s != NATS_OK) return FromNats(s, "publish to " + subject_str, error);
  return PublishAck{ack->Sequence, ack->Duplicate};
}

Result<std::unique_ptr<KeyValue>> JetStream::OpenKeyValue(const KeyValueSpec& spec) {
  kvStore* kv = nullptr;
  natsStatus s = js_KeyValue(&kv, js_, spec.bucket.c_str());
  if (s == NATS_NOT_FOUND) {
    kvConfig config;
    kvConfig_Init(&config);
    config.Bucket = spec.bucket.c_str();
    config.History = 1;
    config.Replicas = spec.replicas;
    config.StorageType = js_FileStorage;
    config.TTL = spec.ttl_ms * 1000 * 1000;
    s = js_CreateKeyValue(&kv, js_, &config);
  }
  if (s != NATS_OK) return FromNats(s, "key-value bucket " + spec.bucket);
  return std::make_unique<KeyValue>(kv, js_);
}

std::string JetStream::ConnectedUrl() const {
  char url[256] = {0};
  if (natsConnection_GetConnectedUrl(connection_, url, sizeof url) != NATS_OK) return "";
  return url;
}

size_t JetStream::MaxPayload() const {
  const int64_t max = natsConnection_GetMaxPayload(connection_);
  return max > 0 ? static_cast<size_t>(max) : size_t{1} << 20;
}

}  // namespace trainwatch::cluster
