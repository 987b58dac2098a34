#include "cluster/stream_reader.h"

#include "cluster/nats_status.h"

namespace trainwatch::cluster {
namespace {

struct MetaDataDeleter {
  void operator()(jsMsgMetaData* m) const { jsMsgMetaData_Destroy(m); }
};
struct ConsumerInfoDeleter {
  void operator()(jsConsumerInfo* info) const { jsConsumerInfo_Destroy(info); }
};

// How long the server keeps a consumer nobody fetches from (a reader whose node died).
constexpr int64_t kInactiveThresholdNanos = 30LL * 1000 * 1000 * 1000;

}  // namespace

Result<std::unique_ptr<StreamReader>> StreamReader::Open(JetStream& js, std::string stream,
                                                         std::string subject,
                                                         uint64_t after_sequence,
                                                         StreamReaderOptions options) {
  std::unique_ptr<StreamReader> reader(new StreamReader(js, std::move(stream), std::move(subject),
                                                        after_sequence, std::move(options)));
  TW_RETURN_IF_ERROR(reader->Subscribe());
  return reader;
}

StreamReader::~StreamReader() { Unsubscribe(); }

Status StreamReader::EnsureDurable() {
  const char* name = options_.durable.c_str();
  jsErrCode error = static_cast<jsErrCode>(0);
  jsConsumerInfo* raw = nullptr;
  natsStatus s = js_GetConsumerInfo(&raw, js_.js_, stream_.c_str(), name, nullptr, &error);
  std::unique_ptr<jsConsumerInfo, ConsumerInfoDeleter> info(raw);
  if (s == NATS_OK) {
    // What it delivered and was acknowledged lies at or before our position: binding to it
    // redelivers the rest (what we already hold is skipped in Next).
    if (info->AckFloor.Stream <= last_sequence_) return Status::Ok();
    // Past our position: our store lost what it acknowledged. Start it again where we are.
    s = js_DeleteConsumer(js_.js_, stream_.c_str(), name, nullptr, &error);
    if (s != NATS_OK && s != NATS_NOT_FOUND) {
      return FromNats(s, "delete consumer " + options_.durable, error);
    }
  } else if (s != NATS_NOT_FOUND) {
    return FromNats(s, "consumer " + options_.durable + " of " + stream_, error);
  }
  jsConsumerConfig config;
  jsConsumerConfig_Init(&config);
  config.Durable = name;
  config.FilterSubject = subject_.c_str();
  config.DeliverPolicy = js_DeliverByStartSequence;
  config.OptStartSeq = last_sequence_ + 1;
  config.AckPolicy = js_AckAll;
  config.Replicas = options_.replicas;
  config.InactiveThreshold = options_.durable_inactive_seconds * 1000LL * 1000 * 1000;
  raw = nullptr;
  s = js_AddConsumer(&raw, js_.js_, stream_.c_str(), &config, nullptr, &error);
  info.reset(raw);
  created_ = s == NATS_OK;
  return FromNats(s, "create consumer " + options_.durable + " of " + stream_, error);
}

Status StreamReader::Subscribe() {
  jsSubOptions options;
  jsSubOptions_Init(&options);
  options.Stream = stream_.c_str();
  created_ = options_.durable.empty();  // an ephemeral consumer is new at every subscription
  if (!options_.durable.empty()) {
    TW_RETURN_IF_ERROR(EnsureDurable());
    options.Consumer = options_.durable.c_str();  // bind: the subscription neither creates it
                                                  // nor deletes it when it ends
  } else {
    options.Config.DeliverPolicy = js_DeliverByStartSequence;
    options.Config.OptStartSeq = last_sequence_ + 1;
    // Acknowledging the last message of a fetch acknowledges the ones before it: one ack per
    // fetch. Nothing is redelivered out of order; the position is ours anyway.
    options.Config.AckPolicy = js_AckAll;
    options.Config.InactiveThreshold = kInactiveThresholdNanos;
  }
  jsErrCode error = static_cast<jsErrCode>(0);
  const char* durable = options_.durable.empty() ? nullptr : options_.durable.c_str();
  natsStatus s = js_PullSubscribe(&subscription_, js_.js_, subject_.c_str(), durable, nullptr,
                                  &options, &error);
  if (s != NATS_OK) {
    subscription_ = nullptr;
    return FromNats(s, "read " + subject_ + " of " + stream_, error);
  }
  return Status::Ok();
}

void StreamReader::Unsubscribe() {
  if (subscription_ == nullptr) return;
  (void)natsSubscription_Unsubscribe(subscription_);  // best effort: the server drops it anyway
  natsSubscription_Destroy(subscription_);
  subscription_ = nullptr;
}

void StreamReader::DropConsumer() {
  Unsubscribe();
  if (options_.durable.empty()) return;
  jsErrCode error = static_cast<jsErrCode>(0);
  (void)js_DeleteConsumer(js_.js_, stream_.c_str(), options_.durable.c_str(), nullptr, &error);
}

Result<std::vector<StreamMessage>> StreamReader::Next(int max, int64_t wait_ms) {
  if (subscription_ == nullptr) TW_RETURN_IF_ERROR(Subscribe());
  natsMsgList list{};
  jsErrCode error = static_cast<jsErrCode>(0);
  natsStatus s = natsSubscription_Fetch(&list, subscription_, max, wait_ms, &error);
  std::vector<StreamMessage> out;
  if (s == NATS_TIMEOUT) return out;  // nothing new
  if (s != NATS_OK) {
    natsMsgList_Destroy(&list);
    Unsubscribe();  // the next call starts over at last_sequence_ + 1
    return FromNats(s, "read " + subject_ + " of " + stream_, error);
  }
  for (int i = 0; i < list.Count; ++i) {
    natsMsg* msg = list.Msgs[i];
    jsMsgMetaData* raw = nullptr;
    if (natsStatus m = natsMsg_GetMetaData(&raw, msg); m != NATS_OK) {
      natsMsgList_Destroy(&list);
      Unsubscribe();
      return FromNats(m, "sequence of a message of " + stream_);  // not a JetStream message
    }
    std::unique_ptr<jsMsgMetaData, MetaDataDeleter> meta(raw);
    // A consumer started again at the same position may hand over what an earlier one did.
    if (meta->Sequence.Stream <= last_sequence_) continue;
    if (options_.contiguous && !created_ && meta->Sequence.Stream > last_sequence_ + 1) {
      const uint64_t first = meta->Sequence.Stream;
      natsMsgList_Destroy(&list);
      DropConsumer();  // unacknowledged: the next call creates it again at the position
      return Status::Unavailable("messages " + std::to_string(last_sequence_ + 1) + " to " +
                                 std::to_string(first - 1) + " of " + stream_ +
                                 " were delivered elsewhere (lost in flight); reading them again");
    }
    created_ = false;
    StreamMessage m;
    m.sequence = meta->Sequence.Stream;
    m.subject = natsMsg_GetSubject(msg);
    const char* id = nullptr;
    if (natsMsgHeader_Get(msg, "Nats-Msg-Id", &id) == NATS_OK && id != nullptr) m.msg_id = id;
    m.data.assign(natsMsg_GetData(msg), static_cast<size_t>(natsMsg_GetDataLength(msg)));
    last_sequence_ = m.sequence;
    out.push_back(std::move(m));
  }
  if (list.Count > 0) (void)natsMsg_Ack(list.Msgs[list.Count - 1], nullptr);
  natsMsgList_Destroy(&list);
  return out;
}

}  // namespace trainwatch::cluster
